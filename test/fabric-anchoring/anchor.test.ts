/**
 * Fabric anchoring end to end: records submitted over HTTP are anchored on a dev peer through the real
 * fabric-gateway client over gRPC, confirmed by the block indexer, and their proofs verify: Merkle
 * proof, the root on the ledger (chaincode lookup), and the block (hash chain and data hash).
 *   npx vitest run test/fabric-anchoring/anchor.test.ts
 */
import { StandardMerkleTree } from "@openzeppelin/merkle-tree"
import { common } from "@hyperledger/fabric-protos"
import { createHash } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { DevPeer } from "../../src/dev/fabric-peer/index.ts"
import { connectGateway, headerHash, take } from "../fabric/helpers.ts"
import { allEvents } from "../support/events.ts"
import { allAnchored, call, fabricNetwork, query, startFabricNode, startTestPeer, waitFor, type FabricTestNode } from "./support.ts"

describe("Fabric anchoring over the real gateway client", () => {
  let peer: DevPeer
  let node: FabricTestNode
  let key: string
  beforeAll(async () => {
    peer = await startTestPeer()
    node = await startFabricNode({ fabric: [fabricNetwork(peer)] })
    key = await node.createKey()
  })
  afterAll(async () => {
    await node?.stop()
    await peer?.close()
  })

  it("submit over HTTP → ANCHORED on Fabric with the raw tx id; proof, ledger and block verify", async () => {
    const ids: Array<string> = []
    for (let i = 0; i < 5; i++) {
      const r = await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { fabric: i }, chain: "fabric" } })
      expect(r.status).toBe(202)
      expect(r.json.data.networkId).toBe("fabric-dev")
      expect(r.json.data.chainType).toBe("fabric")
      ids.push(r.json.data.recordId)
    }
    await waitFor("records ANCHORED", allAnchored(node.databaseUrl, ids), 15_000)

    const connection = connectGateway(peer)
    try {
      const contract = connection.gateway.getNetwork(peer.channel).getContract(peer.chaincode)
      // One more block after ours, so each anchor's block has a successor to chain to.
      await contract.submitTransaction("anchor", "0x" + createHash("sha256").update("next block").digest("hex"), "1", "test")
      for (const id of ids) {
        const rec = (await call(node.baseUrl, "GET", `/v1/records/${id}`, { key })).json.data
        expect(rec.status).toBe("ANCHORED")
        expect(rec.anchors).toHaveLength(1)
        const a = rec.anchors[0]
        expect(a.chainType).toBe("fabric")
        expect(a.networkId).toBe("fabric-dev")
        expect(a.txHash).toMatch(/^[0-9a-f]{64}$/) // raw tx id, no 0x
        expect(typeof a.batchId).toBe("string")
        expect(a.channel).toBe(peer.channel)
        expect(a.chaincode).toBe(peer.chaincode)
        expect(a.blockNumber).toBeGreaterThan(0)
        expect(a.anchoredAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)

        const b = (await call(node.baseUrl, "GET", `/v1/records/${id}/proof`, { key })).json.data
        const ba = b.anchors[0]
        expect(ba).toMatchObject({ chainType: "fabric", channel: peer.channel, chaincode: peer.chaincode, txHash: a.txHash, batchId: a.batchId })
        expect(ba.blockHash).toMatch(/^[0-9a-f]{64}$/)
        expect(StandardMerkleTree.verify(ba.merkleRoot, ["bytes32"], [`0x${b.hash}`], ba.merkleProof)).toBe(true)
        // The root is on the ledger, anchored by that transaction with that batch id.
        const onLedger = JSON.parse(Buffer.from(await contract.evaluateTransaction("lookup", ba.merkleRoot)).toString())
        expect(onLedger).toMatchObject({ root: ba.merkleRoot, txId: ba.txHash, batchId: ba.batchId, leafCount: ba.leafCount })
        expect(onLedger.timestamp).toBe(ba.anchoredAt)
        // The batch's RFC 9162 root went to the ledger in the same transaction (anchorWithLogRoot, COSE receipts).
        const [batch] = await query<{ log_root: string }>(node.databaseUrl,
          "SELECT b.log_root FROM anchors a JOIN anchor_batches b ON b.id = a.batch_id WHERE a.record_id = $1", [id])
        expect(batch!.log_root).toMatch(/^0x[0-9a-f]{64}$/)
        expect(onLedger.logRoot).toBe(batch!.log_root)

        // The block: its data hash, its hash = the bundle's blockHash, chained by the next block, and the tx in it.
        const [block, next] = await take(await connection.gateway.getNetwork(peer.channel).getBlockEvents({ startBlock: BigInt(ba.blockNumber) }), 2, 5000)
        const header = block!.getHeader()!
        const data = block!.getData()!.getDataList_asU8()
        expect(Buffer.from(header.getDataHash_asU8())).toEqual(createHash("sha256").update(Buffer.concat(data)).digest())
        const hash = headerHash(BigInt(header.getNumber()), header.getPreviousHash_asU8(), header.getDataHash_asU8())
        expect(hash.toString("hex")).toBe(ba.blockHash)
        expect(Buffer.from(next!.getHeader()!.getPreviousHash_asU8())).toEqual(hash)
        const txIds = data.map((env) =>
          common.ChannelHeader.deserializeBinary(common.Payload.deserializeBinary(common.Envelope.deserializeBinary(env).getPayload_asU8())
            .getHeader()!.getChannelHeader_asU8()).getTxId()
        )
        expect(txIds).toContain(ba.txHash)
      }
    } finally {
      connection.close()
    }

    // Outbox: one anchor.confirmed per record, Fabric-shaped (raw tx id, string batchId, blockNumber null).
    const events = (await allEvents(node.databaseUrl, ids)).filter((e) => e.kind === "anchor.confirmed")
    expect(events).toHaveLength(ids.length)
    for (const e of events) {
      expect(e.payload).toMatchObject({ chainType: "fabric", networkId: "fabric-dev", blockNumber: null, status: "ANCHORED" })
      expect(e.payload.txHash).toMatch(/^[0-9a-f]{64}$/)
      expect(typeof e.payload.batchId).toBe("string")
      expect(e.payload.dualAnchor).toBeUndefined()
    }
    // The indexer processed every block once, in order, from block 0.
    const blocks = await query<{ n: number; max: string }>(node.databaseUrl,
      "SELECT count(*)::int AS n, max(block_number)::text AS max FROM fabric_blocks WHERE network_id = 'fabric-dev'")
    expect(blocks[0]!.n).toBe(Number(blocks[0]!.max) + 1)
    // Webhook side: the event row renders as form B with the Fabric fields (src/webhooks/payload.ts).
    const { render } = await import("../../src/webhooks/payload.ts")
    const body = JSON.parse(render({
      eventId: "evt_x",
      kind: "anchor.confirmed",
      payload: events[0]!.payload,
      eventCreatedAt: new Date(),
      format: "multichain",
      signingSecret: "s",
      nextSecret: null,
      record: { hash: null, packageMode: "MANAGED", chainType: "fabric", networkId: "fabric-dev", metadata: {}, status: "ANCHORED" },
      anchorPayload: null
    }).body)
    expect(body).toMatchObject({ type: "ANCHORED", chainType: "fabric", networkId: "fabric-dev", blockNumber: null })
    expect(body.transactionHash).toMatch(/^[0-9a-f]{64}$/)
    expect(typeof body.batchId).toBe("string")
  }, 30_000)
})

describe("a Fabric network over TLS with a host alias (the fabric-byo configuration path)", () => {
  it("anchors through a TLS gateway whose certificate names the alias, not the dialed address", async () => {
    const { createDevIdentity } = await import("../../src/dev/fabric-peer/index.ts")
    const { mkdtempSync, rmSync } = await import("node:fs")
    const { tmpdir } = await import("node:os")
    const { join } = await import("node:path")
    const dir = mkdtempSync(join(tmpdir(), "anchord-fabric-tls-"))
    const tls = createDevIdentity("AnchordDevMSP", { role: "tls", commonName: "peer0.example.test", hosts: ["peer0.example.test"], dir: join(dir, "tls") })
    const peer = await startTestPeer({ tls: { certPem: tls.certPem, keyPem: tls.privateKeyPem } })
    const node = await startFabricNode({
      fabric: [fabricNetwork(peer, { networkId: "fabric-byo-tls", tlsRootCertPath: tls.certPath!, hostAlias: "peer0.example.test" })]
    })
    try {
      const key = await node.createKey()
      const r = await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { tls: true }, chain: "fabric" } })
      expect(r.json.data.networkId).toBe("fabric-byo-tls")
      await waitFor("ANCHORED over TLS", allAnchored(node.databaseUrl, [r.json.data.recordId]), 15_000)
      const a = (await call(node.baseUrl, "GET", `/v1/records/${r.json.data.recordId}`, { key })).json.data.anchors[0]
      expect(a.txHash).toMatch(/^[0-9a-f]{64}$/)
    } finally {
      await node.stop()
      await peer.close()
      rmSync(dir, { recursive: true, force: true })
    }
  }, 30_000)
})
