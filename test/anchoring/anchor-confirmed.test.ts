/**
 * An anchor is confirmed exactly when its batch is CONFIRMED (migration 0019: read from
 * `anchor_batches.state`, no per-anchor flag written at confirmation). A MINED batch's anchor is shown
 * without `anchoredAt` and is not in the proof bundle; once the batch is CONFIRMED it has both; a
 * dropped (reorganised) batch's anchors are gone and the record reads QUEUED again. The record view
 * and the events' anchor (both src/anchoring/anchorViews.ts: SQL holds no copy since migration 0024) agree.
 *   npx vitest run test/anchoring/anchor-confirmed.test.ts
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { beforeAll } from "vitest"
import { anchorReads, proofBundle, toAnchor, toEventAnchor } from "../../src/anchoring/anchorViews.ts"
import { BatchStore } from "../../src/anchoring/BatchStore.ts"
import { pgClientLayer } from "../../src/db/Database.ts"
import { migrations } from "../../src/db/migrations/index.ts"
import { RecordStore } from "../../src/records/RecordStore.ts"
import { freshDatabase } from "../support/db.ts"
import { migrateTo } from "../support/migrations.ts"

let url = ""
beforeAll(async () => {
  url = await freshDatabase()
})

const recordId = "0".repeat(23) + "1"
const owner = { accountId: "acc_conf", environment: "test" } as const
const T1 = new Date("2026-11-01T10:00:00.000Z")

describe("an anchor's confirmation, read from its batch", () => {
  it.effect("MINED: no anchoredAt, not in the proof; CONFIRMED: both; dropped: gone, the record QUEUED", () =>
    Effect.gen(function*() {
      yield* migrateTo(url, Object.keys(migrations))
      const sql = yield* SqlClient.SqlClient
      const store = yield* RecordStore
      const batches = yield* BatchStore
      yield* sql`INSERT INTO accounts (id, name, plan) VALUES ('acc_conf', 'conf', 'ENTERPRISE')`
      yield* sql`INSERT INTO records (id, account_id, environment, hash, chain_type, network_id, package_mode, source)
        VALUES (${recordId}, 'acc_conf', 'test', ${"ab".repeat(32)}, 'evm', 'net', 'SEPARATED', 'hash')`
      const [batch] = yield* sql<{ id: string }>`
        INSERT INTO anchor_batches (network_id, chain_type, merkle_root, leaf_count, state, chain_id, contract_address,
          chain_batch_id, tx_hash, block_number, block_hash, anchored_at)
        VALUES ('net', 'evm', ${`0x${"c1".repeat(32)}`}, 1, 'MINED', 31337, ${`0x${"aa".repeat(20)}`}, 3,
          ${`0x${"11".repeat(32)}`}, 42, ${`0x${"bb".repeat(32)}`}, ${T1})
        RETURNING id::text AS id`
      yield* sql`INSERT INTO anchors (record_id, network_id, chain_type, batch_id, leaf_index, merkle_proof)
        VALUES (${recordId}, 'net', 'evm', ${batch!.id}, 0, '{}')`

      // What the view, the proof bundle and the events (their one assembly, migration 0024) say of the record's anchor.
      const seen = Effect.gen(function*() {
        const anchors = (yield* anchorReads(sql).loadAnchors([recordId])).get(recordId) ?? []
        const found = yield* store.get(owner, recordId, false)
        return {
          view: anchors.map((a) => toAnchor(a).anchoredAt),
          proof: proofBundle({ id: recordId, hash: "ab".repeat(32) }, anchors).anchors.map((a) => a.anchoredAt),
          event: anchors[0] === undefined ? "none" : toEventAnchor(anchors[0]).anchoredAt,
          status: found._tag === "Found" ? found.row.status : found._tag
        }
      })

      assert.deepStrictEqual(yield* seen, { view: [null], proof: [], event: null, status: "BATCHING" })
      assert.strictEqual(yield* batches.confirm(batch!.id), 1)
      assert.deepStrictEqual(yield* seen, { view: [T1.toISOString()], proof: [T1.toISOString()], event: T1.toISOString(), status: "ANCHORED" })
      // Reorganised out: the batch is reset, its anchors go, and nothing about the record says confirmed.
      yield* batches.drop(batch!.id, "reorg")
      assert.deepStrictEqual(yield* seen, { view: [], proof: [], event: "none", status: "QUEUED" })
    }).pipe(
      Effect.provide(Layer.mergeAll(RecordStore.layer, BatchStore.layer).pipe(Layer.provideMerge(Layer.suspend(() => pgClientLayer(Redacted.make(url))))))
    ))
})
