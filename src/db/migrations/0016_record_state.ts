import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A record's BATCHING / ANCHORED state and its `anchoredAt` (docs/design/per-batch-model.md, part 2)
 * are read from its anchors and their batches, no longer written into the record. The
 * two non-HOT updates of every record after ingest (→ BATCHING at the cut, → ANCHORED at confirmation)
 * are gone.
 *
 * - `records.status` holds what a record-level event sets: QUEUED (accepted, the default) or FAILED
 *   (its batch was given up). Rows in BATCHING / ANCHORED become QUEUED: their anchors say the rest.
 *   DELETED stays `deleted_at`, as before. `records.anchored_at` is dropped.
 * - `anchord_record_state(id, status, chain_type)`: the one place a record's state is computed. QUEUED
 *   until every required anchor exists (one; a hybrid record an EVM and a Fabric one), BATCHING until
 *   all their batches are CONFIRMED, then ANCHORED, with the `anchored_at` of the batch confirmed last
 *   (the one whose confirmation completed the record and announced it). A SQL function returning a
 *   table, inlined by the planner into the caller's query (a per-record index lookup of its anchors).
 * - `anchor_batches.confirmed_at`: when the batch was confirmed (which of a hybrid record's two batches
 *   completed it). Existing CONFIRMED batches take their `updated_at`.
 * - The batcher's queue no longer needs a record update to cut: `records.insert_xid` (the inserting
 *   transaction, `pg_current_xact_id()`, kept as numeric: xid8 and int8 do not decode to plain JSON values in every
 *   client) and one cursor per network in `queue_cursors`. A cut reads
 *   records from its cursor in (insert_xid, id) order, probes each for its anchor, and moves the cursor
 *   to where it stopped, never past a transaction still in flight at its snapshot (`pg_snapshot_xmin`):
 *   a record committed late is still found. A drop moves the cursor back to its records. Index
 *   `records_queue (insert_xid, id) WHERE status = 'QUEUED'` replaces `records_queued` and
 *   `records_queued_hybrid` (whose predicate needed the update).
 * - Existing rows share the migration's transaction id (a stable default: nothing is rewritten for it);
 *   each network's cursor starts at the first record that was QUEUED here (or after every existing
 *   record), so the first look after the upgrade does not walk the table.
 * - `records_failed`: the list filtered by FAILED walks only failed records.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE records ADD COLUMN insert_xid numeric NOT NULL DEFAULT pg_current_xact_id()::text::numeric`
  yield* sql`ALTER TABLE anchor_batches ADD COLUMN confirmed_at timestamptz`
  yield* sql`UPDATE anchor_batches SET confirmed_at = updated_at WHERE state = 'CONFIRMED'`
  yield* sql`
    CREATE TABLE queue_cursors (
      network_id  text PRIMARY KEY,
      after_xid   numeric NOT NULL,
      after_id    text NOT NULL
    )`
  // Every network the database knows: its queue starts at the first record queued now (conservatively
  // any queued hybrid record for every network: which Fabric network anchors which environment is
  // configuration), or after every existing record ('g' sorts after every hex id).
  yield* sql`
    INSERT INTO queue_cursors (network_id, after_xid, after_id)
    SELECT n.network_id, pg_current_xact_id()::text::numeric, COALESCE(
      (SELECT min(r.id) FROM records r WHERE r.status = 'QUEUED' AND (r.network_id = n.network_id OR r.chain_type = 'hybrid')), 'g')
    FROM (SELECT network_id FROM records UNION SELECT network_id FROM anchor_batches) n`
  yield* sql`ALTER TABLE records DROP CONSTRAINT records_status_check`
  yield* sql`UPDATE records SET status = 'QUEUED' WHERE status IN ('BATCHING', 'ANCHORED')`
  yield* sql`ALTER TABLE records ADD CONSTRAINT records_status_check CHECK (status IN ('QUEUED', 'FAILED'))`
  yield* sql`ALTER TABLE records DROP COLUMN anchored_at`
  yield* sql`DROP INDEX records_queued`
  yield* sql`DROP INDEX records_queued_hybrid`
  yield* sql`CREATE INDEX records_queue ON records (insert_xid, id) WHERE status = 'QUEUED'`
  yield* sql`CREATE INDEX records_failed ON records (account_id, environment, id DESC) WHERE status = 'FAILED'`
  // STABLE, one SELECT, not STRICT: inlined into the calling query. A hybrid record needs both kinds.
  yield* sql.unsafe(`
    CREATE FUNCTION anchord_record_state(record_id text, record_status text, chain_type text)
    RETURNS TABLE (status text, anchored_at timestamptz) LANGUAGE sql STABLE AS $$
      SELECT
        CASE WHEN $2 <> 'QUEUED' THEN $2
             WHEN NOT (CASE WHEN $3 = 'hybrid' THEN COALESCE(bool_or(x.chain_type = 'evm') AND bool_or(x.chain_type = 'fabric'), false)
                            ELSE count(*) > 0 END) THEN 'QUEUED'
             WHEN bool_and(x.state = 'CONFIRMED') THEN 'ANCHORED'
             ELSE 'BATCHING' END,
        CASE WHEN $2 = 'QUEUED' AND bool_and(x.state = 'CONFIRMED')
               AND (CASE WHEN $3 = 'hybrid' THEN COALESCE(bool_or(x.chain_type = 'evm') AND bool_or(x.chain_type = 'fabric'), false)
                         ELSE count(*) > 0 END)
             THEN (array_agg(x.anchored_at ORDER BY x.confirmed_at DESC NULLS LAST))[1] END
      FROM (SELECT a.chain_type, b.state, b.anchored_at, b.confirmed_at
            FROM anchors a JOIN anchor_batches b ON b.id = a.batch_id WHERE a.record_id = $1) x
    $$`)
  // For operators' SQL: every record's state as the API shows it (DELETED aside: `deleted_at`).
  yield* sql`
    CREATE VIEW record_states AS
    SELECT r.id, st.status, st.anchored_at FROM records r CROSS JOIN LATERAL anchord_record_state(r.id, r.status, r.chain_type) st`
})
