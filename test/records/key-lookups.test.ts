/**
 * Lookups by key read their row, whatever the statistics (issue 25). A node started on a fresh
 * database with autovacuum off prepares its statements while the tables are empty; PostgreSQL keeps the
 * plan it makes then for the connection's life, and for `id = $1 AND account_id = $2 AND
 * environment = $3` on an empty table the owner's index (records_hash) is as cheap as the primary key.
 * Once the account had 18,448 records, GET /v1/records/{id} walked all of them (430 ms a lookup). Here:
 * the same on real PostgreSQL, counting the index entries each lookup read (pg_stat_xact_*).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { beforeAll } from "vitest"
import { RecordStore } from "../../src/records/RecordStore.ts"
import { DeliveryLog } from "../../src/webhooks/DeliveryLog.ts"
import { hexId, withDatabaseServices } from "../support/clock.ts"
import { freshDatabase } from "../support/db.ts"

let url = ""
beforeAll(async () => {
  url = await freshDatabase()
})
const withStores = withDatabaseServices(() => url, Layer.mergeAll(RecordStore.layer, DeliveryLog.layer))

const MANY = 20_000
/** More than PostgreSQL's five custom plans before it settles on a generic one. */
const WARM = 8

describe("lookups by key on a database without statistics (real PostgreSQL)", () => {
  it.effect("read a few index entries each, not the account's rows", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const records = yield* RecordStore
      const deliveries = yield* DeliveryLog
      for (const table of ["records", "webhook_deliveries", "events"]) {
        yield* sql.unsafe(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`)
      }
      const account = `acc_${hexId()}`
      yield* sql`INSERT INTO accounts (id, name, plan) VALUES (${account}, 'plan', 'ENTERPRISE')`
      const owner = { accountId: account, environment: "test" as const }
      const indexReads = (table: string) =>
        sql<{ n: number }>`
          SELECT coalesce(sum(pg_stat_get_xact_tuples_returned(indexrelid)), 0)::int
            + pg_stat_get_xact_tuples_returned(${table}::regclass)::int AS n
          FROM pg_index WHERE indrelid = ${table}::regclass`.pipe(Effect.map((rows) => rows[0]!.n))

      // One connection (a transaction), as a node's pooled connection: its statements are prepared while
      // the tables are empty, then the account grows without an ANALYZE, then the same statements run.
      const reads = yield* sql.withTransaction(Effect.gen(function*() {
        for (let i = 0; i < WARM; i++) {
          yield* records.get(owner, hexId(), false)
          yield* deliveries.get(owner, `whd_${hexId()}`)
          yield* deliveries.redeliver(owner, `whd_${hexId()}`)
        }
        yield* sql`
          INSERT INTO records (id, account_id, environment, hash, status, chain_type, network_id, package_mode, source)
          SELECT lpad(to_hex(i), 24, '0'), ${account}, 'test', md5(i::text) || md5((-i)::text), 'QUEUED', 'evm', 'evm-keys',
            'SEPARATED', 'hash'
          FROM generate_series(1, ${MANY}) i`
        const [event] = yield* sql<{ id: string }>`
          INSERT INTO events (event_id, account_id, record_id, kind, payload)
          VALUES (${`evt_${hexId()}`}, ${account}, ${"0".repeat(23) + "1"}, 'record.updated', '{}') RETURNING id::text AS id`
        yield* sql`
          INSERT INTO webhook_deliveries (id, event_seq, event_id, account_id, record_id, environment, target, url, host, state)
          SELECT 'whd_' || lpad(to_hex(i), 24, '0'), ${event!.id}::bigint, 'evt', ${account}, lpad(to_hex(i), 24, '0'), 'test',
            'account', 'https://receiver.test/hook', 'receiver.test', 'FAILED'
          FROM generate_series(1, ${MANY}) i`
        const id = lpad(MANY / 2)

        const r0 = yield* indexReads("records")
        const found = yield* records.get(owner, id, false)
        const record = (yield* indexReads("records")) - r0
        assert.strictEqual(found._tag, "Found")

        const d0 = yield* indexReads("webhook_deliveries")
        const delivery = yield* deliveries.get(owner, `whd_${id}`)
        const deliveryReads = (yield* indexReads("webhook_deliveries")) - d0
        assert.strictEqual(delivery?.recordId, id)

        const q0 = yield* indexReads("webhook_deliveries")
        const requeued = yield* deliveries.redeliver(owner, `whd_${id}`)
        const redeliverReads = (yield* indexReads("webhook_deliveries")) - q0
        assert.strictEqual(requeued?.state, "PENDING")
        return { record, delivery: deliveryReads, redeliver: redeliverReads }
      }))
      // The row itself through its key (and the counting statement's own catalogue reads are not here).
      assert.isAtMost(reads.record, 3, `records entries read by GET /v1/records/{id}: ${reads.record}`)
      assert.isAtMost(reads.delivery, 3, `webhook_deliveries entries read by a delivery's lookup: ${reads.delivery}`)
      assert.isAtMost(reads.redeliver, 8, `webhook_deliveries entries read by a redelivery: ${reads.redeliver}`)
    }).pipe(withStores), 120_000)
})

const lpad = (i: number) => i.toString(16).padStart(24, "0")
