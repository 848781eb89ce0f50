/**
 * The state changes of a batch the chains' writers and watchers ask for, each its own transaction: a
 * confirmation (MINED → CONFIRMED, its records completed), a drop (reorg), giving up (records → FAILED
 * with `anchor.failed` events through the outbox, src/outbox/Outbox.ts; anchors kept in failed_anchors),
 * a whole network forgotten (chain reset), and the bookkeeping of a sent transaction (reset to PENDING,
 * log root cleared, an error noted). Statements built once per layer (`batchStates`).
 */
import { Effect, Option, Schema } from "effect"
import { type SqlClient, SqlSchema } from "effect/sql"
import { rowDefects } from "../db/rows.ts"
import { countBatchFailed, metricsHandle } from "../metrics/metrics.ts"
import { append } from "../outbox/Outbox.ts"
import { annotateSampled } from "../tracing/attributes.ts"
import type { batchTransitions } from "./batchTransitions.ts"
import { AnchorChainType, BatchId, IdRow } from "./model.ts"

const FailedRow = Schema.Struct({
  id: Schema.String,
  accountId: Schema.String,
  hash: Schema.String,
  networkId: Schema.String,
  chainType: AnchorChainType
})
/** A batch moved to its new state (setState): which one, and its network (the failed-batch metric's label). */
const StateSet = Schema.Struct({ id: Schema.String, networkId: Schema.String })

const statements = (sql: SqlClient.SqlClient) => ({
  /** A transition of one batch from the given states; the id when it happened. */
  setState: SqlSchema.findOneOption({
    Request: Schema.Struct({
      batchId: BatchId,
      to: Schema.Literals(["CONFIRMED", "FAILED"]),
      reason: Schema.optional(Schema.String)
    }),
    Result: StateSet,
    execute: ({ batchId, reason, to }) =>
      to === "CONFIRMED"
        ? sql`
        UPDATE anchor_batches SET state = 'CONFIRMED', updated_at = now() WHERE id = ${batchId} AND state = 'MINED'
        RETURNING id::text AS id, network_id`
        : sql`
        UPDATE anchor_batches SET state = 'FAILED', last_error = ${reason ?? null}, updated_at = now()
        WHERE id = ${batchId} AND state IN ('PENDING', 'SENT') RETURNING id::text AS id, network_id`
  }),
  /** The anchors of a given-up batch kept in failed_anchors; its records still QUEUED → FAILED. */
  failRecords: SqlSchema.findAll({
    Request: BatchId,
    Result: FailedRow,
    execute: (batchId) =>
      sql`
        WITH gone AS (
          DELETE FROM anchors WHERE batch_id = ${batchId}
          RETURNING record_id, network_id, chain_type, batch_id, leaf_index, merkle_proof, merkle_index, log_index, log_proof
        ), kept AS (
          INSERT INTO failed_anchors (batch_id, record_id, network_id, chain_type, leaf_index, merkle_proof, merkle_index, log_index, log_proof)
          SELECT batch_id, record_id, network_id, chain_type, leaf_index, merkle_proof, merkle_index, log_index, log_proof FROM gone
        )
        UPDATE records r SET status = 'FAILED', updated_at = now()
        FROM gone WHERE gone.record_id = r.id AND r.status = 'QUEUED'
        RETURNING r.id, r.account_id, r.hash, gone.network_id, gone.chain_type`
  }),
  updateBatch: SqlSchema.void({
    Request: Schema.Struct({ batchId: BatchId, change: Schema.Literals(["resetToPending", "clearLogRoot", "noteError"]), error: Schema.String }),
    execute: ({ batchId, change, error }) =>
      change === "resetToPending"
        ? sql`
      UPDATE anchor_batches SET state = 'PENDING', nonce = NULL, tx_hash = NULL, raw_tx = NULL, last_error = ${error},
        updated_at = now()
      WHERE id = ${batchId} AND state = 'SENT'`
        : change === "clearLogRoot"
        ? sql`UPDATE anchor_batches SET log_root = NULL, updated_at = now() WHERE id = ${batchId} AND state = 'PENDING'`
        : sql`UPDATE anchor_batches SET last_error = ${error}, attempts = attempts + 1, updated_at = now() WHERE id = ${batchId}`
  }),
  liveBatchIds: SqlSchema.findAll({
    Request: Schema.String,
    Result: IdRow,
    execute: (networkId) =>
      sql`
      SELECT id::text AS id FROM anchor_batches WHERE network_id = ${networkId} AND state NOT IN ('DROPPED', 'FAILED') ORDER BY anchor_batches.id`
  })
})

/** The state changes over the layer's client; a confirmation or drop runs `transitions` in its transaction. */
export const batchStates = (sql: SqlClient.SqlClient, transitions: ReturnType<typeof batchTransitions>) => {
  const q = statements(sql)

  const resetToPending = Effect.fn("BatchStore.resetToPending")(function*(batchId: string, error: string) {
    yield* rowDefects(q.updateBatch({ batchId, change: "resetToPending", error }))
  })

  const clearLogRoot = Effect.fn("BatchStore.clearLogRoot")(function*(batchId: string) {
    yield* rowDefects(q.updateBatch({ batchId, change: "clearLogRoot", error: "" }))
  })

  const noteError = Effect.fn("BatchStore.noteError")(function*(batchId: string, error: string) {
    yield* rowDefects(q.updateBatch({ batchId, change: "noteError", error }))
  })

  const confirm = Effect.fn("BatchStore.confirm")(function*(batchId: string) {
    yield* annotateSampled(() => ({ "anchord.batch_id": batchId }))
    return yield* sql.withTransaction(Effect.gen(function*() {
      if (Option.isNone(yield* rowDefects(q.setState({ batchId, to: "CONFIRMED" })))) return 0
      return yield* transitions.confirmBatchRecords(batchId)
    }))
  })

  const drop = Effect.fn("BatchStore.drop")(function*(batchId: string, reason: string) {
    return yield* sql.withTransaction(transitions.dropBatch(batchId, reason))
  })

  const fail = Effect.fn("BatchStore.fail")(function*(batchId: string, reason: string) {
    const done = yield* sql.withTransaction(Effect.gen(function*() {
      const moved = yield* rowDefects(q.setState({ batchId, to: "FAILED", reason }))
      if (Option.isNone(moved)) return undefined
      // The anchors go to failed_anchors: the given-up transaction may still be mined (restoreFailedAnchors).
      const failed = yield* rowDefects(q.failRecords(batchId))
      const records = yield* append(sql, failed.map((f) => ({
        accountId: f.accountId,
        event: {
          kind: "anchor.failed" as const,
          recordId: f.id,
          hash: f.hash,
          networkId: f.networkId,
          chainType: f.chainType,
          reason,
          errorCode: "ANCHOR_FAILED" as const
        }
      })))
      return { records, networkId: moved.value.networkId }
    }))
    if (done === undefined) return 0
    // anchord_batches_failed_total (docs/metrics.md), once the FAILED state is committed.
    countBatchFailed(yield* metricsHandle, done.networkId)
    return done.records
  })

  const forgetNetwork = Effect.fn("BatchStore.forgetNetwork")(function*(networkId: string) {
    const batches = yield* rowDefects(q.liveBatchIds(networkId))
    let requeued = 0
    for (const b of batches) requeued += yield* sql.withTransaction(transitions.dropBatch(b.id, "chain reset"))
    return requeued
  })

  return { resetToPending, clearLogRoot, noteError, confirm, drop, fail, forgetNetwork }
}
