// The public verify page (web/verify) in a real Chromium, served with its Content-Security-Policy,
// checking real bundles of records a real node anchored on a real Anvil chain: the browser asks the
// chain's JSON-RPC itself. Good bundles verify; tampered ones do not, with the reason shown; an
// unreachable or refused RPC is "could not check"; a bundle in the URL fragment is checked on load,
// and so is the link in a certificate's QR code.
//   npx vitest run test/web/verify-page.test.ts
import { randomBytes } from "node:crypto"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bundleLink } from "../../src/certificates/bundleUrl.ts"
import { renderCertificate } from "../../src/certificates/certificate.ts"
import { rpcClient } from "../../src/verify/evm.ts"
import { readInput } from "../../src/verify/input.ts"
import { verifyInput } from "../../src/verify/verify.ts"
import { startAnvil, type Anvil } from "../evm/anvil.ts"
import { useBrowser, WAIT_MS } from "../support/browser.ts"
import { qrOfPdf } from "../support/pdf.ts"
import { clone, startVerifyEnv, type Anchored, type VerifyEnv } from "../verify/support.ts"
import { serveVerifyPage, type StaticServer } from "./support.ts"
import { freePort } from "../../src/dev/EmbeddedPostgres.ts"

const browser = useBrowser()
let anvil: Anvil
let env: VerifyEnv
let records: Array<Anchored>
let server: StaticServer
/** A port nothing listens on (connection refused), allowed by the page's CSP. */
let closedUrl: string

const EXPLORER = "https://explorer.example"
const EVM_CHECKS = ["evm.chain-id", "evm.contract-code", "evm.contract-verify", "evm.contract-anchor", "evm.transaction", "evm.block", "evm.confirmations"]

beforeAll(async () => {
  anvil = await startAnvil()
  env = await startVerifyEnv({ rpcUrl: anvil.rpcUrl, privateKey: await anvil.fundedKey() }, "web")
  records = await env.anchor([
    { data: { invoice: 1, amount: "10.00" } },
    { data: { invoice: 2, amount: "20.00", nested: { é: [1, 2, { z: null }] } }, packageMode: "IN_PLACE" },
    { data: { invoice: 3 } },
    { data: { invoice: 4 } }
  ])
  closedUrl = `http://127.0.0.1:${await freePort()}`
  server = await serveVerifyPage({
    connectSrc: [anvil.rpcUrl, closedUrl],
    config: { networks: [{ networkId: "verify-web", chainType: "evm", chainId: env.chainId, rpcUrl: anvil.rpcUrl, explorerUrl: EXPLORER }] }
  })
}, 120_000)
afterAll(async () => {
  await server?.close()
  await env?.node.stop()
  await anvil?.stop()
})

interface ShownCheck {
  readonly id: string
  readonly status: string
  readonly by: string
  readonly network: string | null
  readonly message: string
}

const open = async (url = server.verifyUrl, viewport = { width: 360, height: 800 }) => {
  browser().clearErrors()
  const page = await browser().newPage(viewport, "verify")
  await page.goto(url)
  return page
}

/** Waits for a finished verification and reads the verdict and every check shown. */
const result = async (page: Page) => {
  await page.locator("#result[aria-busy=\"false\"] #verdict").waitFor({ timeout: WAIT_MS })
  const outcome = await page.locator("#verdict").getAttribute("data-outcome")
  const checks: Array<ShownCheck> = await page.locator("li.check").evaluateAll((items: Array<any>) =>
    items.map((li) => ({
      id: li.dataset.check,
      status: li.dataset.status,
      by: li.dataset.by,
      network: li.closest("section.anchor")?.dataset.network ?? null,
      message: li.querySelector(".msg").textContent
    }))
  )
  const text = (await page.locator("#result").innerText()).replace(/\s+/g, " ")
  return { outcome, checks, text, status: (id: string) => checks.find((c) => c.id === id)?.status }
}

const verifyPasted = async (page: Page, doc: unknown, options: { rpc?: string; data?: unknown } = {}) => {
  await page.getByLabel("Proof bundle, IN_PLACE document or record lookup (JSON)").fill(typeof doc === "string" ? doc : JSON.stringify(doc, null, 2))
  if (options.rpc !== undefined) await page.getByLabel("Your own JSON-RPC URL (optional)").fill(options.rpc)
  if (options.data !== undefined) {
    await page.getByLabel("Data file").setInputFiles({ name: "data.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(options.data)) })
  }
  await page.getByRole("button", { name: "Verify" }).click()
  return result(page)
}

const failed = (checks: ReadonlyArray<ShownCheck>) => checks.filter((c) => c.status === "fail").map((c) => c.id).sort()

describe("the public verify page", () => {
  it("verifies a good bundle in the browser against the chain, recomputing the hash from the data file (360 px wide)", async () => {
    const [plain] = records
    const page = await open()
    const r = await verifyPasted(page, plain!.bundle, { data: plain!.data })
    expect(r.outcome).toBe("verified")
    expect(await page.locator("#verdict").textContent()).toBe("Verified")
    for (const id of ["format", "hash", "merkle-proof", ...EVM_CHECKS]) expect(r.status(id), id).toBe("pass")
    expect(r.checks.find((c) => c.id === "hash")!.message).toContain("sha256(JCS(data))")
    expect(r.text).toContain("recomputed here from the data")
    expect(r.text).toContain(`checked in this browser through ${anvil.rpcUrl}`)
    // The same checks, statuses and messages as the project's own verifier gives in Node.
    const node = await Effect.runPromise(verifyInput(readInput(plain!.bundle), { rpcFor: () => rpcClient(anvil.rpcUrl), data: { value: plain!.data } }))
    expect(r.checks.map((c) => [c.id, c.status])).toEqual(node.checks.map((c) => [c.id, c.status]))
    expect(r.checks.find((c) => c.id === "merkle-proof")!.message).toBe(node.checks.find((c) => c.id === "merkle-proof")!.message)
    // The transaction links to the configured explorer.
    const tx = plain!.bundle.anchors[0].txHash
    expect(await page.getByRole("link", { name: tx }).getAttribute("href")).toBe(`${EXPLORER}/tx/${tx}`)
    // Usable at 360 px: nothing wider than the viewport (long hashes wrap).
    expect(await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth)).toBeLessThanOrEqual(360)
    // The verdict has the focus (keyboard and screen-reader users land on it).
    expect(await page.evaluate(() => (globalThis as any).document.activeElement?.id)).toBe("verdict")
    await browser().screenshot(page, "verified-360px")
    // No script errors, no CSP violation (no inline code, no eval).
    expect(browser().errors()).toEqual([])
    await page.context().close()
  })

  it("verifies an IN_PLACE document chosen as a file; a changed one dropped on the page fails the hash, with the reason", async () => {
    const [, inPlace] = records
    const doc = inPlace!.lookup.data.data
    const page = await open()
    await page.getByLabel("Proof file").setInputFiles({ name: "record.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(doc)) })
    await expect.poll(() => page.getByLabel("Proof bundle, IN_PLACE document or record lookup (JSON)").inputValue(), { timeout: WAIT_MS }).not.toBe("")
    await page.getByRole("button", { name: "Verify" }).click()
    const good = await result(page)
    expect(good.outcome).toBe("verified")
    expect(good.text).toContain("IN_PLACE document")
    expect(good.status("hash")).toBe("pass")

    // The changed document dropped on the page as a file.
    const changed = clone(doc)
    changed.amount = "21.00"
    const dropPage = await open()
    const dataTransfer = await dropPage.evaluateHandle((text: string) => {
      const g = globalThis as any
      const dt = new g.DataTransfer()
      dt.items.add(new g.File([text], "changed.json", { type: "application/json" }))
      return dt
    }, JSON.stringify(changed))
    await dropPage.dispatchEvent("#drop-zone", "drop", { dataTransfer })
    await expect.poll(() => dropPage.getByLabel("Proof bundle, IN_PLACE document or record lookup (JSON)").inputValue(), { timeout: WAIT_MS }).toContain(
      "21.00"
    )
    await dropPage.getByRole("button", { name: "Verify" }).click()
    const bad = await result(dropPage)
    expect(bad.outcome).toBe("not-verified")
    expect(failed(bad.checks)).toEqual(["evm.contract-verify", "hash", "merkle-proof"])
    expect(bad.checks.find((c) => c.id === "hash")!.message).toContain("the data is not what was anchored")
    expect(bad.text).toContain("Not verified")
  })

  it("does not verify a bundle with a flipped Merkle proof element or another hash, and says why", async () => {
    const [plain] = records
    const flipped = clone(plain!.bundle)
    const proof = flipped.anchors[0].merkleProof as Array<string>
    expect(proof.length).toBeGreaterThan(0) // four records in one batch
    // One bit of the first element flipped.
    proof[0] = proof[0]!.slice(0, -1) + (parseInt(proof[0]!.slice(-1), 16) ^ 1).toString(16)
    const page = await open()
    const r = await verifyPasted(page, flipped)
    expect(r.outcome).toBe("not-verified")
    expect(failed(r.checks)).toEqual(["evm.contract-verify", "merkle-proof"])
    expect(r.checks.find((c) => c.id === "merkle-proof")!.message).toContain("the proof does not fold the leaf of")
    expect(r.checks.find((c) => c.id === "evm.contract-verify")!.message).toContain("verify(hash, proof, root) = false")
    // The reason is on screen, next to the FAIL mark.
    expect(await page.locator("li.check[data-check=\"merkle-proof\"]").innerText()).toMatch(/^FAIL\s+merkle-proof\s+the proof does not fold/)
    await browser().screenshot(page, "not-verified-360px")

    const otherHash = clone(plain!.bundle)
    otherHash.hash = randomBytes(32).toString("hex")
    const h = await verifyPasted(await open(), otherHash)
    expect(h.outcome).toBe("not-verified")
    expect(failed(h.checks)).toEqual(["evm.contract-verify", "merkle-proof"])
  })

  it("an unreachable RPC, one the page's CSP refuses, or none for the chain is 'could not check', never 'not verified'", async () => {
    const [plain] = records
    const unreachable = await verifyPasted(await open(), plain!.bundle, { rpc: closedUrl })
    expect(unreachable.outcome).toBe("could-not-check")
    expect(failed(unreachable.checks)).toEqual([])
    expect(unreachable.status("evm.chain-id")).toBe("error")
    expect(unreachable.checks.find((c) => c.id === "evm.chain-id")!.message).toContain(`RPC ${closedUrl}/ unreachable`)
    expect(unreachable.text).toContain("Could not check")
    expect(unreachable.text).toContain("COULD NOT CHECK")

    // Same port, other host name: not in connect-src, so the browser refuses before connecting.
    const refusedUrl = closedUrl.replace("127.0.0.1", "localhost")
    const refused = await verifyPasted(await open(), plain!.bundle, { rpc: refusedUrl })
    expect(refused.outcome).toBe("could-not-check")
    expect(refused.checks.find((c) => c.id === "evm.chain-id")!.message).toContain(
      `Content-Security-Policy does not allow connecting to ${new URL(refusedUrl).origin}`
    )

    // A chain the node lists no endpoint for, and no URL entered.
    const otherChain = clone(plain!.bundle)
    otherChain.anchors[0].chainId = 999
    const none = await verifyPasted(await open(), otherChain)
    expect(none.outcome).toBe("could-not-check")
    expect(none.status("evm.rpc")).toBe("error")
    expect(none.checks.find((c) => c.id === "evm.rpc")!.message).toContain("enter a JSON-RPC URL above")
  })

  it("checks a bundle carried in the URL fragment on load; a damaged one cannot be read", async () => {
    const [plain] = records
    const link = await bundleLink(server.verifyUrl, plain!.bundle)
    expect(link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/verify#bundle=[A-Z2-7]+$/)
    const page = await open(link)
    const r = await result(page)
    expect(r.outcome).toBe("verified")
    expect(JSON.parse(await page.getByLabel("Proof bundle, IN_PLACE document or record lookup (JSON)").inputValue())).toEqual(plain!.bundle)
    expect(browser().errors()).toEqual([])

    const damaged = await open(`${server.verifyUrl}#bundle=${link.split("=")[1]!.slice(0, 40)}`)
    const d = await result(damaged)
    expect(d.outcome).toBe("could-not-check")
    expect(d.text).toContain("The input cannot be read: the bundle in the link cannot be inflated")
  })

  it("opens the link of a certificate's QR code (decoded from the PDF's pixels): the record verifies", async () => {
    const [plain] = records
    const pdf = await renderCertificate(plain!.bundle, { verifyUrl: server.verifyUrl })
    const found = await qrOfPdf(pdf)
    expect(found, "a QR code on the certificate").toBeDefined()
    expect(found!.text).toBe(await bundleLink(server.verifyUrl, plain!.bundle))
    const page = await open(found!.text)
    const r = await result(page)
    expect(r.outcome).toBe("verified")
    expect(r.text).toContain(plain!.bundle.hash)
    expect(browser().errors()).toEqual([])
  })

  it("labels a Fabric anchor 'checked by the node' (a server that is not a node: could not check) and still checks the EVM anchor in the browser", async () => {
    const [plain] = records
    const evm = plain!.bundle.anchors[0]
    // A hybrid record's bundle: the Fabric anchor's Merkle members hold; its chain part is the node's.
    const hybrid = clone(plain!.bundle)
    hybrid.anchors.push({
      chainType: "fabric",
      networkId: "fabric-dev",
      channel: "anchord",
      chaincode: "anchord",
      mspId: "AnchordDevMSP",
      batchId: "b7f1c0de-0000-4000-8000-000000000001",
      merkleRoot: evm.merkleRoot,
      merkleProof: evm.merkleProof,
      leafIndex: evm.leafIndex,
      leafCount: evm.leafCount,
      txHash: randomBytes(32).toString("hex"),
      blockNumber: 12,
      blockHash: randomBytes(32).toString("hex"),
      anchoredAt: evm.anchoredAt
    })
    const page = await open()
    const r = await verifyPasted(page, hybrid)
    expect(r.outcome).toBe("could-not-check")
    expect(await page.locator("section.anchor[data-network=\"verify-web\"]").getAttribute("data-outcome")).toBe("verified")
    const fabric = r.checks.filter((c) => c.network === "fabric-dev")
    expect(fabric.map((c) => [c.id, c.status, c.by])).toEqual([["merkle-proof", "pass", "browser"], ["fabric.node", "error", "node"]])
    expect(await page.locator("li.check[data-check=\"fabric.node\"] .status").textContent()).toBe("COULD NOT CHECK")
    expect(await page.locator("li.check[data-check=\"fabric.node\"] .by").textContent()).toBe("BY THE NODE")
    // This static server is not a node: POST /v1/verify is refused, and the check says so.
    expect(fabric.find((c) => c.id === "fabric.node")!.message).toMatch(/^This node could not check the Fabric anchor \(HTTP 405\)/)
    expect(r.text).toContain("Fabric anchors are checked by the node")
    expect(r.text).toContain("Hyperledger Fabric channel anchord · checked by the node")
    await browser().screenshot(page, "hybrid-360px")
  })

  it("works by keyboard alone, every control labelled", async () => {
    const [plain] = records
    const page = await open(server.verifyUrl, { width: 1024, height: 800 })
    // Every form control has an accessible name.
    for (const [role, name] of [
      ["textbox", "Proof bundle, IN_PLACE document or record lookup (JSON)"],
      ["textbox", "Your own JSON-RPC URL (optional)"],
      ["textbox", "Record hash (hex, when the data is not given)"],
      ["textbox", "Receipt key (PEM public key)"],
      ["button", "Verify"]
    ] as const) {
      expect(await page.getByRole(role, { name }).count(), name).toBe(1)
    }
    expect(await page.getByLabel("Proof file").count()).toBe(1)
    expect(await page.getByLabel("Data file").count()).toBe(1)
    expect(await page.getByLabel("Receipt file").count()).toBe(1)
    const active = () => page.evaluate(() => (globalThis as any).document.activeElement?.id)
    await page.keyboard.press("Tab")
    expect(await active()).toBe("proof-text")
    await page.keyboard.insertText(JSON.stringify(plain!.bundle))
    // Tab on through the file inputs, the receipt's fields and the RPC field to the button.
    const order: Array<string> = []
    for (let i = 0; i < 10 && (await active()) !== "verify-button"; i++) {
      await page.keyboard.press("Tab")
      order.push(await active())
    }
    expect(order).toEqual(["proof-file", "receipt-file", "receipt-hash", "receipt-key", "data-file", "rpc-url", "verify-button"])
    await page.keyboard.press("Enter")
    expect((await result(page)).outcome).toBe("verified")
    expect(await active()).toBe("verdict")
    await browser().screenshot(page, "verified-desktop")
  })
})
