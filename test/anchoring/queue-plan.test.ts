/**
 * The batcher's look at its queue reads the queue, not the table. With a backlog behind many anchored
 * records, PostgreSQL planned the old NOT EXISTS form as a merge anti-join over the whole `records`
 * primary key and every anchor of the network: one look took 0.5–49 s at 2,000 records/s and the
 * batcher stalled (docs/benchmarks.md, 2026-11-25 night). The rows a statement read are counted by
 * PostgreSQL itself for the current transaction (pg_stat_xact_*), on real PostgreSQL.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { beforeAll } from "vitest"
import { BatchStore } from "../../src/anchoring/BatchStore.ts"
import { hexId, withDatabaseServices } from "../support/clock.ts"
import { freshDatabase } from "../support/db.ts"

let url = ""
beforeAll(async () => {
  url = await freshDatabase()
})
const withStore = withDatabaseServices(() => url, BatchStore.layer)

const ANCHORED = 60_000
const QUEUED = 40_000
const MAX = 10_000

describe("the batcher's queue statements (real PostgreSQL)", () => {
  it.effect("read about the rows they return, however many records are anchored before them", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const store = yield* BatchStore
      const net = `evm-plan-${hexId(6)}`
      const account = `acc_${hexId()}`
      yield* sql`INSERT INTO accounts (id, name, plan) VALUES (${account}, 'plan', 'ENTERPRISE')`
      const [batch] = yield* sql<{ id: string }>`
        INSERT INTO anchor_batches (network_id, chain_type, merkle_root, leaf_count, state)
        VALUES (${net}, 'evm', ${`0x${hexId(64)}`}, ${ANCHORED}, 'CONFIRMED') RETURNING id::text AS id`
      // Ids in creation order, as the node makes them: the anchored ones first, then the backlog.
      yield* sql`
        INSERT INTO records (id, account_id, environment, hash, status, chain_type, network_id, package_mode, source, created_at)
        SELECT lpad(to_hex(i), 24, '0'), ${account}, 'test', md5(i::text) || md5((-i)::text),
          'QUEUED', 'evm', ${net}, 'SEPARATED', 'hash',
          now() - interval '1 hour' + i * interval '1 millisecond'
        FROM generate_series(1, ${ANCHORED + QUEUED}) i`
      yield* sql`
        INSERT INTO anchors (record_id, network_id, chain_type, batch_id, leaf_index, merkle_proof)
        SELECT lpad(to_hex(i), 24, '0'), ${net}, 'evm', ${batch!.id}, i - 1, '{}' FROM generate_series(1, ${ANCHORED}) i`
      yield* sql`ANALYZE records`
      yield* sql`ANALYZE anchors`
      // The batcher's first look makes the network's queue cursor (migration 0016), once per network;
      // every look after it reads the queue from there.
      yield* store.queueState(net, 1)

      // Entries read from each table's indexes and rows read by scans of the table itself, as this
      // session counts them until its next report (so: after minus before, inside one transaction).
      const counts = sql<{ records: number; anchors: number }>`
        SELECT
          (SELECT sum(pg_stat_get_xact_tuples_returned(indexrelid)) FROM pg_index WHERE indrelid = 'records'::regclass)::int AS records,
          ((SELECT sum(pg_stat_get_xact_tuples_returned(indexrelid)) FROM pg_index WHERE indrelid = 'anchors'::regclass)
            + pg_stat_get_xact_tuples_returned('anchors'::regclass))::int AS anchors`
      const reads = yield* sql.withTransaction(Effect.gen(function*() {
        const [before] = yield* counts
        const state = yield* store.queueState(net, MAX)
        const [after] = yield* counts
        return { state, records: after!.records - before!.records, anchors: after!.anchors - before!.anchors }
      }))
      assert.strictEqual(reads.state.count, MAX)
      // The first of the backlog, created right after the last anchored one.
      assert.isNotNull(reads.state.oldest)
      // The queue index's first MAX entries (and a few dead ones at most); nothing of the anchored rows.
      assert.isAtMost(reads.records, MAX + 100, `records index entries read: ${reads.records}`)
      assert.isAtMost(reads.anchors, 100, `anchors read: ${reads.anchors}`)
    }).pipe(withStore), 60_000)
})
