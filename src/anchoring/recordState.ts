/**
 * A record's state, read rather than stored (docs/design/per-batch-model.md part 2): `records.status`
 * holds what a record-level event set (QUEUED, FAILED); BATCHING, ANCHORED and `anchoredAt` come from
 * the record's anchors and their batches through `anchord_record_state`. Every reader of a record's
 * state goes through these fragments (the record reads and lists, their `status=` filter, the
 * console's counts, webhook renders, the confirmation itself): the records' alias is always `r`.
 *
 * Here (anchoring), not in records/: the webhook renders (below records in the folder order) read it too.
 */
import type { SqlClient } from "effect/sql"

/** Joined after `records r`: `st.status` and `st.anchored_at`. */
export const stateJoin = (sql: SqlClient.SqlClient) => sql`CROSS JOIN LATERAL anchord_record_state(r.id, r.status, r.chain_type) st`

/** The columns of a `RecordRow` (src/records/model.ts), its state read (needs `stateJoin`). */
export const recordColumns = (sql: SqlClient.SqlClient) =>
  sql`r.id, r.account_id, r.environment, r.hash, st.status, r.chain_type, r.network_id, r.package_mode, r.collection,
    r.source, r.data_jcs, r.ciphertext, r.nonce, r.auth_tag, r.metadata, r.webhook_url, r.created_at, r.updated_at,
    st.anchored_at, r.deleted_at, r.hard_deleted, r.salted`

/** The oldest queue cursor (`queue_cursors`): an initplan, indexable against `records_queue`. */
const oldestCursor = (sql: SqlClient.SqlClient) => sql`(SELECT COALESCE(min(after_xid), 0) FROM queue_cursors)`

/** Every network's cursor by network id: an initplan (one read of a table of a row per network), looked up per row in memory. */
const cursorsByNetwork = (sql: SqlClient.SqlClient) => sql`(SELECT jsonb_object_agg(network_id, after_xid::text) FROM queue_cursors)`

/**
 * Records that may still be QUEUED: at or after the oldest queue cursor (src/anchoring/BatchStore.ts);
 * every record before every network's cursor is in a batch or FAILED. An index range of
 * `records_queue`, as long as the slowest network's backlog (a network whose batcher never ran holds no
 * cursor and is not counted until it does).
 */
export const mayBeQueued = (sql: SqlClient.SqlClient) => sql`r.status = 'QUEUED' AND r.insert_xid >= ${oldestCursor(sql)}`

/**
 * The same, for counts: with an upper bound above every transaction id, a range the planner estimates
 * small, so it reads `records_queue`'s range. A parameter's `>=` alone is estimated at a third of the
 * table, which then gets scanned whole or ANDed with a whole index; but a list wants that estimate: it
 * then walks its own index newest first and stops at the page, where a small queue estimate makes it
 * read the whole queue and sort it (13.7k buffers at 1M records instead of 160, docs/benchmarks.md).
 */
export const mayBeQueuedRange = (sql: SqlClient.SqlClient) => sql`${mayBeQueued(sql)} AND r.insert_xid < 1e30`

/**
 * Of those, the records at or after their own network's cursor too (a hybrid record: the oldest
 * cursor, as its Fabric network is configuration). A record before it was cut by its network: it has
 * its anchor, so it is BATCHING or ANCHORED (docs/design/per-batch-model.md,
 * "Status filters without a probe per record in flight").
 */
const inOwnQueue = (sql: SqlClient.SqlClient, listed: boolean) =>
  sql`${listed ? mayBeQueued(sql) : mayBeQueuedRange(sql)} AND (r.chain_type = 'hybrid'
    OR r.insert_xid >= COALESCE((${cursorsByNetwork(sql)} ->> r.network_id)::numeric, 0))`

/** Records that may be BATCHING: those with an anchor in a batch not yet confirmed (index `anchor_batches_open`). */
const openBatchAnchors = (sql: SqlClient.SqlClient) =>
  sql`SELECT a.record_id FROM anchor_batches b JOIN anchors a ON a.batch_id = b.id WHERE b.state IN ('PENDING', 'SENT', 'MINED')`
export const mayBeBatching = (sql: SqlClient.SqlClient) => sql`r.id IN (${openBatchAnchors(sql)})`

/**
 * Records with an anchor in a batch cut at or after its network's cursor (`anchor_batches.max_insert_xid`:
 * the newest `insert_xid` among the batch's records; unknown, NULL, counts as recent). A
 * non-hybrid record in its own queue (`inOwnQueue`) that has its anchor is one of these: its batch holds
 * it, so the batch's newest record is at least as new. The batches read: those of the index range from
 * the oldest cursor (the newest few per network; a range, see `mayBeQueuedRange`), each compared with
 * its network's cursor.
 */
const recentBatchAnchors = (sql: SqlClient.SqlClient) =>
  sql`SELECT a.record_id FROM anchor_batches b JOIN anchors a ON a.batch_id = b.id
    WHERE b.max_insert_xid IS NULL OR (b.max_insert_xid >= ${oldestCursor(sql)} AND b.max_insert_xid < 1e30
      AND b.max_insert_xid >= COALESCE((${cursorsByNetwork(sql)} ->> b.network_id)::numeric, 0))`

/** The record's state, probed (one index lookup of its anchors and their batches): for the few a cheap test leaves undecided. */
const probe = (sql: SqlClient.SqlClient) => sql`(SELECT s.status FROM anchord_record_state(r.id, r.status, r.chain_type) s)`

export type RecordStatus = "QUEUED" | "BATCHING" | "ANCHORED" | "FAILED"

/**
 * The records in `status`, from the record's row and two small sets, with the state probed only where
 * those leave it open. Needs no `stateJoin`: a count reads no state at all for most
 * records; a list, which joins the state for its columns, reads it through `listedInStatus` (`listed`:
 * the queue's bound as a list wants it estimated, `mayBeQueuedRange`). Each is
 * exact, given the cursors (a record before its network's cursor has its anchor):
 * - FAILED: its own index.
 * - QUEUED: in its own queue, and either without an anchor of a recent batch (then it has none at all)
 *   or probed (a hybrid record has one of its two anchors, or it was cut behind its cursor).
 * - BATCHING: an anchor in an open batch, which a non-hybrid record's only anchor is; a hybrid one probed.
 * - ANCHORED (nearly every record; a list walks the newest first): no anchor in an open batch, and
 *   either before its own queue (cut, so ANCHORED) or with an anchor of a recent batch and probed. The
 *   records in flight are told by their row and two hashed sets (the open batches' anchors, the recent
 *   batches' anchors), not by a probe each.
 */
export const inStatus = (sql: SqlClient.SqlClient, status: RecordStatus, listed = false) =>
  status === "FAILED"
    ? sql`r.status = 'FAILED'`
    : status === "QUEUED"
    ? sql`${inOwnQueue(sql, listed)} AND (NOT (r.chain_type = 'hybrid' OR r.id IN (${recentBatchAnchors(sql)})) OR ${probe(sql)} = 'QUEUED')`
    : status === "BATCHING"
    ? sql`r.status = 'QUEUED' AND ${mayBeBatching(sql)} AND (r.chain_type <> 'hybrid' OR ${probe(sql)} = 'BATCHING')`
    : sql`r.status = 'QUEUED' AND NOT (r.id IN (${openBatchAnchors(sql)}))
        AND (NOT (${inOwnQueue(sql, listed)}) OR ((r.chain_type = 'hybrid' OR r.id IN (${recentBatchAnchors(sql)})) AND ${probe(sql)} = 'ANCHORED'))`

/**
 * A list's filter (needs `stateJoin`, which a list joins for its columns anyway): `inStatus`, and the
 * state itself (read for the rows that pass, about the page). BATCHING as the semi-join with the open
 * batches' anchors alone: the planner then merges it along the records' index, newest first, where the
 * probe of `inStatus` (a subplan in the filter) made it join every open anchor's record and sort.
 */
export const listedInStatus = (sql: SqlClient.SqlClient, status: RecordStatus) =>
  status === "BATCHING"
    ? sql`r.status = 'QUEUED' AND ${mayBeBatching(sql)} AND st.status = 'BATCHING'`
    : sql`${inStatus(sql, status, true)} AND st.status = ${status}`
