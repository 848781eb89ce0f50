import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * For lists filtered by status at 1M records (docs/design/per-batch-model.md, "Status filters
 * without a probe per record in flight"): `anchor_batches.max_insert_xid`, the newest `records.insert_xid`
 * among the batch's records, written once per batch by the cut that makes it (raised when records join
 * it), never per record.
 *
 * With it, a record in its network's queue (at or after its cursor) has an anchor only if it is in a
 * batch whose `max_insert_xid` reaches that cursor: the few recent batches. So `?status=ANCHORED` and
 * the QUEUED counts tell the records in flight apart by their row and two small hashed sets (the open
 * batches' anchors, the recent batches' anchors) instead of probing each one's anchors
 * (src/anchoring/recordState.ts).
 *
 * NULL means unknown (a batch written by a node not yet upgraded, or by a test's own INSERT): its
 * anchors are always read as recent, which is exact, only slower. Existing batches take the newest
 * `insert_xid` of their anchors' records, kept ones of a given-up batch included (it may be mined after
 * all and get them back); 0 when there are none (dropped: its anchors are gone for good).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE anchor_batches ADD COLUMN max_insert_xid numeric`
  yield* sql`
    UPDATE anchor_batches b SET max_insert_xid = COALESCE(x.m, 0)
    FROM (SELECT b2.id, (SELECT max(r.insert_xid) FROM (
              SELECT a.record_id FROM anchors a WHERE a.batch_id = b2.id
              UNION ALL SELECT fa.record_id FROM failed_anchors fa WHERE fa.batch_id = b2.id) a
            JOIN records r ON r.id = a.record_id) AS m
          FROM anchor_batches b2) x
    WHERE x.id = b.id`
  yield* sql`CREATE INDEX anchor_batches_max_insert_xid ON anchor_batches (max_insert_xid)`
})
