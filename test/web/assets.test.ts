// The verify page's committed assets: verify.js is exactly the build of its sources (no stale
// bundle is ever served), the page has no inline code (it runs under `script-src 'self'`), and
// the browser stand-ins for Node modules behave like the originals.
//   npx vitest run test/web/assets.test.ts
import { randomBytes, hash } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { instantiateKeccak } from "../../src/anchoring/keccak-wasm.ts"
import { consolePageAssets, consolePageCsp, verifyPageAssets, verifyPageCsp } from "../../web/assets.ts"
import { BANNER, buildConsoleScript, buildVerifyScript, CONSOLE_BANNER, CONSOLE_OUTPUT, VERIFY_OUTPUT } from "../../web/build.ts"
import { instantiateKeccak as instantiateKeccakJs } from "../../web/shims/keccak.ts"
import { Buffer as BrowserBuffer } from "../../web/shims/node-buffer.ts"
import { hash as browserHash } from "../../web/shims/node-crypto.ts"

const root = Path.resolve(import.meta.dirname, "../..")

describe("verify page assets", () => {
  it("web/verify/verify.js is the build of its sources (else: npm run build:web)", async () => {
    const { js, inputs } = await buildVerifyScript()
    const committed = Fs.readFileSync(VERIFY_OUTPUT, "utf8")
    if (committed !== js) {
      throw new Error(`${Path.relative(root, VERIFY_OUTPUT)} is stale: it differs from a build of its sources. Run \`npm run build:web\` and commit it.`)
    }
    expect(committed.startsWith(BANNER)).toBe(true)
    // The page runs the project's own verification core, with the Node-only parts replaced.
    for (const f of ["src/verify/verify.ts", "src/verify/evm.ts", "src/verify/input.ts", "src/anchoring/merkle.ts", "src/canonical/jcs.ts",
      "web/verify/src/fabric.ts"])
    {
      expect(inputs, f).toContain(f)
    }
    for (const f of ["src/verify/fabric.ts", "src/anchoring/keccak-wasm.ts"]) expect(inputs, f).not.toContain(f)
  }, 60_000)

  it("web/console/console.js is the build of its sources (else: npm run build:web)", async () => {
    const { js, inputs } = await buildConsoleScript()
    const committed = Fs.readFileSync(CONSOLE_OUTPUT, "utf8")
    if (committed !== js) {
      throw new Error(`${Path.relative(root, CONSOLE_OUTPUT)} is stale: it differs from a build of its sources. Run \`npm run build:web\` and commit it.`)
    }
    expect(committed.startsWith(CONSOLE_BANNER)).toBe(true)
    expect(inputs).toContain("web/console/src/main.ts")
    // Types only from the contract: no schema runtime (effect) in the console's bundle.
    expect(inputs.filter((f) => f.includes("node_modules/effect/"))).toEqual([])
  }, 60_000)

  it("both pages link an icon they serve (no /favicon.ico 404 in the browser's log)", () => {
    for (const [html, assets] of [["web/console/index.html", consolePageAssets], ["web/verify/index.html", verifyPageAssets]] as const) {
      const href = /<link rel="icon" type="image\/svg\+xml" href="([^"]+)">/.exec(Fs.readFileSync(Path.join(root, html), "utf8"))?.[1]
      const served = assets.find((a) => a.urlPath === href)
      expect(served, `${html} links ${href}`).toBeDefined()
      expect(served!.contentType).toBe("image/svg+xml")
      expect(Fs.readFileSync(served!.file, "utf8")).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/)
    }
  })

  it("the console has no inline script or style and no eval, and a CSP that allows only its own origin", () => {
    for (const asset of consolePageAssets) expect(Fs.existsSync(asset.file), asset.file).toBe(true)
    const html = Fs.readFileSync(Path.join(root, "web/console/index.html"), "utf8")
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)]
    expect(scripts.length).toBe(1)
    expect(scripts[0]![1]).toMatch(/\bsrc="\/console\/console\.js"/)
    expect(scripts[0]![2]!.trim()).toBe("")
    expect(html).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=|javascript:/i)
    expect(Fs.readFileSync(CONSOLE_OUTPUT, "utf8")).not.toMatch(/\beval\(|new Function\(|WebAssembly\.|innerHTML|insertAdjacentHTML|document\.write/)
    expect(consolePageCsp).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
    )
  })

  it("has no inline script or style and no eval (the page is served with script-src 'self', style-src 'self')", () => {
    for (const asset of verifyPageAssets) expect(Fs.existsSync(asset.file), asset.file).toBe(true)
    const html = Fs.readFileSync(Path.join(root, "web/verify/index.html"), "utf8")
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)]
    expect(scripts.length).toBe(1)
    for (const [, attrs, body] of scripts) {
      expect(attrs).toMatch(/\bsrc="\/verify\/verify\.js"/)
      expect(body!.trim()).toBe("")
    }
    expect(html).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=|javascript:/i)
    const js = Fs.readFileSync(VERIFY_OUTPUT, "utf8")
    expect(js).not.toMatch(/\beval\(|new Function\(|WebAssembly\./)
    expect(verifyPageCsp(["http://127.0.0.1:8545/", "https://rpc.example/v1/abc", "https:"])).toBe(
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self' http://127.0.0.1:8545 https://rpc.example https:; " +
        "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
  })

  it("the browser stand-ins behave like Node's Buffer, node:crypto and the WebAssembly keccak", () => {
    // Buffer#write(hex): merkle.ts counts the bytes written to reject malformed hashes.
    const samples = ["00".repeat(32), "aB".repeat(32), "f".repeat(63), "0g" + "00".repeat(31), "00".repeat(20) + "zz" + "00".repeat(11), "", "abc",
      " 0".repeat(32)]
    for (const s of samples) {
      const node = Buffer.alloc(40)
      const browser = BrowserBuffer.from(new ArrayBuffer(40), 0, 40)
      expect(browser.write(s, 4, 32, "hex"), JSON.stringify(s)).toBe(node.write(s, 4, 32, "hex"))
      expect(browser.toString("hex", 0, 40)).toBe(node.toString("hex", 0, 40))
      expect(browser.readUIntBE(4, 6)).toBe(node.readUIntBE(4, 6))
    }
    for (const text of ["", "{\"a\":1}", "é ☃ 𝄞 \u2028"]) expect(browserHash("sha256", text, "hex")).toBe(hash("sha256", text, "hex"))

    const wasm = instantiateKeccak()
    const js = instantiateKeccakJs()
    for (let i = 0; i < 20; i++) {
      const input = randomBytes(64)
      wasm.bytes(256).set(input, 0)
      js.bytes(256).set(input, 0)
      wasm.k32(0, 64)
      js.k32(0, 64)
      wasm.k64(0, 32, 96)
      js.k64(0, 32, 96)
      expect(Buffer.from(js.bytes(256).subarray(64, 128)).toString("hex")).toBe(Buffer.from(wasm.bytes(256).subarray(64, 128)).toString("hex"))
    }
    // Memory grows on demand, keeping what it held.
    const grown = js.bytes(3 * 65536 + 1)
    expect(grown.length).toBeGreaterThanOrEqual(3 * 65536 + 1)
    expect(Buffer.from(grown.subarray(0, 64)).toString("hex")).toBe(Buffer.from(wasm.bytes(64).subarray(0, 64)).toString("hex"))
  })
})
