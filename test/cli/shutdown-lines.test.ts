/**
 * Issue 24, as a new user saw it: `anchord start` exited on SIGTERM without a word, and Ctrl-C on
 * `npm start` (`anchord dev`) logged `WARN could not record API keys' last use … Failed to connect`
 * (the terminal signals the whole process group, so the embedded PostgreSQL stops with the node).
 *   npx vitest run test/cli/shutdown-lines.test.ts
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { freePort } from "../../src/dev/EmbeddedPostgres.ts"
import { freshDatabase } from "../support/db.ts"
import { call } from "../support/node.ts"
import { forwardOutput, track } from "../support/process.ts"

const root = Path.resolve(import.meta.dirname, "../..")
const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-stop-"))
Fs.chmodSync(dataDir, 0o755)

const spawn = (command: string, env: Record<string, string | undefined>, detached = false) => {
  const child = track(ChildProcess.spawn(process.execPath, [Path.join(root, "src/cli/main.ts"), command], {
    cwd: root,
    env: { ...process.env, LOG_FORMAT: "json", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached
  }))
  forwardOutput(child, `anchord ${command}`)
  let out = ""
  child.stdout!.on("data", (d) => out += d)
  child.stderr!.on("data", (d) => out += d)
  const exited = new Promise<void>((r) => child.once("exit", () => r()))
  return { child, output: () => out, exited }
}

const healthy = async (port: number, alive: () => boolean) => {
  const until = Date.now() + 120_000
  while (Date.now() < until && alive()) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/v1/health`)).ok) return
    } catch {}
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error("the node did not answer on /v1/health")
}

describe("stopping", { timeout: 240_000 }, () => {
  afterAll(() => Fs.rmSync(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 }))

  it("anchord start logs one line when SIGTERM arrives and one when it has stopped", async () => {
    const port = await freePort()
    const node = spawn("start", { DATABASE_URL: await freshDatabase(), PORT: String(port), EVM_NETWORKS: "", FABRIC_NETWORKS: "", HOST: "127.0.0.1",
      PUBLIC_URL: undefined })
    await healthy(port, () => node.child.exitCode === null)
    node.child.kill("SIGTERM")
    await node.exited
    const lines = node.output().split("\n").filter((l) => l.startsWith("{")).map((l) =>
      JSON.parse(l) as { message: unknown; annotations?: Record<string, unknown> }
    )
    const messages = lines.map((l) => String(l.message))
    const stopping = messages.findIndex((m) => m.includes("anchord stopping"))
    const stopped = messages.findIndex((m) => m.includes("anchord stopped"))
    expect(stopping, node.output()).toBeGreaterThanOrEqual(0)
    expect(JSON.stringify(lines[stopping])).toContain("SIGTERM")
    expect(stopped).toBeGreaterThan(stopping)
  })

  it("anchord start on a port another process holds: one error line naming it, exit 1, no stack trace", async () => {
    const holder = Net.createServer()
    await new Promise<void>((r) => holder.listen(0, "127.0.0.1", () => r()))
    try {
      const port = (holder.address() as Net.AddressInfo).port
      const node = spawn("start", { DATABASE_URL: await freshDatabase(), PORT: String(port), EVM_NETWORKS: "", FABRIC_NETWORKS: "", HOST: "127.0.0.1",
        PUBLIC_URL: undefined })
      await node.exited
      expect(node.child.exitCode, node.output()).toBe(1)
      expect(node.output()).toContain(`error: anchord cannot listen: listen EADDRINUSE: address already in use 127.0.0.1:${port}`)
      expect(node.output()).not.toMatch(/\n\s+at /)
    } finally {
      holder.close()
    }
  })

  it("Ctrl-C on anchord dev (SIGINT to the whole process group) logs no failed last-use write", async () => {
    const port = await freePort()
    const dev = spawn("dev", {
      ANCHORD_DATA_DIR: dataDir,
      PORT: String(port),
      DATABASE_URL: "",
      DEV_CHAIN_PORT: "0",
      DEV_FABRIC_PORT: "0",
      EVM_NETWORKS: "",
      FABRIC_NETWORKS: ""
    }, true)
    await healthy(port, () => dev.child.exitCode === null)
    // The banner follows the listener.
    const until = Date.now() + 30_000
    while (!/Test key:\s+dcp_test_\w{32}/.test(dev.output()) && Date.now() < until) await new Promise((r) => setTimeout(r, 100))
    const key = /Test key:\s+(dcp_test_\w{32})/.exec(dev.output())![1]!
    // A use of the key, pending until the next flush (once a minute) or the stop.
    expect((await call(`http://127.0.0.1:${port}`, "GET", "/v1/records", { key })).status).toBe(200)
    process.kill(-dev.child.pid!, "SIGINT")
    await dev.exited
    expect(dev.output()).toContain("anchord dev stopped")
    expect(dev.output()).not.toContain("could not record API keys' last use")
  })
})
