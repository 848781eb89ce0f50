/**
 * A Fabric network whose chaincode predates issue 27 (no `anchorWithLogRoot`) keeps anchoring: the dev peer
 * serves a contract with only `anchor` and `lookup` (the interface as deployed before), the endorsement of
 * `anchorWithLogRoot` fails with fabric-contract-api's "function that does not exist", and the writer sends
 * `anchor` alone, clears the batch's RFC 9162 root and warns once; later batches of the connection go out with
 * `anchor` at once. Records are ANCHORED, their proof
 * bundles verify (`anchord verify` as a process, auditor identity), and their COSE receipt is the documented
 * 404 NOT_FOUND (docs/api.md, "COSE Receipts"; docs/anchoring-fabric.md, "Writer").
 *   npx vitest run test/fabric-anchoring/old-chaincode.test.ts
 */
import { generateKeyPairSync } from "node:crypto"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { Layer, Logger, References } from "effect"
import { Contract, type Context } from "fabric-contract-api"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AnchorContract } from "../../contracts/fabric/index.js"
import { makeNodeLayer } from "../../src/app/layers.ts"
import { EvmNetworks } from "../../src/evm/config.ts"
import { FabricNetworks } from "../../src/fabric/config.ts"
import { createDevIdentity, type DevIdentity } from "../../src/dev/fabric-peer/index.ts"
import type { Report } from "../../src/verify/report.ts"
import { connectGateway } from "../fabric/helpers.ts"
import { startNode, type TestNode } from "../support/node.ts"
import { jsonFile, runCli } from "../verify/support.ts"
import { allAnchored, call, fabricNetwork, query, startTestPeer, waitFor } from "./support.ts"

/** The chaincode's interface before issue 27: `anchor` and `lookup`, nothing else (same records, no logRoot). */
class AnchorContractBeforeIssue27 extends Contract {
  readonly #current = new AnchorContract()
  constructor() {
    super("AnchorContract")
  }
  async anchor(ctx: Context, root: string, leafCount: string, batchId: string) {
    return this.#current.anchor(ctx, root, leafCount, batchId)
  }
  async lookup(ctx: Context, root: string) {
    return this.#current.lookup(ctx, root)
  }
}

const WARNING = "chaincode has no anchorWithLogRoot: batches are anchored without their RFC 9162 root (no COSE receipts) until it is upgraded"

let peer: Awaited<ReturnType<typeof startTestPeer>>
let node: TestNode
let key: string
let auditor: DevIdentity
const warnings: Array<{ message: string; fields: Record<string, unknown> }> = []

beforeAll(async () => {
  peer = await startTestPeer({ contracts: [AnchorContractBeforeIssue27] })
  // A receipt key, so the receipt's 404 is about the batch and not about a node that issues none.
  const keyFile = join(peer.dir, "receipt.key")
  writeFileSync(keyFile, generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 })
  process.env.RECEIPT_KEY_FILE = keyFile
  const capture = Logger.layer([Logger.make(({ fiber, logLevel, message }) => {
    if (logLevel !== "Warn") return
    const parts = Array.isArray(message) ? message : [message]
    warnings.push({ message: String(parts[0]), fields: { ...fiber.getRef(References.CurrentLogAnnotations) } })
  })])
  node = await startNode({
    layer: makeNodeLayer(EvmNetworks.layerWith([]), FabricNetworks.layerWith([fabricNetwork(peer)])).pipe(Layer.provide(capture))
  })
  key = (await node.createKey(await node.createAccount({ name: "old chaincode" }))).key
  auditor = createDevIdentity(peer.mspId, { dir: join(peer.dir, "auditor"), commonName: "auditor" })
}, 30_000)
afterAll(async () => {
  delete process.env.RECEIPT_KEY_FILE
  await node?.stop()
  await peer?.close()
})

describe("a Fabric chaincode deployed before anchorWithLogRoot", () => {
  it("anchors with anchor() alone: ANCHORED, proof verifies, one warning per connection, no log root, receipt 404", async () => {
    const bodies = [{ old: 0 }, { old: 1 }, { old: 2 }]
    const ids: Array<string> = []
    for (const data of bodies) {
      const r = await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data, chain: "fabric" } })
      expect(r.status).toBe(202)
      ids.push(r.json.data.recordId)
    }
    await waitFor("records ANCHORED", allAnchored(node.databaseUrl, ids), 15_000)

    // Each batch of these records: no log root kept; one warning, naming the batch that found out.
    const batches = await query<{ id: string; log_root: string | null; merkle_root: string }>(node.databaseUrl,
      "SELECT DISTINCT b.id::text AS id, b.log_root, b.merkle_root FROM anchors a JOIN anchor_batches b ON b.id = a.batch_id WHERE a.record_id = ANY($1)", [
      ids
    ])
    expect(batches.length).toBeGreaterThan(0)
    expect(batches.map((b) => b.log_root)).toEqual(batches.map(() => null))
    const ours = () => warnings.filter((w) => w.message === WARNING)
    expect(ours()).toHaveLength(1)
    expect(batches.map((b) => b.id)).toContain(ours()[0]!.fields.batchId)
    expect(ours()[0]!.fields.networkId).toBe("fabric-dev")

    // A later batch: anchor() at once, no second warning, no log root.
    const later = await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { old: "later" }, chain: "fabric" } })
    expect(later.status).toBe(202)
    await waitFor("the later record ANCHORED", allAnchored(node.databaseUrl, [later.json.data.recordId]), 15_000)
    const [laterBatch] = await query<{ id: string; log_root: string | null }>(node.databaseUrl,
      "SELECT b.id::text AS id, b.log_root FROM anchors a JOIN anchor_batches b ON b.id = a.batch_id WHERE a.record_id = $1", [later.json.data.recordId])
    expect(batches.map((b) => b.id)).not.toContain(laterBatch!.id)
    expect(laterBatch!.log_root).toBeNull()
    expect(ours()).toHaveLength(1)

    // The ledger's record of each root was written by anchor(): no logRoot in it.
    const connection = connectGateway(peer)
    try {
      const contract = connection.gateway.getNetwork(peer.channel).getContract(peer.chaincode)
      for (const b of batches) {
        const onLedger = JSON.parse(Buffer.from(await contract.evaluateTransaction("lookup", b.merkle_root)).toString())
        expect(onLedger.root).toBe(b.merkle_root)
        expect(onLedger).not.toHaveProperty("logRoot")
      }
    } finally {
      connection.close()
    }

    const fabricFlags = ["--fabric-endpoint", peer.address, "--fabric-msp-id", peer.mspId, "--fabric-cert", auditor.certPath!, "--fabric-key", auditor.keyPath!]
    for (const [i, id] of ids.entries()) {
      const proof = await call(node.baseUrl, "GET", `/v1/records/${id}/proof`, { key })
      expect(proof.status).toBe(200)
      if (i === 0) {
        // One bundle through `anchord verify` (a process per record would cost a second each).
        const r = await runCli([jsonFile(proof.json), "--data", jsonFile(bodies[i]), "--json", ...fabricFlags])
        const report = JSON.parse(r.stdout) as Report
        expect(report.checks.filter((c) => c.status !== "pass")).toEqual([])
        expect(r.code).toBe(0)
      }
      const receipt = await call(node.baseUrl, "GET", `/v1/records/${id}/receipt`, { key })
      expect(receipt.status).toBe(404)
      expect(receipt.json.errorCode).toBe("NOT_FOUND")
      expect(receipt.json.error).toContain("anchored without an RFC 9162 tree")
    }
  }, 30_000)
})
