// Hybrid records need an EVM and a Fabric anchor: the EVM side alone leaves them short of
// ANCHORED; once a (simulated) Fabric anchor is confirmed too, they become ANCHORED with one
// anchor.confirmed event. The Fabric side is simulated with rows, until the Fabric issue lands.
//   npx vitest run test/evm/hybrid.test.ts
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AnchorStore } from "../../src/batching/AnchorStore.ts"
import { startAnvil, type Anvil } from "./anvil.ts"
import { call, deploy, network, query, sleep, startEvmNode, waitFor, type EvmTestNode } from "./support.ts"

describe("hybrid records", () => {
  let anvil: Anvil
  let node: EvmTestNode
  let key: string
  beforeAll(async () => {
    anvil = await startAnvil()
    const pk = await anvil.fundedKey()
    const d = await deploy(anvil.rpcUrl, pk)
    node = await startEvmNode({
      networks: [network({
        networkId: "anvil-hybrid", rpcUrl: anvil.rpcUrl, chainId: d.chainId, contractAddress: d.address,
        confirmations: 1, batchWindowMs: 200, pollIntervalMs: 150
      }, pk)]
    })
    key = await node.createKey(await node.createAccount())
  }, 60_000)
  afterAll(async () => {
    await node?.stop()
    await anvil?.stop()
  })

  it("becomes ANCHORED only when both anchors are confirmed", async () => {
    const r = await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { hybrid: true }, chain: "hybrid" } })
    expect(r.status).toBe(202)
    const id = r.json.data.recordId
    expect(r.json.data.networkId).toBe("anvil-hybrid")
    // The EVM anchor is confirmed ...
    await waitFor("EVM anchor confirmed", async () =>
      (await query(node.databaseUrl, "SELECT 1 FROM anchors WHERE record_id = $1 AND chain_type = 'evm' AND confirmed", [id])).length === 1)
    await sleep(500)
    const view = (await call(node.baseUrl, "GET", `/v1/records/${id}`, { key })).json.data
    expect(view.status).toBe("QUEUED") // waiting for its Fabric batch
    expect(view.anchors).toHaveLength(1)
    expect(view.anchors[0].chainType).toBe("evm")
    expect((await call(node.baseUrl, "GET", `/v1/records/${id}/proof`, { key })).status).toBe(409)
    expect(await query(node.databaseUrl, "SELECT 1 FROM events WHERE record_id = $1", [id])).toHaveLength(0)
    // ... and the EVM batcher does not claim it again.
    expect(await query(node.databaseUrl, "SELECT 1 FROM anchors WHERE record_id = $1", [id])).toHaveLength(1)

    // A Fabric batch for it (as the Fabric batcher will write it), mined, then confirmed.
    const hash = view.hash
    const [fabric] = await query<{ id: string }>(node.databaseUrl, `
      INSERT INTO anchor_batches (network_id, chain_type, merkle_root, leaf_count, state, tx_hash, chain_batch_id, block_number, anchored_at)
      VALUES ('fabric-dev', 'fabric', $1, 1, 'MINED', 'fabrictx01', 7, 12, now()) RETURNING id::text AS id`, ["0x" + "ab".repeat(32)])
    await query(node.databaseUrl, `
      INSERT INTO anchors (record_id, network_id, chain_type, batch_id, leaf_index, merkle_proof) VALUES ($1, 'fabric-dev', 'fabric', $2, 0, '{}')`,
      [id, fabric.id])
    await query(node.databaseUrl, "UPDATE records SET status = 'BATCHING' WHERE id = $1", [id])
    const anchored = await Effect.runPromise(Effect.gen(function*() {
      const store = yield* AnchorStore
      return yield* store.confirm(fabric.id)
    }).pipe(Effect.provide(AnchorStore.layer.pipe(Layer.provide(PgClient.layer({
      url: Redacted.make(node.databaseUrl), transformResultNames: (s) => s.replace(/_([a-z])/g, (_, c) => c.toUpperCase())
    })))), Effect.scoped))
    expect(anchored).toBe(1)
    const after = (await call(node.baseUrl, "GET", `/v1/records/${id}`, { key })).json.data
    expect(after.status).toBe("ANCHORED")
    expect(after.anchors.map((a: any) => a.chainType).sort()).toEqual(["evm", "fabric"])
    const events = await query<{ payload: any }>(node.databaseUrl, "SELECT payload FROM events WHERE record_id = $1 AND kind = 'anchor.confirmed'", [id])
    expect(events).toHaveLength(1)
    expect(events[0].payload.networkId).toBe("anvil-hybrid")
    expect(events[0].payload.txHash).toMatch(/^0x/) // primary = the EVM anchor
    expect(events[0].payload.anchors).toHaveLength(2)
    expect(hash).toMatch(/^[0-9a-f]{64}$/)
  }, 30_000)
})
