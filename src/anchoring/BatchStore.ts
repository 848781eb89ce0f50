/**
 * The chain-neutral batch state machine (docs/anchoring-evm.md, "Record states"): cutting batches,
 * confirmation (records → ANCHORED, announced by one `batch_events` row per account from which each
 * record's `anchor.confirmed` is derived), reorg / reset (records back to QUEUED),
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
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type SqlError, SqlSchema } from "effect/sql"
import { rowDefects } from "../db/rows.ts"
import { append } from "../outbox/Outbox.ts"
import { fence } from "./Leadership.ts"
import { countBatchFailed, metricsHandle, observeAnchored } from "../metrics/metrics.ts"
import { annotateSampled } from "../tracing/attributes.ts"
import { buildTreeLevels, type Hex } from "./merkle.ts"
import { buildRecordLogLevels } from "./recordLog.ts"
import { stateJoin } from "./recordState.ts"
import { AnchorChainType, BatchMeta, BatchRow, BatchState, CountRow, Environment, IdRow } from "./model.ts"

/** The columns of a `BatchRow` (`batchRowOf`). */
export const batchColumns = (sql: SqlClient.SqlClient) =>
  sql`id::text AS id, network_id, merkle_root, leaf_count, state, attempts, nonce::text AS nonce, gas_limit::text AS gas_limit, tx_hash,
    raw_tx, tx_hashes, max_fee_per_gas::text AS max_fee_per_gas, max_priority_fee_per_gas::text AS max_priority_fee_per_gas,
    sent_at, chain_batch_id::text AS chain_batch_id, block_number::text AS block_number, block_hash, created_at, log_root`

/** The batches of a network still under way (PENDING, SENT, MINED), oldest first; rows to decode. */
export const selectOpenBatches = (sql: SqlClient.SqlClient, networkId: string) =>
  sql`SELECT ${batchColumns(sql)} FROM anchor_batches
      WHERE network_id = ${networkId} AND state IN ('PENDING', 'SENT', 'MINED') ORDER BY anchor_batches.id`

/**
 * The records a network's batcher claims: its own; with `hybridEnvironment` (the Fabric network of an
 * environment), also that environment's hybrid records, whose `network_id` is their EVM network.
 */
const claimScope = (sql: SqlClient.SqlClient, networkId: string, hybridEnvironment: Environment | undefined) =>
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
const notYetInBatchOf = (sql: SqlClient.SqlClient, networkId: string) =>
  sql`(SELECT true FROM anchors a WHERE a.record_id = r.id AND a.network_id = ${networkId}) IS NULL`

/**
 * Where a network's queue starts (`queue_cursors`): records before it, in
 * (insert_xid, id) order, are in a batch of the network or not in its scope. Records are never updated
 * when cut, so the queue is read from here, in the order of the index `records_queue`, each record probed
 * for the network's anchor; the cursor then moves to where the cut stopped (`nextCursor`).
 */
interface Cursor {
  readonly xid: string
  readonly id: string
}
const CursorRow = Schema.Struct({ xid: Schema.String, id: Schema.String })

/** The first `max` records of a network's queue, in the order a cut takes them: the look and the claim read the same rows. */
const queueHead = (sql: SqlClient.SqlClient, networkId: string, max: number, hybridEnvironment: Environment | undefined, from: Cursor) =>
  sql`FROM records r
    WHERE r.status = 'QUEUED' AND (r.insert_xid, r.id) >= (${from.xid}::numeric, ${from.id})
      AND ${claimScope(sql, networkId, hybridEnvironment)} AND ${notYetInBatchOf(sql, networkId)}
    ORDER BY r.insert_xid, r.id LIMIT ${max}`

/**
 * Where the queue starts after a cut that took `claimed` (in queue order) of at most `max`, its snapshot
 * having every transaction before `horizon` finished: all it saw before its last record was taken. Never
 * past `horizon`: a record of a transaction still in flight then commits later, behind the records taken.
 */
const nextCursor = (claimed: ReadonlyArray<{ readonly xid: string; readonly id: string }>, max: number, horizon: string): Cursor => {
  const last = claimed[claimed.length - 1]
  if (last === undefined || claimed.length < max || BigInt(last.xid) >= BigInt(horizon)) return { xid: horizon, id: "" }
  return { xid: last.xid, id: last.id }
}

const QueueRow = Schema.Struct({ count: Schema.Number, oldest: Schema.NullOr(Schema.Date) })
const ClaimedRow = Schema.Struct({ id: Schema.String, hash: Schema.String, xid: Schema.String, horizon: Schema.String })
const ExistingBatchRow = Schema.Struct({ id: Schema.String, state: BatchState })
/** A live batch the cut's records join; `hasLevels`: its trees are stored (a batch cut by an older node has none). */
const LiveBatchRow = Schema.Struct({ id: Schema.String, state: BatchState, hasLevels: Schema.Boolean })

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

/** A batch by id (`anchor_batches.id`, bigint, as text). */
const BatchId = Schema.String

/**
 * The statements of the transitions other stores run inside their own transactions (`completeRecords`,
 * `confirmBatchRecords`, `restoreFailedAnchors`, `ensureQueueCursor`) and of `dropBatch`; built once per
 * client.
 */
const statementsOf = (sql: SqlClient.SqlClient) => ({
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
  }),
  ensureCursor: SqlSchema.void({
    Request: Schema.Struct({ networkId: Schema.String, hybridEnvironment: Schema.optional(Environment) }),
    execute: ({ hybridEnvironment, networkId }) =>
      sql`
    INSERT INTO queue_cursors (network_id, after_xid, after_id)
    SELECT ${networkId}, q.x, q.id FROM (
      (SELECT r.insert_xid AS x, r.id FROM records r
       WHERE r.status = 'QUEUED' AND ${claimScope(sql, networkId, hybridEnvironment)} AND ${notYetInBatchOf(sql, networkId)}
       ORDER BY r.insert_xid, r.id LIMIT 1)
      UNION ALL SELECT pg_snapshot_xmin(pg_current_snapshot())::text::numeric, ''
      ORDER BY 1, 2 LIMIT 1) q
    WHERE NOT EXISTS (SELECT 1 FROM queue_cursors WHERE network_id = ${networkId})
    ON CONFLICT (network_id) DO NOTHING`
  })
})
/** A batch moved to its new state (setState): which one, and its network (the failed-batch metric's label). */
const StateSet = Schema.Struct({ id: Schema.String, networkId: Schema.String })

const statementsCache = new WeakMap<SqlClient.SqlClient, ReturnType<typeof statementsOf>>()
const statements = (sql: SqlClient.SqlClient) => {
  let built = statementsCache.get(sql)
  if (built === undefined) statementsCache.set(sql, built = statementsOf(sql))
  return built
}

/**
 * Records of the batch that are ANCHORED now that the batch is confirmed (SPEC 4: every required
 * anchor's batch CONFIRMED; their state is read, nothing is written to them), announced
 * by one `batch_events` row per account: each record's `anchor.confirmed` is derived
 * from the record, its anchors and this batch (anchorViews.ts `anchorConfirmedPayloads`), and the row's trigger
 * writes the webhook fan-out. One SELECT, one INSERT. `only`: the records that joined an already
 * confirmed batch (the others were announced when it was confirmed). The number of records announced.
 */
export const completeRecords = Effect.fn("BatchStore.completeRecords")(function*(sql: SqlClient.SqlClient, batchId: string, only?: ReadonlyArray<string>) {
  const q = statements(sql)
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
export const confirmBatchRecords = Effect.fn("BatchStore.confirmBatchRecords")(function*(sql: SqlClient.SqlClient, batchId: string) {
  const q = statements(sql)
  yield* rowDefects(q.lockHybridRecords(batchId))
  // After the lock: of a hybrid record's two batches, the one confirmed last completed it (its anchoredAt).
  yield* rowDefects(q.markConfirmedAt(batchId))
  return yield* completeRecords(sql, batchId)
})

/**
 * Inside the caller's transaction, for a FAILED batch it has just set MINED (its given-up transaction
 * was mined after all): its anchors come back from failed_anchors for the records that are still FAILED
 * and have not been anchored on this network since, and those records are no longer FAILED (status
 * QUEUED: with their anchors back they read BATCHING; confirmation then makes them ANCHORED, with
 * anchor.confirmed events). The number of records revived.
 */
export const restoreFailedAnchors = Effect.fn("BatchStore.restoreFailedAnchors")(function*(sql: SqlClient.SqlClient, batchId: string) {
  return (yield* rowDefects(statements(sql).restoreFailed(batchId))).n
})

/**
 * Batch DROPPED (unless DROPPED or FAILED already), its anchors deleted: its records read QUEUED again
 * (the batch is reset, not the records), and the network's queue cursor moves back to the first of
 * them, so the next cut takes them. The number of records re-queued (those not FAILED).
 */
const dropBatch = Effect.fn("BatchStore.dropBatch")(function*(sql: SqlClient.SqlClient, batchId: string, reason: string) {
  const q = statements(sql)
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

/**
 * A network's queue cursor, made if it has none: at its first queued record (one walk of the index,
 * once in the database's life), never past a transaction in flight. Made at a batcher's first look,
 * and at every node's start for the networks its ingest assigns (src/records/Ingest.ts): records of a
 * network no batcher serves then still count as QUEUED (`mayBeQueued`, src/anchoring/recordState.ts).
 */
export const ensureQueueCursor = (sql: SqlClient.SqlClient, networkId: string, hybridEnvironment?: Environment) =>
  rowDefects(statements(sql).ensureCursor({ networkId, hybridEnvironment }))

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
  /** Claims up to `max` queued records, builds both trees, persists the batch with them and its anchors (the records then read BATCHING), moves the cursor. */
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
  /**
   * The contract / chaincode cannot take the batch's RFC 9162 root (an older deployment): forgotten before
   * the batch is first sent, so it goes out with its root alone and has no receipts.
   */
  readonly clearLogRoot: (batchId: string) => Effect.Effect<void, SqlError.SqlError>
  /** A counted failed attempt. */
  readonly noteError: (batchId: string, error: string) => Effect.Effect<void, SqlError.SqlError>
  /** MINED → CONFIRMED (its anchors with it); records whose required anchors are all confirmed → ANCHORED + events. */
  readonly confirm: (batchId: string) => Effect.Effect<number, SqlError.SqlError>
  /** Reorganised out / abandoned: batch DROPPED, its anchors deleted (its records read QUEUED again, the cursor moved back). */
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

      // Networks whose cursor row exists (it is never deleted): checked once per process.
      const withCursor = new Set<string>()
      /**
       * The network's cursor, made at its first look: at its first queued record (one walk of the index,
       * once), never past a transaction in flight.
       */
      const ensureCursor = (networkId: string, hybridEnvironment: Environment | undefined) =>
        withCursor.has(networkId)
          ? Effect.void
          : ensureQueueCursor(sql, networkId, hybridEnvironment).pipe(Effect.tap(() => Effect.sync(() => withCursor.add(networkId))))

      const findCursor = SqlSchema.findOneOption({
        Request: Schema.Struct({ networkId: Schema.String, lock: Schema.Boolean }),
        Result: CursorRow,
        execute: ({ lock, networkId }) =>
          sql`SELECT after_xid::text AS xid, after_id AS id FROM queue_cursors WHERE network_id = ${networkId}
          ${lock ? sql`FOR UPDATE` : sql``}`
      })
      const readCursor = (networkId: string, lock: boolean) =>
        findCursor({ networkId, lock }).pipe(
          rowDefects,
          Effect.map(Option.getOrElse((): Cursor => ({ xid: "0", id: "" })))
        )

      /** The head of a network's queue from a cursor (`queueHead`): its size and oldest, or the rows a cut claims. */
      const QueueRequest = Schema.Struct({
        networkId: Schema.String,
        max: Schema.Number,
        hybridEnvironment: Schema.optional(Environment),
        from: CursorRow
      })
      const findQueue = SqlSchema.findOne({
        Request: QueueRequest,
        Result: QueueRow,
        execute: ({ from, hybridEnvironment, max, networkId }) =>
          sql`
          SELECT count(*)::int AS count, min(created_at) AS oldest FROM (
            SELECT r.created_at ${queueHead(sql, networkId, max, hybridEnvironment, from)}
          ) q`
      })
      const findClaimed = SqlSchema.findAll({
        Request: QueueRequest,
        Result: ClaimedRow,
        execute: ({ from, hybridEnvironment, max, networkId }) =>
          sql`
            SELECT r.id, r.hash, r.insert_xid::text AS xid, pg_snapshot_xmin(pg_current_snapshot())::text AS horizon
            ${queueHead(sql, networkId, max, hybridEnvironment, from)}`
      })
      const findLiveByRoot = SqlSchema.findOneOption({
        Request: Schema.Struct({ networkId: Schema.String, root: Schema.String }),
        Result: LiveBatchRow,
        execute: ({ networkId, root }) =>
          sql`
            SELECT id::text AS id, state, merkle_levels IS NOT NULL AS has_levels FROM anchor_batches
            WHERE network_id = ${networkId} AND merkle_root = ${root} AND state NOT IN ('DROPPED', 'FAILED')
            FOR UPDATE`
      })
      const insertBatch = SqlSchema.findOne({
        Request: Schema.Struct({
          networkId: Schema.String,
          root: Schema.String,
          leafCount: Schema.Number,
          logRoot: Schema.String,
          newest: Schema.String,
          meta: BatchMeta,
          merkleLevels: Schema.Uint8Array,
          logLevels: Schema.Uint8Array
        }),
        Result: IdRow,
        execute: ({ leafCount, logLevels, logRoot, merkleLevels, meta, networkId, newest, root }) =>
          meta.chainType === "fabric"
            ? sql`
                INSERT INTO anchor_batches (network_id, chain_type, merkle_root, leaf_count, state, channel, chaincode, log_root, max_insert_xid,
                  merkle_levels, log_levels)
                VALUES (${networkId}, 'fabric', ${root}, ${leafCount}, 'PENDING', ${meta.channel}, ${meta.chaincode}, ${logRoot}, ${newest}::numeric,
                  ${merkleLevels}, ${logLevels})
                RETURNING id::text AS id`
            : sql`
                INSERT INTO anchor_batches (network_id, chain_type, merkle_root, leaf_count, state, chain_id, contract_address, log_root, max_insert_xid,
                  merkle_levels, log_levels)
                VALUES (${networkId}, 'evm', ${root}, ${leafCount}, 'PENDING', ${meta.chainId}, ${meta.contractAddress.toLowerCase()}, ${logRoot},
                  ${newest}::numeric, ${merkleLevels}, ${logLevels})
                RETURNING id::text AS id`
      })
      const findBatches = SqlSchema.findAll({
        Request: Schema.String,
        Result: BatchRow,
        execute: (networkId) => selectOpenBatches(sql, networkId)
      })
      const findBatchByRoot = SqlSchema.findOneOption({
        Request: Schema.Struct({ networkId: Schema.String, root: Schema.String, state: Schema.Literals(["live", "FAILED"]) }),
        Result: BatchRow,
        execute: ({ networkId, root, state }) =>
          state === "live"
            ? sql`
              SELECT ${batchColumns(sql)} FROM anchor_batches
              WHERE network_id = ${networkId} AND merkle_root = ${root} AND state NOT IN ('DROPPED', 'FAILED')`
            : sql`
              SELECT ${batchColumns(sql)} FROM anchor_batches
              WHERE network_id = ${networkId} AND merkle_root = ${root} AND state = 'FAILED'
              ORDER BY anchor_batches.id DESC LIMIT 1`
      })
      /** A transition of one batch from the given states; the id when it happened. */
      const setState = SqlSchema.findOneOption({
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
      })
      /** The anchors of a given-up batch kept in failed_anchors; its records still QUEUED → FAILED. */
      const failRecords = SqlSchema.findAll({
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
      })
      const moveCursor = SqlSchema.void({
        Request: Schema.Struct({ networkId: Schema.String, to: CursorRow }),
        execute: ({ networkId, to }) => sql`UPDATE queue_cursors SET after_xid = ${to.xid}::numeric, after_id = ${to.id} WHERE network_id = ${networkId}`
      })
      // Records joining a live batch raise its newest record (a NULL, unknown, stays so).
      const raiseNewest = SqlSchema.void({
        Request: Schema.Struct({ batchId: BatchId, newest: Schema.String }),
        execute: ({ batchId, newest }) =>
          sql`
              UPDATE anchor_batches SET max_insert_xid = ${newest}::numeric WHERE id = ${batchId} AND max_insert_xid < ${newest}::numeric`
      })
      /**
       * A batch without stored trees (cut by an older node) that records join gets them: the joining anchors carry no
       * proofs. The same root, so the same hashes, so the same trees.
       */
      const storeLevels = SqlSchema.void({
        Request: Schema.Struct({ batchId: BatchId, merkleLevels: Schema.Uint8Array, logLevels: Schema.Uint8Array }),
        execute: ({ batchId, logLevels, merkleLevels }) =>
          sql`
              UPDATE anchor_batches SET merkle_levels = ${merkleLevels}, log_levels = ${logLevels} WHERE id = ${batchId} AND merkle_levels IS NULL`
      })
      /**
       * The cut's anchors, as one JSON document (`anchorsJson`, built by `cutBatch` from the trees it just
       * computed): a cut of thousands of records does no per-anchor schema work. No proofs: each record's leaf
       * positions in its batch's stored trees (src/anchoring/batchTrees.ts).
       */
      const insertAnchors = SqlSchema.void({
        Request: Schema.Struct({ batchId: BatchId, networkId: Schema.String, chainType: AnchorChainType, anchorsJson: Schema.String }),
        execute: ({ anchorsJson, batchId, chainType, networkId }) =>
          sql`
            INSERT INTO anchors (record_id, network_id, chain_type, batch_id, leaf_index, merkle_index, log_index)
            SELECT x.r, ${networkId}, ${chainType}, ${batchId}, x.i, x.mi, x.li
            FROM jsonb_to_recordset(${anchorsJson}::jsonb) AS x(r text, i int, mi int, li int)`
      })
      const updateBatch = SqlSchema.void({
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
      })
      const liveBatchIds = SqlSchema.findAll({
        Request: Schema.String,
        Result: IdRow,
        execute: (networkId) =>
          sql`
          SELECT id::text AS id FROM anchor_batches WHERE network_id = ${networkId} AND state NOT IN ('DROPPED', 'FAILED') ORDER BY anchor_batches.id`
      })

      const queueState = Effect.fn("BatchStore.queueState")(function*(networkId: string, max: number, hybridEnvironment?: Environment) {
        yield* ensureCursor(networkId, hybridEnvironment)
        const from = yield* readCursor(networkId, false)
        return yield* rowDefects(findQueue({ networkId, max, hybridEnvironment, from }))
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
          yield* ensureCursor(networkId, hybridEnvironment)
          // The cursor locked first: a drop moving it back waits for this cut, or this cut sees the drop.
          const from = yield* readCursor(networkId, true)
          // Nothing locked: a record is claimed by its anchor (primary key (record_id, network_id)).
          const claimed = yield* rowDefects(findClaimed({ networkId, max, hybridEnvironment, from }))
          if (claimed.length === 0) return undefined
          const next = nextCursor(claimed, max, claimed[0]!.horizon)
          if (next.xid !== from.xid || next.id !== from.id) {
            yield* rowDefects(moveCursor({ networkId, to: next }))
          }
          // Both trees stored once on the batch, their levels (src/anchoring/batchTrees.ts): proofs are derived when read.
          const tree = buildTreeLevels(claimed.map((r) => r.hash))
          // The batch's second tree, RFC 9162 over the same hashes (COSE Receipts): its root goes on chain in
          // the same transaction. Sorted leaves, so a joined batch (below) has the same log root too.
          const log = buildRecordLogLevels(claimed.map((r) => r.hash))
          // The newest record of the cut (anchor_batches.max_insert_xid: how the status filters
          // tell a recent batch, src/anchoring/recordState.ts).
          const newest = claimed.reduce((m, r) => BigInt(r.xid) > m ? BigInt(r.xid) : m, 0n).toString()
          // The same leaves as a live batch give the same root: the records join that batch (same proofs).
          const existing = Option.getOrUndefined(yield* rowDefects(findLiveByRoot({ networkId, root: tree.root })))
          const batchId = existing !== undefined
            ? existing.id
            : (yield* rowDefects(insertBatch({
              networkId,
              root: tree.root,
              leafCount: claimed.length,
              logRoot: log.root,
              newest,
              meta,
              merkleLevels: tree.levels,
              logLevels: log.levels
            }))).id
          if (existing !== undefined) yield* rowDefects(raiseNewest({ batchId, newest }))
          if (existing !== undefined && !existing.hasLevels) {
            yield* rowDefects(storeLevels({ batchId, merkleLevels: tree.levels, logLevels: log.levels }))
          }
          const anchorsJson = JSON.stringify(claimed.map((r, i) => ({ r: r.id, i, mi: tree.positions[i], li: log.indices[i] })))
          yield* rowDefects(insertAnchors({ batchId, networkId, chainType: meta.chainType, anchorsJson }))
          if (existing?.state === "CONFIRMED") {
            yield* completeRecords(sql, batchId, claimed.map((r) => r.id))
          }
          return { batchId, root: tree.root, leafCount: claimed.length, joined: existing !== undefined } satisfies CutBatch
        })).pipe(Effect.tap((cut) =>
          cut === undefined ?
            Effect.void
            : annotateSampled(() => ({ "anchord.batch_id": cut.batchId, "anchord.network_id": networkId, "anchord.record_count": cut.leafCount }))
        ))
      })

      const openBatches = Effect.fn("BatchStore.openBatches")(function*(networkId: string) {
        return yield* rowDefects(findBatches(networkId))
      })

      const findLiveBatchByRoot = Effect.fn("BatchStore.findLiveBatchByRoot")(function*(networkId: string, root: Hex) {
        return Option.getOrUndefined(yield* rowDefects(findBatchByRoot({ networkId, root, state: "live" })))
      })

      const findFailedBatchByRoot = Effect.fn("BatchStore.findFailedBatchByRoot")(function*(networkId: string, root: Hex) {
        return Option.getOrUndefined(yield* rowDefects(findBatchByRoot({ networkId, root, state: "FAILED" })))
      })

      const resetToPending = Effect.fn("BatchStore.resetToPending")(function*(batchId: string, error: string) {
        yield* rowDefects(updateBatch({ batchId, change: "resetToPending", error }))
      })

      const clearLogRoot = Effect.fn("BatchStore.clearLogRoot")(function*(batchId: string) {
        yield* rowDefects(updateBatch({ batchId, change: "clearLogRoot", error: "" }))
      })

      const noteError = Effect.fn("BatchStore.noteError")(function*(batchId: string, error: string) {
        yield* rowDefects(updateBatch({ batchId, change: "noteError", error }))
      })

      const confirm = Effect.fn("BatchStore.confirm")(function*(batchId: string) {
        yield* annotateSampled(() => ({ "anchord.batch_id": batchId }))
        return yield* sql.withTransaction(Effect.gen(function*() {
          if (Option.isNone(yield* rowDefects(setState({ batchId, to: "CONFIRMED" })))) return 0
          return yield* confirmBatchRecords(sql, batchId)
        }))
      })

      const drop = Effect.fn("BatchStore.drop")(function*(batchId: string, reason: string) {
        return yield* sql.withTransaction(dropBatch(sql, batchId, reason))
      })

      const fail = Effect.fn("BatchStore.fail")(function*(batchId: string, reason: string) {
        const done = yield* sql.withTransaction(Effect.gen(function*() {
          const moved = yield* rowDefects(setState({ batchId, to: "FAILED", reason }))
          if (Option.isNone(moved)) return undefined
          // The anchors go to failed_anchors: the given-up transaction may still be mined (restoreFailedAnchors).
          const failed = yield* rowDefects(failRecords(batchId))
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
        const batches = yield* rowDefects(liveBatchIds(networkId))
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
        clearLogRoot,
        noteError,
        confirm,
        drop,
        fail,
        forgetNetwork
      })
    })
  )
}
