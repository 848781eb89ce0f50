// A reorganisation (anvil evm_snapshot / evm_revert) removes the block of a mined, not yet
// confirmed batch: the batch is DROPPED, its records go back to QUEUED and are anchored again.
//   npx vitest run test/evm/reorg.test.ts
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startAnvil, type Anvil } from "./anvil.ts"
import { allAnchored, call, deploy, network, query, startEvmNode, waitFor, type EvmTestNode } from "./support.ts"

describe("reorg", () => {
  let anvil: Anvil
  let node: EvmTestNode
  let key: string
  beforeAll(async () => {
    anvil = await startAnvil()
    const pk = await anvil.fundedKey()
    const d = await deploy(anvil.rpcUrl, pk)
    node = await startEvmNode({
      networks: [network({
        networkId: "anvil-reorg",
        rpcUrl: anvil.rpcUrl,
        chainId: d.chainId,
        contractAddress: d.address,
        confirmations: 3,
        batchWindowMs: 200,
        pollIntervalMs: 150
      }, pk)]
    })
    key = await node.createKey(await node.createAccount())
  }, 60_000)
  afterAll(async () => {
    await node?.stop()
    await anvil?.stop()
  })

  it("sends records of a reorganised batch back to QUEUED and re-anchors them", async () => {
    const snapshot = await anvil.rpc("evm_snapshot")
    const ids: Array<string> = []
    for (let i = 0; i < 3; i++) {
      ids.push((await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { reorg: i } } })).json.data.recordId)
    }
    const mined = await waitFor("batch MINED", async () => {
      const rows = await query<{ id: string; blockNumber: string; txHash: string }>(node.databaseUrl,
        `SELECT id::text AS id, block_number::text AS "blockNumber", tx_hash AS "txHash" FROM anchor_batches WHERE state = 'MINED'`)
      return rows[0]
    })
    const statuses = await query<{ status: string }>(node.databaseUrl, "SELECT status FROM record_states WHERE id = ANY($1)", [ids])
    expect(statuses.every((r) => r.status === "BATCHING")).toBe(true)

    // Reorg: back to before the batch, the pool emptied, and a different block at that height.
    await anvil.rpc("evm_revert", [snapshot])
    await anvil.rpc("anvil_dropAllTransactions")
    await anvil.rpc("evm_setAutomine", [false])
    await anvil.rpc("evm_mine")
    await anvil.rpc("evm_mine")

    const dropped = await waitFor("batch DROPPED", async () => {
      const rows = await query<{ state: string; lastError: string }>(node.databaseUrl,
        `SELECT state, last_error AS "lastError" FROM anchor_batches WHERE id = $1`, [mined.id])
      return rows[0]?.state === "DROPPED" ? rows[0] : undefined
    })
    expect(dropped.lastError).toMatch(/reorganised out of block/)
    // Its records left it (back to QUEUED, then into a new batch): no anchor row points to it any more.
    expect(await query(node.databaseUrl, "SELECT 1 FROM anchors WHERE batch_id = $1", [mined.id])).toHaveLength(0)
    // Re-queued, re-batched and re-sent: mine blocks until confirmed at depth 3.
    await anvil.rpc("evm_setAutomine", [true])
    const miner = setInterval(() => void anvil.rpc("evm_mine").catch(() => {}), 250)
    try {
      await waitFor("re-anchored", allAnchored(node.databaseUrl, ids), 20_000)
    } finally {
      clearInterval(miner)
    }
    const anchors = await query<{ batchId: string }>(node.databaseUrl, `SELECT DISTINCT batch_id::text AS "batchId" FROM anchors WHERE record_id = ANY($1)`, [
      ids
    ])
    expect(anchors).toHaveLength(1)
    expect(anchors[0].batchId).not.toBe(mined.id)
    const view = await call(node.baseUrl, "GET", `/v1/records/${ids[0]}`, { key })
    expect(view.json.data.status).toBe("ANCHORED")
    expect(view.json.data.anchors).toHaveLength(1)
    const events = await query(node.databaseUrl, "SELECT 1 FROM all_events WHERE kind = 'anchor.confirmed' AND record_id = ANY($1)", [ids])
    expect(events).toHaveLength(ids.length)
  }, 30_000)
})
