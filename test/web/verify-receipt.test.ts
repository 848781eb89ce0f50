// The public verify page (web/verify) checking COSE Receipts (RFC 9942) in a real Chromium: a receipt
// a real node signed for a record it anchored on a real Anvil chain, with the record's data (or hash)
// and the receipt key (pasted, or the serving node's /.well-known one). The page runs the same core as
// `anchord verify --receipt` (src/verify/receipt.ts): ES256 by WebCrypto, the RFC 9162 proof, the
// root's LogRootAnchored log and the contract's verifyLogInclusion through the chain's JSON-RPC.
// A tampered receipt, other data, or another key do not verify.
//   npx vitest run test/web/verify-receipt.test.ts
import { generateKeyPairSync } from "node:crypto"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startAnvil, type Anvil } from "../evm/anvil.ts"
import { useBrowser, WAIT_MS } from "../support/browser.ts"
import { startVerifyEnv, type Anchored, type VerifyEnv } from "../verify/support.ts"
import { serveVerifyPage, type StaticServer } from "./support.ts"

// The node's receipt key, as an operator would configure it.
const keyDir = mkdtempSync(join(tmpdir(), "anchord-web-receipt-"))
writeFileSync(join(keyDir, "receipt.key"), generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }), {
  mode: 0o600
})
process.env.RECEIPT_KEY_FILE = join(keyDir, "receipt.key")

const browser = useBrowser()
let anvil: Anvil
let env: VerifyEnv
let records: Array<Anchored>
let server: StaticServer
let pem: string
const receipts = new Map<string, Buffer>()

const RECEIPT_CHECKS = [
  "receipt.format:pass",
  "receipt.inclusion:pass",
  "receipt.signature:pass",
  "evm.chain-id:pass",
  "evm.log-root:pass",
  "evm.block:pass",
  "evm.confirmations:pass",
  "evm.contract-log-inclusion:pass"
]

const get = (path: string, key?: string) => fetch(`${env.node.baseUrl}${path}`, { headers: key === undefined ? {} : { authorization: `Bearer ${key}` } })

beforeAll(async () => {
  anvil = await startAnvil()
  env = await startVerifyEnv({ rpcUrl: anvil.rpcUrl, privateKey: await anvil.fundedKey() }, "web-receipt")
  records = await env.anchor([{ data: { receipt: "web", n: 1 } }, { data: { receipt: "web", n: 2 } }])
  pem = await (await get("/.well-known/anchord-receipt-key.pem")).text()
  for (const r of records) {
    const res = await get(`/v1/records/${r.recordId}/receipt`, env.key)
    expect(res.status).toBe(200)
    receipts.set(r.recordId, Buffer.from(await res.arrayBuffer()))
  }
  // The page as a node serves it: its receipt key at the well-known path, the chain's RPC in its network list.
  server = await serveVerifyPage({
    connectSrc: [anvil.rpcUrl],
    config: { networks: [{ networkId: "verify-web-receipt", chainType: "evm", chainId: env.chainId, rpcUrl: anvil.rpcUrl }] },
    extra: { "/.well-known/anchord-receipt-key.pem": { body: pem, contentType: "application/x-pem-file" } }
  })
}, 120_000)
afterAll(async () => {
  await server?.close()
  await env?.node.stop()
  await anvil?.stop()
})

const open = async () => {
  browser().clearErrors()
  const page = await browser().newPage({ width: 360, height: 800 }, "verify-receipt")
  await page.goto(server.verifyUrl)
  return page
}

const verifyReceipt = async (page: Page, receipt: Buffer, o: { data?: unknown; hash?: string; key?: string }) => {
  await page.getByLabel("Receipt file").setInputFiles({ name: "record.cose", mimeType: "application/cose", buffer: receipt })
  if (o.data !== undefined) {
    await page.getByLabel("Data file").setInputFiles({ name: "data.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(o.data)) })
  }
  if (o.hash !== undefined) await page.getByLabel("Record hash (hex, when the data is not given)").fill(o.hash)
  if (o.key !== undefined) await page.getByLabel("Receipt key (PEM public key)").fill(o.key)
  await page.getByRole("button", { name: "Verify" }).click()
  await page.locator("#result[aria-busy=\"false\"] #verdict").waitFor({ timeout: WAIT_MS })
  const checks: Array<{ id: string; status: string; message: string }> = await page.locator("li.check").evaluateAll((items: Array<any>) =>
    items.map((li) => ({ id: li.dataset.check, status: li.dataset.status, message: li.querySelector(".msg").textContent }))
  )
  return {
    outcome: await page.locator("#verdict").getAttribute("data-outcome"),
    checks,
    list: checks.map((c) => `${c.id}:${c.status}`),
    text: (await page.locator("#result").innerText()).replace(/\s+/g, " ")
  }
}

describe("the verify page checks COSE receipts", () => {
  it("a node's receipt with the record's data and the node's well-known key: verified, every check in the browser", async () => {
    const [a] = records
    const page = await open()
    const r = await verifyReceipt(page, receipts.get(a!.recordId)!, { data: a!.data })
    expect(r.outcome, JSON.stringify(r.checks)).toBe("verified")
    expect(r.list).toEqual(RECEIPT_CHECKS)
    expect(r.text).toContain("COSE receipt (RFC 9942)")
    expect(r.text).toContain("recomputed here from the data")
    expect(r.text).toContain(`through ${anvil.rpcUrl}`)
    expect(r.text).toContain(a!.bundle.anchors[0].txHash)
    expect(browser().errors()).toEqual([])
    await page.context().close()
  })

  it("with the hash typed and the key pasted: verified; a tampered receipt, other data or another key: not verified", async () => {
    const [a, b] = records
    const bytes = receipts.get(a!.recordId)!
    let page = await open()
    expect((await verifyReceipt(page, bytes, { hash: `0x${a!.bundle.hash}`, key: pem })).outcome).toBe("verified")
    await page.context().close()

    // One byte of the signature flipped: the signature fails, the chain still holds the root.
    const tampered = Buffer.from(bytes)
    tampered[tampered.length - 1]! ^= 1
    page = await open()
    let r = await verifyReceipt(page, tampered, { hash: a!.bundle.hash, key: pem })
    expect(r.outcome).toBe("not-verified")
    expect(r.checks.filter((c) => c.status === "fail").map((c) => c.id)).toEqual(["receipt.signature"])
    await page.context().close()

    // Another record's data against this receipt.
    page = await open()
    r = await verifyReceipt(page, bytes, { data: b!.data })
    expect(r.outcome).toBe("not-verified")
    expect(r.list).toContain("receipt.inclusion:fail")
    expect(r.list).toContain("receipt.signature:fail")
    await page.context().close()

    // Another key.
    page = await open()
    r = await verifyReceipt(page, bytes, { data: a!.data,
      key: generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey.export({ type: "spki", format: "pem" }).toString() })
    expect(r.outcome).toBe("not-verified")
    expect(r.checks.find((c) => c.id === "receipt.signature")).toMatchObject({ status: "fail" })
    await page.context().close()
  }, 120_000)

  it("garbage is no receipt (format fails, nothing else asked); no hash given is a field error", async () => {
    let page = await open()
    const r = await verifyReceipt(page, Buffer.from("not cbor at all"), { hash: records[0]!.bundle.hash, key: pem })
    expect(r.outcome).toBe("not-verified")
    expect(r.list).toEqual(["receipt.format:fail"])
    await page.context().close()

    page = await open()
    await page.getByLabel("Receipt file").setInputFiles({ name: "r.cose", mimeType: "application/cose", buffer: receipts.get(records[0]!.recordId)! })
    await page.getByRole("button", { name: "Verify" }).click()
    await expect.poll(() => page.locator("#form-error").textContent(), { timeout: WAIT_MS }).toContain("data file or enter its hash")
    expect(await page.getByLabel("Record hash (hex, when the data is not given)").getAttribute("aria-invalid")).toBe("true")
    await page.context().close()
  })
})
