/**
 * The Fabric writer against a dev peer whose chaincode has a hot key (every anchor also bumps a
 * counter, as a real chaincode with shared state would): batches endorsed at the same time land in
 * one block, all but the first fail MVCC validation (code 11), and the writer endorses them again
 * until they commit. Also: a root anchored by someone else is adopted from the ledger.
 *   npx vitest run test/fabric-anchoring/writer.test.ts
 */
import { peer as pb } from "@hyperledger/fabric-protos"
import { createHash } from "node:crypto"
import type { Context } from "fabric-contract-api"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AnchorContract } from "../../contracts/fabric/index.js"
import type { DevPeer } from "../../src/dev/fabric-peer/index.ts"
import { connectGateway } from "../fabric/helpers.ts"
import { allAnchored, call, fabricNetwork, query, startFabricNode, startTestPeer, waitFor, type FabricTestNode } from "./support.ts"

/** The anchoring chaincode plus a read-modify-write of one shared key per anchor. */
class HotKeyAnchorContract extends AnchorContract {
  override async anchor(ctx: Context, root: string, leafCount: string, batchId: string) {
    const current = await ctx.stub.getState("counter")
    const n = current && current.length > 0 ? Number(Buffer.from(current).toString()) : 0
    await ctx.stub.putState("counter", Buffer.from(String(n + 1)))
    return super.anchor(ctx, root, leafCount, batchId)
  }
  override async lookup(ctx: Context, root: string) {
    return super.lookup(ctx, root)
  }
}

describe("Fabric writer", () => {
  let peer: DevPeer
  let node: FabricTestNode
  let key: string
  beforeAll(async () => {
    // A block every 300 ms: concurrent submissions share a block.
    peer = await startTestPeer({ contracts: [HotKeyAnchorContract], blockIntervalMs: 300 })
    node = await startFabricNode({ fabric: [fabricNetwork(peer, { batchMaxSize: 1, batchWindowMs: 100 })] })
    key = await node.createKey()
  })
  afterAll(async () => {
    await node?.stop()
    await peer?.close()
  })

  it("retries MVCC read conflicts (code 11) until every batch commits", async () => {
    const ids: Array<string> = []
    for (let i = 0; i < 4; i++) {
      const r = await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { mvcc: i }, chain: "fabric" } })
      ids.push(r.json.data.recordId)
    }
    await waitFor("records ANCHORED", allAnchored(node.databaseUrl, ids), 20_000)
    const batches = await query<{ attempts: number; txHashes: Array<string>; txHash: string; lastError: string | null }>(node.databaseUrl,
      `SELECT attempts, tx_hashes AS "txHashes", tx_hash AS "txHash", last_error AS "lastError" FROM anchor_batches WHERE chain_type = 'fabric'`)
    expect(batches).toHaveLength(4)
    const retried = batches.filter((b) => b.txHashes.length > 1)
    expect(retried.length).toBeGreaterThan(0)
    for (const b of retried) {
      expect(b.attempts).toBe(b.txHashes.length)
      expect(b.lastError).toContain("validation code 11")
    }
    // The earlier transactions of a retried batch are in blocks, invalid with MVCC_READ_CONFLICT.
    const connection = connectGateway(peer)
    try {
      for (const b of retried) {
        for (const tx of b.txHashes.slice(0, -1)) {
          const status = await commitStatus(connection, peer, tx)
          expect(status).toBe(pb.TxValidationCode.MVCC_READ_CONFLICT)
        }
        expect(await commitStatus(connection, peer, b.txHash)).toBe(pb.TxValidationCode.VALID)
      }
    } finally {
      connection.close()
    }
  }, 30_000)

  it("adopts a root someone else anchored first (the chaincode refuses a second anchor)", async () => {
    const hash = createHash("sha256").update("adopt-me").digest("hex")
    // A batch of one: its root is the record's leaf. Anchor that root directly first.
    const { buildTree } = await import("../../src/anchoring/merkle.ts")
    const root = buildTree([hash]).root
    const connection = connectGateway(peer)
    let theirs: string
    try {
      const contract = connection.gateway.getNetwork(peer.channel).getContract(peer.chaincode)
      const submitted = await contract.submitAsync("anchor", { arguments: [root, "1", "someone-else"] })
      expect((await submitted.getStatus()).successful).toBe(true)
      theirs = submitted.getTransactionId()
    } finally {
      connection.close()
    }
    const r = await call(node.baseUrl, "POST", "/v1/anchor/hash", { key, body: { hash, chain: "fabric" } })
    await waitFor("ANCHORED", allAnchored(node.databaseUrl, [r.json.data.recordId]), 15_000)
    const a = (await call(node.baseUrl, "GET", `/v1/records/${r.json.data.recordId}`, { key })).json.data.anchors[0]
    expect(a.txHash).toBe(theirs)
    expect(a.batchId).toBe("someone-else")
    expect(a.merkleRoot).toBe(root)
  }, 20_000)
})

/** CommitStatus of any transaction id, through the real client (signed request). */
async function commitStatus(connection: ReturnType<typeof connectGateway>, peer: DevPeer, txId: string): Promise<number> {
  const { gateway: gw, msp } = await import("@hyperledger/fabric-protos")
  const identity = new msp.SerializedIdentity()
  identity.setMspid(peer.mspId)
  identity.setIdBytes(Buffer.from(peer.clientIdentity.certPem))
  const request = new gw.CommitStatusRequest()
  request.setTransactionId(txId)
  request.setChannelId(peer.channel)
  request.setIdentity(identity.serializeBinary())
  const signed = new gw.SignedCommitStatusRequest()
  signed.setRequest(request.serializeBinary())
  const status = await connection.gateway.newCommit(signed.serializeBinary()).getStatus()
  return status.code
}
