/**
 * The outcome statement (DeliveryClaims.complete) finds its rows by primary key, whatever else is PENDING
 * (issue 26): written so that it matched the partial index of PENDING deliveries, it walked that whole index
 * per statement — a cost that grew with the in-flight claims and the backlog. Counted by PostgreSQL (heap
 * rows fetched through indexes in this transaction), not timed.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { beforeAll } from "vitest"
import { DeliveryClaims } from "../../src/webhooks/DeliveryClaims.ts"
import { WebhookStoresLayer } from "../../src/webhooks/stores.ts"
import { hexId, withDatabaseServices } from "../support/clock.ts"
import { freshDatabase } from "../support/db.ts"

let url = ""
beforeAll(async () => {
  url = await freshDatabase()
})

const OTHERS = 400

describe("outcome statement", () => {
  it.effect(`one outcome fetches its own row, not the ${OTHERS} other claims in flight`, () =>
    withDatabaseServices(() => url, WebhookStoresLayer)(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const claims = yield* DeliveryClaims
      const account = `acc_${hexId()}`
      yield* sql`INSERT INTO accounts (id, name, plan) VALUES (${account}, 'plan', 'ENTERPRISE')`
      yield* sql`
        INSERT INTO records (id, account_id, environment, hash, chain_type, network_id, package_mode, source, webhook_url)
        SELECT lpad(to_hex(g), 24, '0'), ${account}, 'test', ${"ab".repeat(32)}, 'evm', 'evm-test', 'SEPARATED', 'hash', 'http://127.0.0.1:9/hook'
        FROM generate_series(0, ${OTHERS}) g`
      // one delivery per record (the events trigger), all claimed: OTHERS by other nodes, one by us
      yield* sql`
        INSERT INTO events (event_id, account_id, record_id, kind, payload)
        SELECT 'evt_' || id, account_id, id, 'record.updated', '{}'::jsonb FROM records WHERE account_id = ${account}`
      // The statistics as a busy table has them: last analysed when few of its rows were PENDING (most are
      // finished), so the partial index of PENDING deliveries looks nearly empty to the planner.
      yield* sql`UPDATE webhook_deliveries SET state = 'SUCCEEDED', next_attempt_at = NULL`
      yield* sql`VACUUM ANALYZE webhook_deliveries`
      yield* sql`
        UPDATE webhook_deliveries SET state = 'PENDING', claim_token = CASE WHEN record_id = lpad('0', 24, '0') THEN 'mine' ELSE 'other' END,
          locked_by = 'node-x', locked_until = now() + interval '1 minute', next_attempt_at = now() + interval '1 minute'`
      const [mine] = yield* sql<{ seq: string }>`SELECT seq::text AS seq FROM webhook_deliveries WHERE claim_token = 'mine'`
      const fetched = sql<{ n: number }>`
        SELECT idx_tup_fetch::int AS n FROM pg_stat_xact_user_tables WHERE relname = 'webhook_deliveries'`
      const [done, delta] = yield* sql.withTransaction(Effect.gen(function*() {
        const before = (yield* fetched)[0]?.n ?? 0
        const done = yield* claims.complete([{
          seq: mine.seq,
          token: "mine",
          round: 0,
          attempt: 0,
          startedAt: new Date(),
          statusCode: 200,
          latencyMs: 3,
          error: null,
          ok: true,
          retryInMillis: null
        }], "node-a")
        return [done, ((yield* fetched)[0]?.n ?? 0) - before] as const
      }))
      assert.deepStrictEqual(done.map((d) => d.state), ["SUCCEEDED"])
      assert.isAtMost(delta, 5, `rows fetched through indexes by one outcome: ${delta}`)
    })))
})
