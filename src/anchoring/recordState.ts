/**
 * A record's state, read (migration 0016, docs/design/per-batch-model.md part 2): `records.status`
 * holds what a record-level event set (QUEUED, FAILED); BATCHING, ANCHORED and `anchoredAt` come from
 * the record's anchors and their batches through `anchord_record_state`. Every reader of a record's
 * state goes through these fragments (the record reads and lists, their `status=` filter, the
 * console's counts, webhook renders, the confirmation itself): the records' alias is always `r`.
 *
 * Here (anchoring), not in records/: the webhook renders (below records in the folder order) read it too.
 */
import type { SqlClient } from "effect/sql"

type Sql = SqlClient.SqlClient

/** Joined after `records r`: `st.status` and `st.anchored_at`. */
export const stateJoin = (sql: Sql) => sql`CROSS JOIN LATERAL anchord_record_state(r.id, r.status, r.chain_type) st`

/** The columns of a `RecordRow` (src/records/model.ts), its state read (needs `stateJoin`). */
export const recordColumns = (sql: Sql) =>
  sql`r.id, r.account_id, r.environment, r.hash, st.status, r.chain_type, r.network_id, r.package_mode, r.collection,
    r.source, r.data_jcs, r.ciphertext, r.nonce, r.auth_tag, r.metadata, r.webhook_url, r.created_at, r.updated_at,
    st.anchored_at, r.deleted_at, r.hard_deleted, r.salted`

/**
 * Records that may still be QUEUED: at or after the oldest queue cursor (src/anchoring/BatchStore.ts);
 * every record before every network's cursor is in a batch or FAILED. An index range of
 * `records_queue`, as long as the slowest network's backlog (a network whose batcher never ran holds no
 * cursor and is not counted until it does).
 */
export const mayBeQueued = (sql: Sql) =>
  sql`r.status = 'QUEUED' AND r.insert_xid >= (SELECT COALESCE(min(after_xid), 0) FROM queue_cursors)`

/** Records that may be BATCHING: those with an anchor in a batch not yet confirmed (index `anchor_batches_open`). */
export const mayBeBatching = (sql: Sql) =>
  sql`r.id IN (SELECT a.record_id FROM anchor_batches b JOIN anchors a ON a.batch_id = b.id
    WHERE b.state IN ('PENDING', 'SENT', 'MINED'))`

export type RecordStatus = "QUEUED" | "BATCHING" | "ANCHORED" | "FAILED"

/**
 * The records in `status` (needs `stateJoin`), each written so that a list walks the few candidates:
 * QUEUED and BATCHING from their small candidate sets, FAILED from its own index, ANCHORED (nearly
 * every record) along the list's index.
 */
export const inStatus = (sql: Sql, status: RecordStatus) =>
  status === "FAILED"
    ? sql`r.status = 'FAILED'`
    : status === "QUEUED"
    ? sql`${mayBeQueued(sql)} AND st.status = 'QUEUED'`
    : status === "BATCHING"
    ? sql`r.status = 'QUEUED' AND ${mayBeBatching(sql)} AND st.status = 'BATCHING'`
    : sql`r.status = 'QUEUED' AND st.status = 'ANCHORED'`
