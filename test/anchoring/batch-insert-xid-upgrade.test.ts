/**
 * Migration 0020 over existing batches: each batch's `max_insert_xid` is the newest `insert_xid` of its
 * records — its anchors', and a given-up batch's kept ones (failed_anchors: it may be mined after all and
 * get them back) — and 0 for a batch with none (dropped). A record of a batch cut behind its network's
 * cursor is then found by the status filters exactly as the plain state says.
 *   npx vitest run test/anchoring/batch-insert-xid-upgrade.test.ts
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { beforeAll } from "vitest"
import { pgClientLayer } from "../../src/db/Database.ts"
import { migrations } from "../../src/db/migrations/index.ts"
import { RecordStore } from "../../src/records/RecordStore.ts"
import { freshDatabase } from "../support/db.ts"
import { migrateTo } from "../support/migrations.ts"

let url = ""
beforeAll(async () => {
  url = await freshDatabase()
})

const id = (n: number) => n.toString(16).padStart(24, "0")
const owner = { accountId: "acc_x", environment: "test" } as const

describe("migration 0020 over existing batches", () => {
  it.effect("max_insert_xid from the batch's records (anchors and kept failed anchors), 0 without any; filters exact after", () =>
    Effect.gen(function*() {
      yield* migrateTo(url, Object.keys(migrations).filter((name) => name < "0020"))
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO accounts (id, name, plan) VALUES ('acc_x', 'x', 'ENTERPRISE')`
      // Records 1–2 in one transaction, 3–4 in a later one (each its own insert_xid).
      for (const ns of [[1, 2], [3, 4]]) {
        yield* sql.withTransaction(Effect.forEach(ns, (n) =>
          sql`INSERT INTO records (id, account_id, environment, hash, chain_type, network_id, package_mode, source, status)
            VALUES (${id(n)}, 'acc_x', 'test', ${"ab".repeat(32)}, 'evm', 'net', 'SEPARATED', 'hash', ${n === 4 ? "FAILED" : "QUEUED"})`))
      }
      const batch = (state: string, root: string) =>
        sql<{ id: string }>`
          INSERT INTO anchor_batches (network_id, chain_type, merkle_root, leaf_count, state, anchored_at, confirmed_at)
          VALUES ('net', 'evm', ${`0x${root.repeat(32)}`}, 1, ${state}, now(), now()) RETURNING id::text AS id`.pipe(Effect.map((r) =>
          r[0]!.id
        ))
      const confirmed = yield* batch("CONFIRMED", "c1")
      const failed = yield* batch("FAILED", "c2")
      const dropped = yield* batch("DROPPED", "c3")
      // Record 3 (the later transaction) anchored in the confirmed batch with record 1; record 4's anchor kept by the failed batch.
      for (const n of [1, 3]) {
        yield* sql`INSERT INTO anchors (record_id, network_id, chain_type, batch_id, leaf_index, merkle_proof)
          VALUES (${id(n)}, 'net', 'evm', ${confirmed}, 0, '{}')`
      }
      yield* sql`INSERT INTO failed_anchors (batch_id, record_id, network_id, chain_type, leaf_index, merkle_proof)
        VALUES (${failed}, ${id(4)}, 'net', 'evm', 0, '{}')`
      // The network's cursor at record 2 (its transaction): record 3 was cut behind it.
      yield* sql`INSERT INTO queue_cursors (network_id, after_xid, after_id)
        SELECT 'net', insert_xid, id FROM records WHERE id = ${id(2)} ON CONFLICT (network_id) DO UPDATE SET after_xid = EXCLUDED.after_xid,
          after_id = EXCLUDED.after_id`

      yield* migrateTo(url, Object.keys(migrations))
      const xids = yield* sql<{ id: string; xid: string }>`SELECT id::text AS id, insert_xid::text AS xid FROM records ORDER BY id`
      const [got] = yield* sql<{ confirmed: string; failed: string; dropped: string }>`
        SELECT (SELECT max_insert_xid::text FROM anchor_batches WHERE id = ${confirmed}) AS confirmed,
          (SELECT max_insert_xid::text FROM anchor_batches WHERE id = ${failed}) AS failed,
          (SELECT max_insert_xid::text FROM anchor_batches WHERE id = ${dropped}) AS dropped`
      assert.deepStrictEqual(got, { confirmed: xids[2]!.xid, failed: xids[3]!.xid, dropped: "0" })
      assert.notStrictEqual(xids[0]!.xid, xids[2]!.xid)

      const store = yield* RecordStore
      const list = (status: string) => store.list(owner, { limit: 10, status, includeDeleted: false }).pipe(Effect.map((rows) => rows.map((r) => r.id)))
      // Record 3 is in its network's queue (after the cursor) yet ANCHORED: found through its recent batch.
      assert.deepStrictEqual(yield* list("ANCHORED"), [id(3), id(1)])
      assert.deepStrictEqual(yield* list("QUEUED"), [id(2)])
      assert.deepStrictEqual(yield* list("FAILED"), [id(4)])
    }).pipe(Effect.provide(RecordStore.layer.pipe(Layer.provideMerge(Layer.suspend(() => pgClientLayer(Redacted.make(url))))))))
})
