// The chain writer: a stuck transaction is replaced with higher fees (same nonce); a batch whose
// transaction keeps reverting ends FAILED with anchor.failed events; a batch given up while its
// transaction is still pooled is revived when that transaction is mined; two nodes on one database
// elect one writer per network and the other takes over when the leader stops.
//   npx vitest run test/evm/writer.test.ts
import { createPublicClient, http, type Hex } from "viem"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { anchoredEvent } from "../../src/evm/chain.ts"
import { allEvents } from "../support/events.ts"
import { startAnvil, type Anvil } from "./anvil.ts"
import { allAnchored, call, deploy, freshDatabase, network, query, startEvmNode, statusesOf, waitFor, type EvmTestNode } from "./support.ts"

describe("chain writer", () => {
  let anvil: Anvil
  let pk: Hex
  let contract: Hex
  let chainId: number
  const nodes: Array<EvmTestNode> = []
  beforeAll(async () => {
    anvil = await startAnvil()
    pk = await anvil.fundedKey()
    const d = await deploy(anvil.rpcUrl, pk)
    contract = d.address
    chainId = d.chainId
  }, 60_000)
  afterAll(async () => {
    for (const n of nodes) await n.stop().catch(() => {})
    await anvil?.stop()
  })

  const start = async (networkId: string, options: { key?: Hex; databaseUrl?: string; stuckAfterMs?: number; maxAttempts?: number } = {}) => {
    const node = await startEvmNode({
      databaseUrl: options.databaseUrl,
      networks: [network({
        networkId,
        rpcUrl: anvil.rpcUrl,
        chainId,
        contractAddress: contract,
        confirmations: 1,
        batchWindowMs: 200,
        pollIntervalMs: 150,
        stuckAfterMs: options.stuckAfterMs ?? 30_000,
        maxAttempts: options.maxAttempts ?? 8
      }, options.key ?? pk)]
    })
    nodes.push(node)
    return node
  }

  it("replaces a stuck transaction with higher fees, and only one of them anchors", async () => {
    const node = await start("anvil-bump", { stuckAfterMs: 800 })
    const key = await node.createKey(await node.createAccount())
    await anvil.rpc("evm_setAutomine", [false])
    try {
      const id = (await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { stuck: true } } })).json.data.recordId
      const bumped = await waitFor("fee bump", async () => {
        const rows = await query<{ txHashes: Array<string>; maxFeePerGas: string; merkleRoot: Hex }>(node.databaseUrl,
          `SELECT tx_hashes AS "txHashes", max_fee_per_gas::text AS "maxFeePerGas", merkle_root AS "merkleRoot" FROM anchor_batches WHERE state = 'SENT'`)
        return rows[0] !== undefined && rows[0].txHashes.length >= 2 ? rows[0] : undefined
      }, 10_000)
      await anvil.rpc("evm_mine")
      await waitFor("ANCHORED", allAnchored(node.databaseUrl, [id]), 10_000)
      const batch = await query<{ txHash: string }>(node.databaseUrl, `SELECT tx_hash AS "txHash" FROM anchor_batches WHERE merkle_root = $1`, [
        bumped.merkleRoot
      ])
      expect(bumped.txHashes).toContain(batch[0].txHash)
      expect(batch[0].txHash).not.toBe(bumped.txHashes[0])
      const client = createPublicClient({ transport: http(anvil.rpcUrl) })
      const logs = await client.getLogs({ address: contract, event: anchoredEvent, args: { root: bumped.merkleRoot }, fromBlock: 0n, toBlock: "latest" })
      expect(logs).toHaveLength(1)
    } finally {
      await anvil.rpc("evm_setAutomine", [true])
      await nodes.pop()!.stop()
    }
  }, 30_000)

  it("fails a batch whose transaction keeps reverting: records FAILED with anchor.failed events", async () => {
    const stranger = await anvil.fundedKey() // funded, but without ANCHORER_ROLE
    const node = await start("anvil-norole", { key: stranger, maxAttempts: 3 })
    const key = await node.createKey(await node.createAccount())
    const ids: Array<string> = []
    for (let i = 0; i < 2; i++) ids.push((await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { norole: i } } })).json.data.recordId)
    await waitFor("FAILED", async () => [...(await statusesOf(node.databaseUrl, ids)).values()].every((s) => s === "FAILED"), 15_000)
    const events = await query<{ payload: any }>(node.databaseUrl, "SELECT payload FROM all_events WHERE kind = 'anchor.failed' AND record_id = ANY($1)", [ids])
    expect(events).toHaveLength(2)
    expect(events[0].payload.status).toBe("FAILED")
    expect(events[0].payload.reason).toMatch(/AccessControl|revert/i)
    // anchord_batches_failed_total (docs/metrics.md, the alert AnchordBatchesFailed): one batch given up.
    expect(await node.metricsText()).toMatch(/^anchord_batches_failed_total\{network="anvil-norole"\} 1$/m)
    await nodes.pop()!.stop()
  }, 30_000)

  it("revives a batch given up while its transaction was still pooled, once that transaction is mined", async () => {
    const node = await start("anvil-late", { stuckAfterMs: 300, maxAttempts: 2 })
    const key = await node.createKey(await node.createAccount())
    await anvil.rpc("evm_setAutomine", [false])
    try {
      const ids: Array<string> = []
      for (let i = 0; i < 2; i++) ids.push((await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { late: i } } })).json.data.recordId)
      await waitFor("FAILED", async () => [...(await statusesOf(node.databaseUrl, ids)).values()].every((s) => s === "FAILED"), 15_000)
      const [given] = await query<{ id: string; txHashes: Array<string>; merkleRoot: string }>(node.databaseUrl,
        `SELECT b.id::text AS id, b.tx_hashes AS "txHashes", b.merkle_root AS "merkleRoot" FROM anchor_batches b
         JOIN failed_anchors f ON f.batch_id = b.id WHERE f.record_id = $1 AND b.state = 'FAILED'`, [ids[0]])
      expect(given.txHashes.length).toBeGreaterThanOrEqual(2)
      expect((await call(node.baseUrl, "GET", `/v1/records/${ids[0]}`, { key })).json.data).toMatchObject({ status: "FAILED", anchors: [] })

      await anvil.rpc("evm_mine")
      await waitFor("ANCHORED after all", allAnchored(node.databaseUrl, ids), 10_000)
      const [batch] = await query<{ state: string; txHash: string; lastError: string }>(node.databaseUrl,
        `SELECT state, tx_hash AS "txHash", last_error AS "lastError" FROM anchor_batches WHERE id = $1`, [given.id])
      expect(batch.state).toBe("CONFIRMED")
      expect(given.txHashes).toContain(batch.txHash)
      expect(batch.lastError).toMatch(/^mined after it was given up \(not mined after 2 attempts\)$/)
      expect(await query(node.databaseUrl, "SELECT 1 FROM failed_anchors WHERE batch_id = $1", [given.id])).toHaveLength(0)
      // The client heard anchor.failed, then anchor.confirmed, for each record.
      const events = await allEvents(node.databaseUrl, ids)
      for (const id of ids) {
        const own = events.filter((e) => e.recordId === id)
        expect(own.map((e) => e.kind)).toEqual(["anchor.failed", "anchor.confirmed"])
        expect(own[1].payload).toMatchObject({ status: "ANCHORED", txHash: batch.txHash, merkleRoot: given.merkleRoot })
      }
      const view = (await call(node.baseUrl, "GET", `/v1/records/${ids[1]}`, { key })).json.data
      expect(view.status).toBe("ANCHORED")
      expect(view.anchors).toHaveLength(1)
      expect(view.anchors[0]).toMatchObject({ txHash: batch.txHash, merkleRoot: given.merkleRoot })
      expect(view.anchors[0].merkleProof).toHaveLength(1)
    } finally {
      await anvil.rpc("evm_setAutomine", [true])
      await nodes.pop()!.stop()
    }
  }, 40_000)

  it("elects one writer per network across nodes sharing the database; another takes over", async () => {
    const databaseUrl = await freshDatabase()
    const a = await start("anvil-shared", { databaseUrl })
    const b = await start("anvil-shared", { databaseUrl })
    const leaders = await waitFor("a leader", async () => {
      const l = [await a.isLeader(), await b.isLeader()]
      return l.some(Boolean) ? l : undefined
    })
    expect(leaders.filter(Boolean)).toHaveLength(1)
    const [leader, follower] = leaders[0] ? [a, b] : [b, a]
    const key = await leader.createKey(await leader.createAccount())
    const first = (await call(follower.baseUrl, "POST", "/v1/anchor", { key, body: { data: { shared: 1 } } })).json.data.recordId
    await waitFor("ANCHORED by the leader", allAnchored(databaseUrl, [first]))

    await leader.stop()
    nodes.splice(nodes.indexOf(leader), 1)
    const second = (await call(follower.baseUrl, "POST", "/v1/anchor", { key, body: { data: { shared: 2 } } })).json.data.recordId
    await waitFor("follower takes over", () => follower.isLeader(), 10_000)
    await waitFor("ANCHORED by the new leader", allAnchored(databaseUrl, [second]), 10_000)
  }, 30_000)
})
