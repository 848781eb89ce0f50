// Fabric and hybrid anchors made by the node itself (src/fabric/Anchoring.ts on the dev peer, the
// EVM pipeline on anvil), verified the auditor's way (`anchord verify` as a process, with a Fabric
// identity of its own) and the node's way (POST /v1/verify, with the node's configured networks).
//   npx vitest run test/verify/verify-fabric-node.test.ts
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createDevIdentity, type DevIdentity, type DevPeer } from "../../src/dev/fabric-peer/index.ts"
import type { Report } from "../../src/verify/report.ts"
import { startAnvil, type Anvil } from "../evm/anvil.ts"
import { deploy, network } from "../evm/support.ts"
import { allAnchored, call, fabricNetwork, startFabricNode, startTestPeer, waitFor, type FabricTestNode } from "../fabric-anchoring/support.ts"
import { clone, jsonFile, runCli } from "./support.ts"

let peer: DevPeer & { readonly dir: string }
let anvil: Anvil
let node: FabricTestNode
let key: string
let auditor: DevIdentity
const ids: Array<string> = []

beforeAll(async () => {
  peer = await startTestPeer()
  anvil = await startAnvil()
  const pk = await anvil.fundedKey()
  const d = await deploy(anvil.rpcUrl, pk)
  node = await startFabricNode({
    fabric: [fabricNetwork(peer)],
    evm: [network({ networkId: "anvil-verify", rpcUrl: anvil.rpcUrl, chainId: d.chainId, contractAddress: d.address, confirmations: 1, batchWindowMs: 200, pollIntervalMs: 100 }, pk)]
  })
  key = await node.createKey()
  auditor = createDevIdentity(peer.mspId, { dir: join(peer.dir, "auditor"), commonName: "auditor" })
  for (const body of [{ data: { fab: 1 }, chain: "fabric" }, { data: { fab: 2 }, chain: "fabric", packageMode: "IN_PLACE" }, { data: { hybrid: 1 }, chain: "hybrid" }]) {
    ids.push((await call(node.baseUrl, "POST", "/v1/anchor", { key, body })).json.data.recordId)
  }
  await waitFor("records ANCHORED", allAnchored(node.databaseUrl, ids), 20_000)
}, 60_000)
afterAll(async () => {
  await node?.stop()
  await peer?.close()
  await anvil?.stop()
})

const fabricFlags = () => ["--fabric-endpoint", peer.address, "--fabric-msp-id", peer.mspId, "--fabric-cert", auditor.certPath!, "--fabric-key", auditor.keyPath!]

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
})
