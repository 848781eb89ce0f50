/**
 * The transitions of a batch that other stores run inside their own transactions, over the records it
 * anchors: confirmation (records → ANCHORED, announced by one `batch_events` row per account from which
 * each record's `anchor.confirmed` is derived; the Fabric block application and BatchStore's confirm),
 * a given-up batch's anchors brought back (the EVM revival) and a batch dropped, its records re-queued
 * (reorg, chain reset). Each is a handful of statements per batch (never one per record), built once per
 * layer from its `SqlClient` (`batchTransitions`).
 */
import { Effect, Option, Schema } from "effect"
import { type SqlClient, SqlSchema } from "effect/sql"
import { rowDefects } from "../db/rows.ts"
import { metricsHandle, observeAnchored } from "../metrics/metrics.ts"
import { stateJoin } from "./recordState.ts"
import { BatchId, BatchState, CountRow } from "./model.ts"

const ExistingBatchRow = Schema.Struct({ id: Schema.String, state: BatchState })
/** A record that reached ANCHORED in this transaction; `announced`: soft-deleted and announced before. */
const CompletedRow = Schema.Struct({
  id: Schema.String,
  accountId: Schema.String,
  announced: Schema.Boolean,
  /** For anchord_record_anchor_latency_seconds: the batch's network, and seconds since the record was accepted. */
  networkId: Schema.String,
  latency: Schema.Number
})

const statements = (sql: SqlClient.SqlClient) => ({
  /** The batch's records ANCHORED now (`only`: of these records). */
  completedRecords: SqlSchema.findAll({
    Request: Schema.Struct({ batchId: BatchId, only: Schema.optional(Schema.Array(Schema.String)) }),
    Result: CompletedRow,
    execute: ({ batchId, only }) =>
      sql`
    SELECT r.id, r.account_id, (r.deleted_at IS NOT NULL AND r.announced) AS announced, a.network_id,
      extract(epoch FROM clock_timestamp() - r.created_at)::float8 AS latency
    FROM anchors a JOIN records r ON r.id = a.record_id ${stateJoin(sql)}
    WHERE a.batch_id = ${batchId} AND st.status = 'ANCHORED'
      ${only === undefined ? sql`` : sql`AND a.record_id = ANY (string_to_array(${only.join(",")}, ','))`}
    -- A soft-deleted record anchored again (its dev chain was reset) was announced already: its owner
    -- deleted it since, so the re-anchoring is silent (docs/dev-chain.md).
    `
  }),
  /** One `batch_events` row per account: the records it announces (their `anchor.confirmed` events derive from it). */
  announce: SqlSchema.void({
    Request: Schema.Struct({
      batchId: BatchId,
      accounts: Schema.Array(Schema.Struct({ accountId: Schema.String, recordIds: Schema.Array(Schema.String) }))
    }),
    execute: ({ accounts, batchId }) =>
      sql`
    INSERT INTO batch_events (batch_id, account_id, record_ids)
    SELECT ${batchId}, x.account_id, ARRAY(SELECT jsonb_array_elements_text(x.ids))
    FROM jsonb_to_recordset(${JSON.stringify(accounts.map((a) => ({ account_id: a.accountId, ids: a.recordIds })))}::jsonb)
      AS x(account_id text, ids jsonb)`
  }),
  lockHybridRecords: SqlSchema.void({
    Request: BatchId,
    execute: (batchId) =>
      sql`
    SELECT 1 FROM records r JOIN anchors a ON a.record_id = r.id
    WHERE a.batch_id = ${batchId} AND r.chain_type = 'hybrid' ORDER BY r.id FOR UPDATE OF r`
  }),
  markConfirmedAt: SqlSchema.void({
    Request: BatchId,
    execute: (batchId) => sql`UPDATE anchor_batches SET confirmed_at = clock_timestamp() WHERE id = ${batchId}`
  }),
  restoreFailed: SqlSchema.findOne({
    Request: BatchId,
    Result: CountRow,
    execute: (batchId) =>
      sql`
    WITH back AS (
      DELETE FROM failed_anchors fa WHERE fa.batch_id = ${batchId}
      RETURNING record_id, network_id, chain_type, batch_id, leaf_index, merkle_proof, merkle_index, log_index, log_proof
    ), r AS (
      UPDATE records r SET status = 'QUEUED', updated_at = now()
      FROM back WHERE back.record_id = r.id AND r.status = 'FAILED'
        AND NOT EXISTS (SELECT 1 FROM anchors a WHERE a.record_id = r.id AND a.network_id = back.network_id)
      RETURNING r.id
    ), ins AS (
      INSERT INTO anchors (record_id, network_id, chain_type, batch_id, leaf_index, merkle_proof, merkle_index, log_index, log_proof)
      SELECT back.record_id, back.network_id, back.chain_type, back.batch_id, back.leaf_index, back.merkle_proof,
        back.merkle_index, back.log_index, back.log_proof
      FROM back JOIN r ON r.id = back.record_id
      RETURNING 1
    )
    SELECT count(*)::int AS n FROM ins`
  }),
  lockDroppable: SqlSchema.findOneOption({
    Request: BatchId,
    Result: ExistingBatchRow,
    execute: (batchId) =>
      sql`
    SELECT id::text AS id, state FROM anchor_batches
    WHERE id = ${batchId} AND state IN ('PENDING', 'SENT', 'MINED', 'CONFIRMED') FOR UPDATE`
  }),
  markAnnounced: SqlSchema.void({
    Request: BatchId,
    execute: (batchId) =>
      sql`
      UPDATE records SET announced = true WHERE id IN (
        SELECT r.id FROM anchors a JOIN records r ON r.id = a.record_id ${stateJoin(sql)}
        WHERE a.batch_id = ${batchId} AND NOT r.announced AND st.status = 'ANCHORED')`
  }),
  rewindCursor: SqlSchema.void({
    Request: BatchId,
    execute: (batchId) =>
      sql`
    UPDATE queue_cursors c SET after_xid = f.insert_xid, after_id = f.id
    FROM (SELECT b.network_id, r.insert_xid, r.id FROM anchors a JOIN records r ON r.id = a.record_id
          JOIN anchor_batches b ON b.id = a.batch_id
          WHERE a.batch_id = ${batchId} ORDER BY r.insert_xid, r.id LIMIT 1) f
    WHERE c.network_id = f.network_id AND (c.after_xid, c.after_id) > (f.insert_xid, f.id)`
  }),
  markDropped: SqlSchema.void({
    Request: Schema.Struct({ batchId: BatchId, reason: Schema.String }),
    execute: ({ batchId, reason }) => sql`UPDATE anchor_batches SET state = 'DROPPED', last_error = ${reason}, updated_at = now() WHERE id = ${batchId}`
  }),
  deleteAnchors: SqlSchema.findOne({
    Request: BatchId,
    Result: CountRow,
    execute: (batchId) =>
      sql`
    WITH gone AS (DELETE FROM anchors WHERE batch_id = ${batchId} RETURNING record_id)
    SELECT count(*)::int AS n FROM gone JOIN records r ON r.id = gone.record_id WHERE r.status = 'QUEUED'`
  })
})

/** The transitions over the layer's client, run inside the caller's transaction; built once by the layer. */
export const batchTransitions = (sql: SqlClient.SqlClient) => {
  const q = statements(sql)

  /**
   * Records of the batch that are ANCHORED now that the batch is confirmed (SPEC 4: every required
   * anchor's batch CONFIRMED; their state is read, nothing is written to them), announced
   * by one `batch_events` row per account: each record's `anchor.confirmed` is derived
   * from the record, its anchors and this batch (anchorViews.ts `anchorConfirmedPayloads`), and the row's trigger
   * writes the webhook fan-out. One SELECT, one INSERT. `only`: the records that joined an already
   * confirmed batch (the others were announced when it was confirmed). The number of records announced.
   */
  const completeRecords = Effect.fn("BatchStore.completeRecords")(function*(batchId: string, only?: ReadonlyArray<string>) {
    const completed = yield* rowDefects(q.completedRecords({ batchId, only }))
    // Observed when the statement ran (a transaction that rolls back later counts them anyway: rare, and
    // the records are anchored again by the next confirmation).
    const metrics = yield* metricsHandle
    for (const r of completed) observeAnchored(metrics, r.networkId, r.latency)
    const toAnnounce = completed.filter((r) => !r.announced)
    if (toAnnounce.length === 0) return 0
    const byAccount = new Map<string, Array<string>>()
    for (const r of toAnnounce) {
      const ids = byAccount.get(r.accountId)
      if (ids === undefined) byAccount.set(r.accountId, [r.id])
      else ids.push(r.id)
    }
    yield* rowDefects(q.announce({ batchId, accounts: [...byAccount].map(([accountId, recordIds]) => ({ accountId, recordIds })) }))
    return toAnnounce.length
  })

  /**
   * Inside the caller's transaction, for a batch it has just set CONFIRMED (its anchors read confirmed from
   * that state, nothing is written to them): the records now complete → ANCHORED with
   * their events. The hybrid records of the batch are locked first: two networks confirming the two
   * anchors of one record at the same time would otherwise each see the other's batch still unconfirmed
   * (READ COMMITTED snapshots) and neither would complete the record.
   * The number of events written.
   */
  const confirmBatchRecords = Effect.fn("BatchStore.confirmBatchRecords")(function*(batchId: string) {
    yield* rowDefects(q.lockHybridRecords(batchId))
    // After the lock: of a hybrid record's two batches, the one confirmed last completed it (its anchoredAt).
    yield* rowDefects(q.markConfirmedAt(batchId))
    return yield* completeRecords(batchId)
  })

  /**
   * Inside the caller's transaction, for a FAILED batch it has just set MINED (its given-up transaction
   * was mined after all): its anchors come back from failed_anchors for the records that are still FAILED
   * and have not been anchored on this network since, and those records are no longer FAILED (status
   * QUEUED: with their anchors back they read BATCHING; confirmation then makes them ANCHORED, with
   * anchor.confirmed events). The number of records revived.
   */
  const restoreFailedAnchors = Effect.fn("BatchStore.restoreFailedAnchors")(function*(batchId: string) {
    return (yield* rowDefects(q.restoreFailed(batchId))).n
  })

  /**
   * Batch DROPPED (unless DROPPED or FAILED already), its anchors deleted: its records read QUEUED again
   * (the batch is reset, not the records), and the network's queue cursor moves back to the first of
   * them, so the next cut takes them. The number of records re-queued (those not FAILED).
   */
  const dropBatch = Effect.fn("BatchStore.dropBatch")(function*(batchId: string, reason: string) {
    const batch = yield* rowDefects(q.lockDroppable(batchId))
    if (Option.isNone(batch)) return 0
    // An ANCHORED record was announced: a soft-deleted one anchored again stays silent (completeRecords).
    // Read while the batch is still CONFIRMED.
    if (batch.value.state === "CONFIRMED") yield* rowDefects(q.markAnnounced(batchId))
    // The cursor first (the lock a cut takes first too): a cut running now moves it after this commits.
    yield* rowDefects(q.rewindCursor(batchId))
    yield* rowDefects(q.markDropped({ batchId, reason }))
    return (yield* rowDefects(q.deleteAnchors(batchId))).n
  })

  return { completeRecords, confirmBatchRecords, restoreFailedAnchors, dropBatch }
}
