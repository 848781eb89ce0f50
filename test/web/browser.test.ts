// The browser harness itself (test/support/browser.ts): Chromium starts offline, the page's console
// and errors reach this file's log, the Content-Security-Policy is enforced, screenshots are saved.
//   npx vitest run test/web/browser.test.ts
import * as Fs from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { useBrowser } from "../support/browser.ts"
import { logFileFor } from "../support/logs.ts"
import { serveVerifyPage, type StaticServer } from "./support.ts"

const browser = useBrowser()
let server: StaticServer

const page = `<!doctype html><html><head><title>harness</title><script src="/harness.js"></script>
<script>console.log("inline script ran")</script></head><body><p id="p">harness page</p></body></html>`
const script = `console.log("harness says", 6 * 7); setTimeout(() => { throw new Error("harness boom") }, 0)`

beforeAll(async () => {
  server = await serveVerifyPage({
    connectSrc: [],
    extra: {
      "/harness": { body: page, contentType: "text/html; charset=utf-8" },
      "/harness.js": { body: script, contentType: "text/javascript" }
    }
  })
})
afterAll(async () => {
  await server?.close()
})

describe("browser harness", () => {
  it("routes console output and page errors to the log, enforces the CSP, saves screenshots", async () => {
    const kit = browser()
    const p = await kit.newPage({ width: 360, height: 640 }, "harness")
    const boom = p.waitForEvent("pageerror")
    await p.goto(`${server.origin}/harness`)
    expect(await p.locator("#p").textContent()).toBe("harness page")
    await boom
    const errors = kit.errors().join("\n")
    expect(errors).toContain("harness boom")
    // The inline script was refused by `script-src 'self'` (a console error), not run.
    expect(errors).toMatch(/Executing inline script violates the following Content Security Policy directive 'script-src 'self''/)
    const log = Fs.readFileSync(logFileFor(import.meta.filename), "utf8")
    expect(log).toContain("[browser harness console.log] harness says 42")
    expect(log).not.toContain("inline script ran")
    const shot = await kit.screenshot(p, "harness")
    expect(Fs.statSync(shot).size).toBeGreaterThan(1000)
    await p.context().close()
  })
})
