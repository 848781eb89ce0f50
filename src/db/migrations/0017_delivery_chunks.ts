import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A fan-out row is sent as one chunk under a lease (docs/webhooks.md "Chunks"): the dispatcher leases
 * the records it takes (the row, or a row split off it), renders and sends them, and writes their outcomes once,
 * in one transaction that inserts each record's delivery row already finished (or PENDING on the retry ladder when
 * its first attempt failed) and deletes the leased row. Per record delivered at its first attempt that is one row
 * write (the INSERT) instead of two (an INSERT claimed, then the outcome's non-HOT UPDATE).
 *
 * Crash safety: a node killed mid-chunk leaves the leased row; when its lease expires another node (or this one,
 * restarted) takes the row again and sends the whole chunk again. Nothing is lost; records already received are
 * received twice (at-least-once, as a lost outcome always was).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    ALTER TABLE webhook_fanouts
      ADD COLUMN locked_until timestamptz,
      ADD COLUMN locked_by    text,
      ADD COLUMN claim_token  text`
})
