/**
 * The chain-neutral batch state machine (docs/anchoring-evm.md, "Record states"): cutting batches,
 * confirmation (records → ANCHORED, announced by one `batch_events` row per account from which each
 * record's `anchor.confirmed` is derived, migration 0012), reorg / reset (records back to QUEUED),
 * giving up (records → FAILED with `anchor.failed` events through the outbox, src/outbox/Outbox.ts;
 * anchors kept in failed_anchors) and bringing a given-up batch's anchors back. Each transition is one
 * transaction of a handful of statements per batch (never one per record).
 *
 * What a chain's own bookkeeping needs inside its transactions (the Fabric block application, the EVM
 * revival) is exported as functions over the caller's `SqlClient`: `confirmBatchRecords`,
 * `restoreFailedAnchors`.
 *
 * SqlError stays typed: the loops log a failure once and try again on their next tick.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { append } from "../outbox/Outbox.ts"
import { fence } from "./Leadership.ts"
import { observeAnchored } from "../metrics/metrics.ts"
import { annotateSampled } from "../tracing/attributes.ts"
import { buildTree, type Hex } from "./merkle.ts"
import {
  AnchorChainType,
  type BatchMeta,
  BatchRow,
  BatchState,
  CountRow,
  decodeFirst,
  decodeRows,
  type Environment,
  IdRow
} from "./model.ts"

type Sql = SqlClient.SqlClient

/** The columns of a `BatchRow` (`batchRowOf`). */
export const batchColumns = (sql: Sql) =>
  sql`id::text AS id, network_id, merkle_root, leaf_count, state, attempts, nonce::text AS nonce, gas_limit::text AS gas_limit, tx_hash,
    raw_tx, tx_hashes, max_fee_per_gas::text AS max_fee_per_gas, max_priority_fee_per_gas::text AS max_priority_fee_per_gas,
    sent_at, chain_batch_id::text AS chain_batch_id, block_number::text AS block_number, block_hash, created_at`

/** The batches of a network still under way (PENDING, SENT, MINED), oldest first; rows to decode. */
export const selectOpenBatches = (sql: Sql, networkId: string) =>
  sql`SELECT ${batchColumns(sql)} FROM anchor_batches
      WHERE network_id = ${networkId} AND state IN ('PENDING', 'SENT', 'MINED') ORDER BY anchor_batches.id`

/**
 * The records a network's batcher claims: its own; with `hybridEnvironment` (the Fabric network of an
 * environment), also that environment's hybrid records, whose `network_id` is their EVM network.
 */
const claimScope = (sql: Sql, networkId: string, hybridEnvironment: Environment | undefined) =>
  hybridEnvironment === undefined
    ? sql`r.network_id = ${networkId}`
    : sql`(r.network_id = ${networkId} OR (r.chain_type = 'hybrid' AND r.environment = ${hybridEnvironment}))`

/**
 * The queue's records not yet in a batch of this network, as a per-row probe of `anchors`. Written as a
 * scalar subquery, not NOT EXISTS: PostgreSQL turns NOT EXISTS into an anti-join, and once `anchors`
 * and the queue are large (a backlog) it chose a merge anti-join over the whole `records` primary key
 * and all of the network's anchors, so one look at the queue took 0.5 s to 49 s and the batcher
 * stalled. The probe keeps the statement walking the queue index in id order, reading only the rows
 * it returns (docs/benchmarks.md, 2026-11-25 night).
 */
const notYetInBatchOf = (sql: Sql, networkId: string) =>
  sql`(SELECT true FROM anchors a WHERE a.record_id = r.id AND a.network_id = ${networkId}) IS NULL`

/**
 * The queue's order. For one network, the queue index's own key (network_id, id): the primary key
 * cannot give that order, so no plan walks it from the start through every anchored record (the
 * anti-join plan above did, ordered by id alone).
 */
const queueOrder = (sql: Sql, hybridEnvironment: Environment | undefined) =>
  hybridEnvironment === undefined ? sql`ORDER BY r.network_id, r.id` : sql`ORDER BY r.id`

/** The first `max` records of a network's queue, in the order a cut takes them: the look and the claim read the same rows. */
const queueHead = (sql: Sql, networkId: string, max: number, hybridEnvironment: Environment | undefined) =>
  sql`FROM records r
    WHERE ${claimScope(sql, networkId, hybridEnvironment)} AND r.status = 'QUEUED' AND ${notYetInBatchOf(sql, networkId)}
    ${queueOrder(sql, hybridEnvironment)} LIMIT ${max}`

/**
 * The anchors a record needs (SPEC 4): one EVM anchor; a hybrid record an EVM and a Fabric one.
 * A record stays QUEUED until every required anchor is in a batch (each batcher claims QUEUED records
 * lacking its own anchor), BATCHING until all are confirmed, then ANCHORED.
 */
const requiredAnchorsExist = (sql: Sql) =>
  sql`(r.chain_type <> 'hybrid' OR (
    EXISTS (SELECT 1 FROM anchors e WHERE e.record_id = r.id AND e.chain_type = 'evm') AND
    EXISTS (SELECT 1 FROM anchors f WHERE f.record_id = r.id AND f.chain_type = 'fabric')))`

const QueueRow = Schema.Struct({ count: Schema.Number, oldest: Schema.NullOr(Schema.Date) })
const ClaimedRow = Schema.Struct({ id: Schema.String, hash: Schema.String })
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
const FailedRow = Schema.Struct({
  id: Schema.String,
  accountId: Schema.String,
  hash: Schema.String,
  networkId: Schema.String,
  chainType: AnchorChainType
})

const decodeQueue = decodeFirst(QueueRow)
const decodeClaimed = decodeRows(ClaimedRow)
const decodeExisting = decodeFirst(ExistingBatchRow)
const decodeId = decodeFirst(IdRow)
const decodeIds = decodeRows(IdRow)
const decodeCount = decodeFirst(CountRow)
const decodeCompleted = decodeRows(CompletedRow)
const decodeFailed = decodeRows(FailedRow)
const decodeBatches = decodeRows(BatchRow)
const decodeBatch = decodeFirst(BatchRow)

/**
 * Records of the batch reaching ANCHORED now that all their required anchors are confirmed (SPEC 4),
 * announced by one `batch_events` row per account (migration 0012): each record's `anchor.confirmed`
 * is derived from the record, its anchors and this batch (view `anchor_confirmed_events`), and the
 * row's trigger writes the webhook fan-out. One UPDATE … RETURNING, one INSERT. The number of records
 * announced.
 */
export const completeRecords = Effect.fn("BatchStore.completeRecords")(function*(sql: Sql, batchId: string) {
  const completed = yield* sql`
    UPDATE records r SET status = 'ANCHORED', anchored_at = b.anchored_at, updated_at = now()
    FROM anchors a JOIN anchor_batches b ON b.id = a.batch_id
    WHERE a.batch_id = ${batchId} AND a.record_id = r.id AND r.status IN ('QUEUED', 'BATCHING')
      AND a.confirmed
      AND NOT EXISTS (SELECT 1 FROM anchors o WHERE o.record_id = r.id AND NOT o.confirmed)
      AND (r.chain_type <> 'hybrid' OR (
        EXISTS (SELECT 1 FROM anchors e WHERE e.record_id = r.id AND e.chain_type = 'evm' AND e.confirmed) AND
        EXISTS (SELECT 1 FROM anchors f WHERE f.record_id = r.id AND f.chain_type = 'fabric' AND f.confirmed)))
    -- A soft-deleted record anchored again (its dev chain was reset) was announced already: its owner
    -- deleted it since, so the re-anchoring is silent (docs/dev-chain.md).
    RETURNING r.id, r.account_id, (r.deleted_at IS NOT NULL AND r.announced) AS announced, b.network_id,
      extract(epoch FROM clock_timestamp() - r.created_at)::float8 AS latency`.pipe(
    Effect.flatMap(decodeCompleted)
  )
  // Observed when the statement ran (a transaction that rolls back later counts them anyway: rare, and
  // the records are anchored again by the next confirmation).
  const metrics = yield* Effect.context<never>()
  for (const r of completed) observeAnchored(metrics, r.networkId, r.latency)
  const toAnnounce = completed.filter((r) => !r.announced)
  if (toAnnounce.length === 0) return 0
  const byAccount = new Map<string, Array<string>>()
  for (const r of toAnnounce) {
    const ids = byAccount.get(r.accountId)
    if (ids === undefined) byAccount.set(r.accountId, [r.id])
    else ids.push(r.id)
  }
  yield* sql`
    INSERT INTO batch_events (batch_id, account_id, record_ids)
    SELECT ${batchId}, x.account_id, ARRAY(SELECT jsonb_array_elements_text(x.ids))
    FROM jsonb_to_recordset(${JSON.stringify([...byAccount].map(([account_id, ids]) => ({ account_id, ids })))}::jsonb)
      AS x(account_id text, ids jsonb)`
  return toAnnounce.length
})

/**
 * Inside the caller's transaction, for a batch it has just set CONFIRMED: its anchors confirmed and the
 * records now complete → ANCHORED with their events. The hybrid records of the batch are locked first:
 * two networks confirming the two anchors of one record at the same time would otherwise each see the
 * other's anchor still unconfirmed (READ COMMITTED snapshots) and neither would complete the record.
 * The number of events written.
 */
export const confirmBatchRecords = Effect.fn("BatchStore.confirmBatchRecords")(function*(sql: Sql, batchId: string) {
  yield* sql`
    SELECT 1 FROM records r JOIN anchors a ON a.record_id = r.id
    WHERE a.batch_id = ${batchId} AND r.chain_type = 'hybrid' ORDER BY r.id FOR UPDATE OF r`
  yield* sql`UPDATE anchors SET confirmed = true WHERE batch_id = ${batchId}`
  return yield* completeRecords(sql, batchId)
})

/**
 * Inside the caller's transaction, for a FAILED batch it has just set MINED (its given-up transaction
 * was mined after all): its anchors come back from failed_anchors for the records that are still FAILED
 * and have not been anchored on this network since, and those records → BATCHING (confirmation then
 * takes them to ANCHORED, with anchor.confirmed events). The number of records revived.
 */
export const restoreFailedAnchors = Effect.fn("BatchStore.restoreFailedAnchors")(function*(sql: Sql, batchId: string) {
  const rows = yield* sql`
    WITH back AS (
      DELETE FROM failed_anchors fa WHERE fa.batch_id = ${batchId}
      RETURNING record_id, network_id, chain_type, batch_id, leaf_index, merkle_proof
    ), r AS (
      UPDATE records r SET status = 'BATCHING', updated_at = now()
      FROM back WHERE back.record_id = r.id AND r.status = 'FAILED'
        AND NOT EXISTS (SELECT 1 FROM anchors a WHERE a.record_id = r.id AND a.network_id = back.network_id)
      RETURNING r.id
    ), ins AS (
      INSERT INTO anchors (record_id, network_id, chain_type, batch_id, leaf_index, merkle_proof, confirmed)
      SELECT back.record_id, back.network_id, back.chain_type, back.batch_id, back.leaf_index, back.merkle_proof, false
      FROM back JOIN r ON r.id = back.record_id
      RETURNING 1
    )
    SELECT count(*)::int AS n FROM ins`.pipe(Effect.flatMap(decodeCount))
  return rows?.n ?? 0
})

/** Batch DROPPED (unless DROPPED or FAILED already), its anchors deleted, its BATCHING / ANCHORED records → QUEUED. */
const dropBatch = Effect.fn("BatchStore.dropBatch")(function*(sql: Sql, batchId: string, reason: string) {
  const rows = yield* sql`
    UPDATE anchor_batches SET state = 'DROPPED', last_error = ${reason}, updated_at = now()
    WHERE id = ${batchId} AND state IN ('PENDING', 'SENT', 'MINED', 'CONFIRMED') RETURNING id`
  if (rows.length === 0) return 0
  const requeued = yield* sql`
    WITH gone AS (DELETE FROM anchors WHERE batch_id = ${batchId} RETURNING record_id)
    -- an ANCHORED record was announced: a soft-deleted one anchored again stays silent (completeRecords)
    UPDATE records r SET status = 'QUEUED', anchored_at = NULL, announced = r.announced OR r.status = 'ANCHORED', updated_at = now()
    FROM gone WHERE gone.record_id = r.id AND r.status IN ('BATCHING', 'ANCHORED')
    RETURNING r.id`
  return requeued.length
})

export interface CutBatch {
  readonly batchId: string
  readonly root: Hex
  readonly leafCount: number
  /** The same leaves as a live batch: the records joined it. */
  readonly joined: boolean
}

export class BatchStore extends Context.Service<BatchStore, {
  /**
   * QUEUED records of the network lacking its anchor; with `hybridEnvironment`, also the QUEUED hybrid
   * records of that environment (their `network_id` is the EVM one; this is their Fabric network).
   */
  readonly queueState: (networkId: string, max: number, hybridEnvironment?: Environment) => Effect.Effect<
    { readonly count: number; readonly oldest: Date | null },
    SqlError.SqlError
  >
  /** Claims up to `max` QUEUED records, builds the tree, persists batch + proofs, records → BATCHING. */
  readonly cutBatch: (networkId: string, max: number, meta: BatchMeta, hybridEnvironment?: Environment) => Effect.Effect<
    CutBatch | undefined,
    SqlError.SqlError
  >
  readonly openBatches: (networkId: string) => Effect.Effect<ReadonlyArray<BatchRow>, SqlError.SqlError>
  readonly findLiveBatchByRoot: (networkId: string, root: Hex) => Effect.Effect<BatchRow | undefined, SqlError.SqlError>
  /** The newest FAILED batch of the network with this root. */
  readonly findFailedBatchByRoot: (networkId: string, root: Hex) => Effect.Effect<BatchRow | undefined, SqlError.SqlError>
  /** A sent transaction abandoned (nonce used elsewhere, read conflict, ...): PENDING again, to be signed anew. */
  readonly resetToPending: (batchId: string, error: string) => Effect.Effect<void, SqlError.SqlError>
  /** A counted failed attempt. */
  readonly noteError: (batchId: string, error: string) => Effect.Effect<void, SqlError.SqlError>
  /** MINED → CONFIRMED; anchors confirmed; records whose required anchors are all confirmed → ANCHORED + events. */
  readonly confirm: (batchId: string) => Effect.Effect<number, SqlError.SqlError>
  /** Reorganised out / abandoned: batch DROPPED, its anchors deleted, BATCHING records → QUEUED. */
  readonly drop: (batchId: string, reason: string) => Effect.Effect<number, SqlError.SqlError>
  /** Retries exhausted: batch FAILED, records → FAILED + anchor.failed events; its anchors kept in failed_anchors. */
  readonly fail: (batchId: string, reason: string) => Effect.Effect<number, SqlError.SqlError>
  /** Chain reset (dev chain, dev peer): every live batch of the network dropped, one transaction each; records re-queued. */
  readonly forgetNetwork: (networkId: string) => Effect.Effect<number, SqlError.SqlError>
}>()("anchord/anchoring/BatchStore") {
  static readonly layer = Layer.effect(
    BatchStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const queueState = Effect.fn("BatchStore.queueState")(function*(networkId: string, max: number, hybridEnvironment?: Environment) {
        const row = yield* sql`
          SELECT count(*)::int AS count, min(created_at) AS oldest FROM (
            SELECT r.created_at ${queueHead(sql, networkId, max, hybridEnvironment)}
          ) q`.pipe(Effect.flatMap(decodeQueue))
        return row ?? { count: 0, oldest: null }
      })

      const cutBatch = Effect.fn("BatchStore.cutBatch")(function*(
        networkId: string,
        max: number,
        meta: BatchMeta,
        hybridEnvironment?: Environment
      ) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          // Fencing: a leader that lost its lock (paused past its lease) cuts nothing (Leadership.ts).
          yield* fence(sql)
          const claimed = yield* sql`
            SELECT r.id, r.hash ${queueHead(sql, networkId, max, hybridEnvironment)}
            FOR UPDATE OF r SKIP LOCKED`.pipe(Effect.flatMap(decodeClaimed))
          if (claimed.length === 0) return undefined
          const tree = buildTree(claimed.map((r) => r.hash))
          // The same leaves as a live batch give the same root: the records join that batch (same proofs).
          const existing = yield* sql`
            SELECT id::text AS id, state FROM anchor_batches
            WHERE network_id = ${networkId} AND merkle_root = ${tree.root} AND state NOT IN ('DROPPED', 'FAILED')
            FOR UPDATE`.pipe(Effect.flatMap(decodeExisting))
          const inserted = existing !== undefined ? undefined : yield* (meta.chainType === "fabric"
            ? sql`
                INSERT INTO anchor_batches (network_id, chain_type, merkle_root, leaf_count, state, channel, chaincode)
                VALUES (${networkId}, 'fabric', ${tree.root}, ${claimed.length}, 'PENDING', ${meta.channel}, ${meta.chaincode})
                RETURNING id::text AS id`
            : sql`
                INSERT INTO anchor_batches (network_id, chain_type, merkle_root, leaf_count, state, chain_id, contract_address)
                VALUES (${networkId}, 'evm', ${tree.root}, ${claimed.length}, 'PENDING', ${meta.chainId}, ${meta.contractAddress.toLowerCase()})
                RETURNING id::text AS id`).pipe(Effect.flatMap(decodeId))
          const batchId = existing?.id ?? inserted!.id
          const anchorsJson = JSON.stringify(claimed.map((r, i) => ({ r: r.id, i, p: tree.proofs[i] })))
          yield* sql`
            INSERT INTO anchors (record_id, network_id, chain_type, batch_id, leaf_index, merkle_proof, confirmed)
            SELECT x.r, ${networkId}, ${meta.chainType}, ${batchId}, x.i,
              ARRAY(SELECT jsonb_array_elements_text(x.p)), false
            FROM jsonb_to_recordset(${anchorsJson}::jsonb) AS x(r text, i int, p jsonb)`
          yield* sql`
            UPDATE records r SET status = 'BATCHING', updated_at = now()
            FROM anchors a WHERE a.batch_id = ${batchId} AND a.record_id = r.id AND r.status = 'QUEUED'
              AND ${requiredAnchorsExist(sql)}`
          if (existing?.state === "CONFIRMED") {
            yield* sql`UPDATE anchors SET confirmed = true WHERE batch_id = ${batchId}`
            yield* completeRecords(sql, batchId)
          }
          return { batchId, root: tree.root, leafCount: claimed.length, joined: existing !== undefined } satisfies CutBatch
        })).pipe(Effect.tap((cut) =>
          cut === undefined ? Effect.void
            : annotateSampled(() => ({ "anchord.batch_id": cut.batchId, "anchord.network_id": networkId, "anchord.record_count": cut.leafCount }))
        ))
      })

      const openBatches = Effect.fn("BatchStore.openBatches")(function*(networkId: string) {
        return yield* selectOpenBatches(sql, networkId).pipe(Effect.flatMap(decodeBatches))
      })

      const findLiveBatchByRoot = Effect.fn("BatchStore.findLiveBatchByRoot")(function*(networkId: string, root: Hex) {
        return yield* sql`
          SELECT ${batchColumns(sql)} FROM anchor_batches
          WHERE network_id = ${networkId} AND merkle_root = ${root} AND state NOT IN ('DROPPED', 'FAILED')`.pipe(
          Effect.flatMap(decodeBatch)
        )
      })

      const findFailedBatchByRoot = Effect.fn("BatchStore.findFailedBatchByRoot")(function*(networkId: string, root: Hex) {
        return yield* sql`
          SELECT ${batchColumns(sql)} FROM anchor_batches
          WHERE network_id = ${networkId} AND merkle_root = ${root} AND state = 'FAILED'
          ORDER BY anchor_batches.id DESC LIMIT 1`.pipe(Effect.flatMap(decodeBatch))
      })

      const resetToPending = Effect.fn("BatchStore.resetToPending")(function*(batchId: string, error: string) {
        yield* sql`
          UPDATE anchor_batches SET state = 'PENDING', nonce = NULL, tx_hash = NULL, raw_tx = NULL, last_error = ${error},
            updated_at = now()
          WHERE id = ${batchId} AND state = 'SENT'`
      })

      const noteError = Effect.fn("BatchStore.noteError")(function*(batchId: string, error: string) {
        yield* sql`UPDATE anchor_batches SET last_error = ${error}, attempts = attempts + 1, updated_at = now() WHERE id = ${batchId}`
      })

      const confirm = Effect.fn("BatchStore.confirm")(function*(batchId: string) {
        yield* annotateSampled(() => ({ "anchord.batch_id": batchId }))
        return yield* sql.withTransaction(Effect.gen(function*() {
          const rows = yield* sql`
            UPDATE anchor_batches SET state = 'CONFIRMED', updated_at = now() WHERE id = ${batchId} AND state = 'MINED' RETURNING id`
          if (rows.length === 0) return 0
          return yield* confirmBatchRecords(sql, batchId)
        }))
      })

      const drop = Effect.fn("BatchStore.drop")(function*(batchId: string, reason: string) {
        return yield* sql.withTransaction(dropBatch(sql, batchId, reason))
      })

      const fail = Effect.fn("BatchStore.fail")(function*(batchId: string, reason: string) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const rows = yield* sql`
            UPDATE anchor_batches SET state = 'FAILED', last_error = ${reason}, updated_at = now()
            WHERE id = ${batchId} AND state IN ('PENDING', 'SENT') RETURNING id`
          if (rows.length === 0) return 0
          // The anchors go to failed_anchors: the given-up transaction may still be mined (restoreFailedAnchors).
          const failed = yield* sql`
            WITH gone AS (
              DELETE FROM anchors WHERE batch_id = ${batchId}
              RETURNING record_id, network_id, chain_type, batch_id, leaf_index, merkle_proof
            ), kept AS (
              INSERT INTO failed_anchors (batch_id, record_id, network_id, chain_type, leaf_index, merkle_proof)
              SELECT batch_id, record_id, network_id, chain_type, leaf_index, merkle_proof FROM gone
            )
            UPDATE records r SET status = 'FAILED', updated_at = now()
            FROM gone WHERE gone.record_id = r.id AND r.status IN ('QUEUED', 'BATCHING')
            RETURNING r.id, r.account_id, r.hash, gone.network_id, gone.chain_type`.pipe(Effect.flatMap(decodeFailed))
          return yield* append(sql, failed.map((f) => ({
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
        }))
      })

      const forgetNetwork = Effect.fn("BatchStore.forgetNetwork")(function*(networkId: string) {
        const batches = yield* sql`
          SELECT id::text AS id FROM anchor_batches WHERE network_id = ${networkId} AND state NOT IN ('DROPPED', 'FAILED') ORDER BY anchor_batches.id`
          .pipe(Effect.flatMap(decodeIds))
        let requeued = 0
        for (const b of batches) requeued += yield* sql.withTransaction(dropBatch(sql, b.id, "chain reset"))
        return requeued
      })

      return BatchStore.of({
        queueState,
        cutBatch,
        openBatches,
        findLiveBatchByRoot,
        findFailedBatchByRoot,
        resetToPending,
        noteError,
        confirm,
        drop,
        fail,
        forgetNetwork
      })
    })
  )
}
