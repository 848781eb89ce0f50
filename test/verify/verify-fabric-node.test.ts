// Fabric and hybrid anchors made by the node itself (src/fabric/Anchoring.ts on the dev peer, the
// EVM pipeline on anvil), verified the auditor's way (`anchord verify` as a process, with a Fabric
// identity of its own), the node's way (POST /v1/verify, with the node's configured networks), and
// the public verify page's way (EVM in the browser, Fabric asked of the node anonymously).
//   npx vitest run test/verify/verify-fabric-node.test.ts
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { DevIdentity, DevPeer } from "../../src/dev/fabric-peer/index.ts"
import type { Report } from "../../src/verify/report.ts"
import type { Anvil } from "../evm/anvil.ts"
import { call, type FabricTestNode, startFabricEvmFixture } from "../fabric-anchoring/support.ts"
import { clone, jsonFile, runCli } from "./support.ts"
import { bundleLink } from "../../src/certificates/bundleUrl.ts"
import { useBrowser, WAIT_MS } from "../support/browser.ts"

const browser = useBrowser()

let fixture: Awaited<ReturnType<typeof startFabricEvmFixture>> | undefined
let peer: DevPeer & { readonly dir: string }
let anvil: Anvil
let node: FabricTestNode
let key: string
let auditor: DevIdentity
let ids: ReadonlyArray<string> = []

beforeAll(async () => {
  fixture = await startFabricEvmFixture({
    evmNetworkId: "anvil-verify",
    publicRpc: true,
    bodies: [{ data: { fab: 1 }, chain: "fabric" }, { data: { fab: 2 }, chain: "fabric", packageMode: "IN_PLACE" }, { data: { hybrid: 1 }, chain: "hybrid" }],
    anchoredWithinMs: 20_000
  })
  ;({ peer, anvil, node, key, auditor, ids } = fixture)
}, 60_000)
afterAll(() => fixture?.stop())

const fabricFlags =
  () => ["--fabric-endpoint", peer.address, "--fabric-msp-id", peer.mspId, "--fabric-cert", auditor.certPath!, "--fabric-key", auditor.keyPath!]

describe("Fabric anchors of the node, verified", () => {
  it("anchord verify: the bundle with its data and the IN_PLACE document verify (exit 0); changed data is exit 1", async () => {
    const bundle = (await call(node.baseUrl, "GET", `/v1/records/${ids[0]}/proof`, { key })).json.data
    expect(bundle.anchors[0]).toMatchObject({ chainType: "fabric", channel: peer.channel, chaincode: peer.chaincode })
    const ok = await runCli([jsonFile(bundle), "--data", jsonFile({ fab: 1 }), "--json", ...fabricFlags()])
    const report = JSON.parse(ok.stdout) as Report
    expect(report.checks.filter((c) => c.status !== "pass")).toEqual([])
    expect(ok.code).toBe(0)

    const lookup = (await call(node.baseUrl, "GET", `/v1/records/${ids[1]}`, { key })).json
    expect(lookup.data.data._anchor.anchors[0].chainType).toBe("fabric")
    const doc = await runCli([jsonFile(lookup.data.data), ...fabricFlags()])
    expect(doc.stdout).toMatch(/PASS\s+fabric\.block\s+transaction [0-9a-f]{64} is VALID in block/)
    expect(doc.code).toBe(0)

    const changed = clone(lookup.data.data)
    changed.fab = 3
    const bad = await runCli([jsonFile(changed), ...fabricFlags()])
    expect(bad.code).toBe(1)
    expect(bad.stdout).toMatch(/FAIL\s+hash/)
  }, 30_000)

  it("a hybrid record: both anchors checked; without a Fabric identity the EVM half passes and the verdict is exit 2", async () => {
    const bundle = (await call(node.baseUrl, "GET", `/v1/records/${ids[2]}/proof`, { key })).json.data
    expect(bundle.anchors.map((a: any) => a.chainType).sort()).toEqual(["evm", "fabric"])
    const both = await runCli([jsonFile(bundle), "--data", jsonFile({ hybrid: 1 }), "--rpc", anvil.rpcUrl, "--json", ...fabricFlags()])
    const report = JSON.parse(both.stdout) as Report
    expect(report.anchors.map((a) => a.outcome)).toEqual(["verified", "verified"])
    expect(both.code).toBe(0)
    const evmOnly = await runCli([jsonFile(bundle), "--rpc", anvil.rpcUrl, "--json"])
    const partial = JSON.parse(evmOnly.stdout) as Report
    expect(evmOnly.code).toBe(2)
    expect(partial.anchors.find((a) => a.chainType === "evm")!.outcome).toBe("verified")
    expect(partial.anchors.find((a) => a.chainType === "fabric")!.outcome).toBe("could-not-check")
    // The node checks both with its own configuration.
    const r = await call(node.baseUrl, "POST", "/v1/verify", { key, body: { hash: bundle.hash } })
    expect(r.json.data.results[0].anchors.map((a: any) => a.outcome)).toEqual(["verified", "verified"])
  }, 30_000)

  it("POST /v1/verify checks Fabric anchors through the node's own gateway identity", async () => {
    const r = await call(node.baseUrl, "POST", "/v1/verify", { key, body: { data: { fab: 1 } } })
    expect(r.status).toBe(200)
    expect(r.json.data.outcome).toBe("verified")
    const checks = r.json.data.results[0].checks.map((c: any) => `${c.id}:${c.status}`)
    expect(checks).toContain("fabric.chaincode-lookup:pass")
    expect(checks).toContain("fabric.block:pass")
  }, 30_000)

  it("anonymous POST /v1/verify (the public verify page): a bundle's Fabric anchors only, limited per address", async () => {
    const bundle = (await call(node.baseUrl, "GET", `/v1/records/${ids[2]}/proof`, { key })).json.data
    const fabricOnly = { ...bundle, anchors: bundle.anchors.filter((a: any) => a.chainType === "fabric") }
    const r = await call(node.baseUrl, "POST", "/v1/verify", { body: { hash: bundle.hash, bundle: fabricOnly } })
    expect(r.status).toBe(200)
    expect(r.json.data.outcome).toBe("verified")
    expect(r.json.data.results[0].checks.filter((c: any) => c.id.startsWith("fabric.")).map((c: any) => `${c.id}:${c.status}`))
      .toEqual(["fabric.chaincode-lookup:pass", "fabric.block:pass"])
    // Anonymous requests are counted by address (the rate headers say so), never by a key.
    expect(r.headers.get("x-ratelimit-limit")).not.toBeNull()
    expect(r.headers.get("x-quota-limit")).toBeNull()
    // EVM anchors are left out (checked in the browser), so a hybrid bundle is checked on its Fabric anchor only.
    const hybrid = await call(node.baseUrl, "POST", "/v1/verify", { body: { hash: bundle.hash, bundle } })
    expect(hybrid.json.data.results[0].anchors.map((a: any) => a.chainType)).toEqual(["fabric"])
    // A tampered root: not verified, by the node's own checks.
    const tampered = clone(fabricOnly)
    tampered.anchors[0].merkleRoot = `0x${"cd".repeat(32)}`
    await new Promise((resolve) => setTimeout(resolve, 1_100)) // a new one-second window of the anonymous limit
    const bad = await call(node.baseUrl, "POST", "/v1/verify", { body: { hash: bundle.hash, bundle: tampered } })
    expect(bad.json.data.outcome).toBe("not-verified")
    // Without a bundle, looking records up needs the owner's key; an EVM-only bundle has nothing for the node to check.
    const noBundle = await call(node.baseUrl, "POST", "/v1/verify", { body: { hash: bundle.hash } })
    expect([noBundle.status, noBundle.json.errorCode]).toEqual([401, "MISSING_API_KEY"])
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    const evmOnly = await call(node.baseUrl, "POST", "/v1/verify", {
      body: { hash: bundle.hash, bundle: { ...bundle, anchors: bundle.anchors.filter((a: any) => a.chainType === "evm") } }
    })
    expect([evmOnly.status, evmOnly.json.errorCode]).toEqual([400, "VALIDATION_ERROR"])
    expect(evmOnly.json.error).toMatch(/^bundle: without an API key only Fabric anchors are checked here/)
    // A burst from one address: 429 with Retry-After past the anonymous verification limit.
    const burst = await Promise.all(
      Array.from({ length: 6 }, () => call(node.baseUrl, "POST", "/v1/verify", { body: { hash: bundle.hash, bundle: fabricOnly } }))
    )
    const limited = burst.filter((b) => b.status === 429)
    expect(limited.length).toBeGreaterThan(0)
    expect(limited[0]!.json.errorCode).toBe("RATE_LIMIT_EXCEEDED")
    expect(limited[0]!.headers.get("retry-after")).toBe("1")
  }, 30_000)

  it("the node's verify page: a hybrid record's EVM anchor checked in the browser, its Fabric anchor by the node, labelled so", async () => {
    await new Promise((resolve) => setTimeout(resolve, 1_100)) // past the previous test's burst
    const bundle = (await call(node.baseUrl, "GET", `/v1/records/${ids[2]}/proof`, { key })).json.data
    const page = await browser().newPage({ width: 360, height: 800 }, "verify")
    await page.goto(await bundleLink(`${node.baseUrl}/verify`, bundle))
    await page.locator("#result[aria-busy=\"false\"] #verdict").waitFor({ timeout: WAIT_MS })
    expect(await page.locator("#verdict").getAttribute("data-outcome")).toBe("verified")
    const fabric = page.locator("section.anchor[data-chain-type=\"fabric\"]")
    expect(await fabric.getAttribute("data-outcome")).toBe("verified")
    expect(await fabric.locator(".badge").allInnerTexts()).toEqual(["Verified", "checked by this node"])
    const byNode = await fabric.locator("li.check[data-by=\"node\"]").evaluateAll((items: Array<any>) => items.map((li) => li.innerText.replace(/\s+/g, " ")))
    expect(byNode).toEqual([
      expect.stringMatching(/^PASS BY THE NODE fabric\.chaincode-lookup lookup\(root\)/),
      expect.stringMatching(/^PASS BY THE NODE fabric\.block transaction [0-9a-f]{64} is VALID in block/)
    ])
    const evm = page.locator("section.anchor[data-chain-type=\"evm\"]")
    expect(await evm.getAttribute("data-outcome")).toBe("verified")
    expect(await evm.locator(".where").innerText()).toBe(`EVM chain 31337 · checked in this browser through ${anvil.rpcUrl}`)
    expect(await page.locator("#result .explain").innerText()).toContain("made by the node that serves this page")
    expect(browser().errors()).toEqual([])
    await page.context().close()
  }, 30_000)
})
