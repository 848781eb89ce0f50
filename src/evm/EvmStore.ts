/**
 * The EVM writer's and watcher's own bookkeeping (docs/anchoring-evm.md): a batch's signed
 * transactions (nonce, gas, fees, raw tx and every hash sent for it, persisted before broadcast), where
 * it was mined, a given-up batch mined after all, and the watcher's cursor. The state machine they drive
 * (confirm, drop, fail, ...) is the chain-neutral BatchStore's.
 *
 * SqlError stays typed: the loops log a failure once and try again on their next tick.
 */
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type SqlError, SqlSchema } from "effect/sql"
import { BatchStore } from "../anchoring/BatchStore.ts"
import { selectOpenBatches } from "../anchoring/batchReads.ts"
import { batchTransitions } from "../anchoring/batchTransitions.ts"
import { fence } from "../anchoring/Leadership.ts"
import { batchRowOf, type Hex, HexString, IdRow } from "../anchoring/model.ts"
import { rowDefects } from "../db/rows.ts"
import { type AssignedRange, LogStore, type PublishedCheckpoint } from "../translog/LogStore.ts"

/** A batch row with its transaction fields as `0x` hex. */
export const EvmBatchRow = batchRowOf(HexString)
export type EvmBatchRow = typeof EvmBatchRow.Type

export interface Cursor {
  readonly blockNumber: bigint
  readonly blockHash: Hex
}

/** Where an `Anchored` log puts a batch. */
export interface MinedFacts {
  readonly txHash: Hex
  readonly chainBatchId: bigint
  readonly blockNumber: bigint
  readonly blockHash: Hex
  readonly anchoredAt: Date
  readonly gasUsed: bigint | null
}

export interface SentTransaction {
  readonly nonce: number
  readonly gas: bigint
  readonly txHash: Hex
  readonly rawTx: Hex
  readonly maxFeePerGas: bigint
  readonly maxPriorityFeePerGas: bigint
}

const CursorRow = Schema.Struct({ blockNumber: Schema.BigIntFromString, blockHash: HexString })

// What the writer and watcher store, encoded for SQL: bigints as text (cast to bigint / numeric there).
const MinedFactsSql = Schema.Struct({
  txHash: HexString,
  chainBatchId: Schema.BigIntFromString,
  blockNumber: Schema.BigIntFromString,
  blockHash: HexString,
  anchoredAt: Schema.Date,
  gasUsed: Schema.NullOr(Schema.BigIntFromString)
})
const SentTransactionSql = Schema.Struct({
  nonce: Schema.Number,
  gas: Schema.BigIntFromString,
  txHash: HexString,
  rawTx: HexString,
  maxFeePerGas: Schema.BigIntFromString,
  maxPriorityFeePerGas: Schema.BigIntFromString
})
const BatchFacts = Schema.Struct({ batchId: Schema.String, facts: MinedFactsSql })

export class EvmStore extends Context.Service<EvmStore, {
  /** The network's PENDING, SENT and MINED batches, oldest first. */
  readonly openBatches: (networkId: string) => Effect.Effect<ReadonlyArray<EvmBatchRow>, SqlError.SqlError>
  /** A signed transaction (a first one, or a replacement at the same nonce), stored before it is broadcast. */
  readonly markSent: (batchId: string, tx: SentTransaction) => Effect.Effect<void, SqlError.SqlError>
  /**
   * `markSent` of a transaction carrying the batch's log checkpoint: the batch's range is assigned at the
   * network's tentative head (src/translog), `sign` signs with it, and both are stored in one transaction.
   */
  readonly markSentWithCheckpoint: <E>(
    batchId: string,
    networkId: string,
    leafCount: number,
    sign: (range: AssignedRange) => Effect.Effect<SentTransaction, E>
  ) => Effect.Effect<{ readonly range: AssignedRange; readonly tx: SentTransaction }, E | SqlError.SqlError>
  /**
   * The batch goes back (PENDING, FAILED, DROPPED): the log is cut at its range, and every later batch that had
   * a range and is SENT goes back to PENDING with that attempt not counted (its transaction in flight reverts
   * with CheckpointMismatch); with `uncountSelf`, this batch too. The later batches' ids.
   */
  readonly rewindLog: (batchId: string, reason: string, uncountSelf: boolean) => Effect.Effect<ReadonlyArray<string>, SqlError.SqlError>
  /** The batch confirmed: its checkpoint published (nothing when it has no range). */
  readonly publishCheckpoint: (batchId: string) => Effect.Effect<PublishedCheckpoint | undefined, SqlError.SqlError>
  /** Whether the chain's checkpoint is one of the network's log (LogStore.agrees). */
  readonly logAgrees: (networkId: string, size: number, root: Uint8Array) => Effect.Effect<boolean, SqlError.SqlError>
  /** Where the batch is in its network's log, if it has a range. */
  readonly logRange: (batchId: string) => Effect.Effect<{ readonly start: number; readonly leafCount: number } | undefined, SqlError.SqlError>
  /** Dies unless the pipeline's leadership still holds its lock (src/anchoring/Leadership.ts); before a broadcast. */
  readonly fence: Effect.Effect<void, SqlError.SqlError>
  /** The root is anchored on chain already but its log was not found yet: SENT, so the writer checks it again. */
  readonly markAdopted: (batchId: string) => Effect.Effect<void, SqlError.SqlError>
  readonly markMined: (batchId: string, facts: MinedFacts) => Effect.Effect<void, SqlError.SqlError>
  /**
   * A FAILED batch whose transaction was mined after all: batch → MINED with the facts, its anchors back
   * from failed_anchors, its records still FAILED read BATCHING again (confirmation then makes them ANCHORED,
   * with anchor.confirmed events). The number of records revived; undefined when the batch was not
   * FAILED any more or a live batch has its root.
   */
  readonly revive: (batchId: string, facts: MinedFacts) => Effect.Effect<number | undefined, SqlError.SqlError>
  readonly cursor: (networkId: string) => Effect.Effect<Cursor | undefined, SqlError.SqlError>
  readonly saveCursor: (networkId: string, cursor: Cursor) => Effect.Effect<void, SqlError.SqlError>
  /** The chain was reset (dev chain): every live batch dropped and its records re-queued, the cursor forgotten. */
  readonly resetNetwork: (networkId: string) => Effect.Effect<number, SqlError.SqlError>
}>()("anchord/evm/EvmStore") {
  static readonly layer = Layer.effect(
    EvmStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const batches = yield* BatchStore
      const logs = yield* LogStore
      const transitions = batchTransitions(sql)

      /** The columns a mined transaction sets on its batch (`markMined`, and `revive` of a given-up batch). */
      const minedColumns = (f: typeof MinedFactsSql.Encoded) =>
        sql`
        tx_hash = ${f.txHash}, chain_batch_id = ${f.chainBatchId}::bigint,
        block_number = ${f.blockNumber}::bigint, block_hash = ${f.blockHash}, anchored_at = ${f.anchoredAt},
        gas_used = COALESCE(${f.gasUsed}::bigint, gas_used),
        tx_hashes = CASE WHEN ${f.txHash}::text = ANY(tx_hashes) THEN tx_hashes ELSE array_append(tx_hashes, ${f.txHash}::text) END`

      const findOpenBatches = SqlSchema.findAll({
        Request: Schema.String,
        Result: EvmBatchRow,
        execute: (networkId) => selectOpenBatches(sql, networkId)
      })
      const findCursor = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: CursorRow,
        execute: (networkId) => sql`SELECT block_number::text AS block_number, block_hash FROM chain_cursors WHERE network_id = ${networkId}`
      })

      const updateSent = SqlSchema.void({
        Request: Schema.Struct({ batchId: Schema.String, tx: SentTransactionSql, sentAt: Schema.Date }),
        execute: ({ batchId, sentAt, tx }) =>
          sql`
          UPDATE anchor_batches SET state = 'SENT', nonce = ${tx.nonce}, gas_limit = ${tx.gas}::bigint, tx_hash = ${tx.txHash},
            raw_tx = ${tx.rawTx}, tx_hashes = array_append(tx_hashes, ${tx.txHash}::text),
            max_fee_per_gas = ${tx.maxFeePerGas}::numeric, max_priority_fee_per_gas = ${tx.maxPriorityFeePerGas}::numeric,
            sent_at = ${sentAt}, attempts = attempts + 1, updated_at = now()
          WHERE id = ${batchId} AND state IN ('PENDING', 'SENT')`
      })
      const updateAdopted = SqlSchema.void({
        Request: Schema.Struct({ batchId: Schema.String, sentAt: Schema.Date }),
        execute: ({ batchId, sentAt }) =>
          sql`
          UPDATE anchor_batches SET state = 'SENT', sent_at = ${sentAt}, updated_at = now() WHERE id = ${batchId} AND state = 'PENDING'`
      })
      const updateMined = SqlSchema.void({
        Request: BatchFacts,
        execute: ({ batchId, facts }) =>
          sql`
          UPDATE anchor_batches SET state = CASE WHEN state = 'CONFIRMED' THEN state ELSE 'MINED' END,
            ${minedColumns(facts)},
            updated_at = now()
          WHERE id = ${batchId} AND state IN ('PENDING', 'SENT', 'MINED')`
      })
      const updateRevived = SqlSchema.findOneOption({
        Request: BatchFacts,
        Result: IdRow,
        execute: ({ batchId, facts }) =>
          sql`
            UPDATE anchor_batches b SET state = 'MINED',
              ${minedColumns(facts)},
              last_error = 'mined after it was given up (' || COALESCE(last_error, 'failed') || ')', updated_at = now()
            WHERE id = ${batchId} AND state = 'FAILED'
              AND NOT EXISTS (SELECT 1 FROM anchor_batches l WHERE l.network_id = b.network_id AND l.merkle_root = b.merkle_root
                              AND l.state NOT IN ('DROPPED', 'FAILED'))
            RETURNING id::text AS id`
      })
      const resetUncounted = SqlSchema.void({
        Request: Schema.Struct({ ids: Schema.Array(Schema.String), reason: Schema.String }),
        execute: ({ ids, reason }) =>
          sql`
          UPDATE anchor_batches SET state = 'PENDING', nonce = NULL, tx_hash = NULL, raw_tx = NULL, last_error = ${reason},
            attempts = GREATEST(attempts - 1, 0), updated_at = now()
          WHERE id = ANY(${ids}::bigint[]) AND state = 'SENT'`
      })
      const upsertCursor = SqlSchema.void({
        Request: Schema.Struct({ networkId: Schema.String, cursor: CursorRow }),
        execute: ({ cursor, networkId }) =>
          sql`
          INSERT INTO chain_cursors (network_id, block_number, block_hash) VALUES (${networkId}, ${cursor.blockNumber}::bigint, ${cursor.blockHash})
          ON CONFLICT (network_id) DO UPDATE SET block_number = EXCLUDED.block_number, block_hash = EXCLUDED.block_hash, updated_at = now()`
      })
      const deleteCursor = SqlSchema.void({
        Request: Schema.String,
        execute: (networkId) => sql`DELETE FROM chain_cursors WHERE network_id = ${networkId}`
      })

      const openBatches = Effect.fn("EvmStore.openBatches")(function*(networkId: string) {
        return yield* rowDefects(findOpenBatches(networkId))
      })

      // sent_at on the node's Clock: the writer measures a transaction's age (stuck, fee bump) against it.
      const markSent = Effect.fn("EvmStore.markSent")(function*(batchId: string, tx: SentTransaction) {
        const now = yield* Clock.currentTimeMillis
        // Fencing (src/anchoring/Leadership.ts): a leader that lost its lock stores no transaction to send.
        yield* sql.withTransaction(Effect.andThen(fence(sql), rowDefects(updateSent({ batchId, tx, sentAt: new Date(now) }))))
      })

      const markSentWithCheckpoint = <E>(
        batchId: string,
        networkId: string,
        leafCount: number,
        sign: (range: AssignedRange) => Effect.Effect<SentTransaction, E>
      ) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const leaves = yield* logs.batchLeaves(batchId, leafCount)
          return yield* sql.withTransaction(Effect.gen(function*() {
            yield* fence(sql)
            const range = yield* logs.assign(networkId, batchId, leaves)
            const tx = yield* sign(range)
            yield* rowDefects(updateSent({ batchId, tx, sentAt: new Date(now) }))
            return { range, tx }
          }))
        }).pipe(Effect.withSpan("EvmStore.markSentWithCheckpoint"))

      const rewindLog = Effect.fn("EvmStore.rewindLog")(function*(batchId: string, reason: string, uncountSelf: boolean) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const later = yield* logs.truncateFrom(batchId)
          const ids = uncountSelf ? [batchId, ...later] : later
          if (ids.length > 0) yield* rowDefects(resetUncounted({ ids, reason }))
          return later
        }))
      })

      const markAdopted = Effect.fn("EvmStore.markAdopted")(function*(batchId: string) {
        const now = yield* Clock.currentTimeMillis
        yield* rowDefects(updateAdopted({ batchId, sentAt: new Date(now) }))
      })

      const markMined = Effect.fn("EvmStore.markMined")(function*(batchId: string, f: MinedFacts) {
        yield* rowDefects(updateMined({ batchId, facts: f }))
      })

      const revive = Effect.fn("EvmStore.revive")(function*(batchId: string, f: MinedFacts) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const revived = yield* rowDefects(updateRevived({ batchId, facts: f }))
          if (Option.isNone(revived)) return undefined
          return yield* transitions.restoreFailedAnchors(batchId)
        }))
      })

      const cursor = Effect.fn("EvmStore.cursor")(function*(networkId: string) {
        return Option.getOrUndefined(yield* rowDefects(findCursor(networkId)))
      })

      const saveCursor = Effect.fn("EvmStore.saveCursor")(function*(networkId: string, c: Cursor) {
        yield* rowDefects(upsertCursor({ networkId, cursor: c }))
      })

      const resetNetwork = Effect.fn("EvmStore.resetNetwork")(function*(networkId: string) {
        const requeued = yield* batches.forgetNetwork(networkId)
        yield* rowDefects(deleteCursor(networkId))
        yield* logs.forget(networkId)
        return requeued
      })

      return EvmStore.of({
        openBatches,
        markSent,
        markSentWithCheckpoint,
        rewindLog,
        publishCheckpoint: logs.publish,
        logRange: logs.range,
        logAgrees: logs.agrees,
        fence: fence(sql),
        markAdopted,
        markMined,
        revive,
        cursor,
        saveCursor,
        resetNetwork
      })
    })
  ).pipe(Layer.provide(LogStore.layer))
}
