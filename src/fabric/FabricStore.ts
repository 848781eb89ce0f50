/**
 * The Fabric writer's and indexer's own bookkeeping (docs/anchoring-fabric.md): a batch's signed
 * transaction (stored before it is submitted), its commit, the indexer's checkpoint and block log, and
 * the application of a block — in one transaction with the chain-neutral confirmation of its batches
 * (`confirmBatchRecords`, src/anchoring/batchTransitions.ts: anchors confirmed, records ANCHORED with their events).
 *
 * SqlError stays typed: the loops log a failure once and try again.
 */
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type SqlError, SqlSchema } from "effect/sql"
import { BatchStore } from "../anchoring/BatchStore.ts"
import { batchTransitions } from "../anchoring/batchTransitions.ts"
import { fence } from "../anchoring/Leadership.ts"
import { IdRow } from "../anchoring/model.ts"
import { rowDefects } from "../db/rows.ts"

/** A Fabric anchor seen in a committed block by the indexer (a VALID transaction's `Anchored` event). */
export interface CommittedAnchor {
  readonly root: string
  readonly txId: string
  readonly batchRef: string
  readonly anchoredAt: Date
}

export interface Checkpoint {
  readonly blockNumber: bigint
  readonly txId: string | null
  readonly blockHash: string
}

export interface BlockFacts {
  readonly number: bigint
  readonly hash: string
  readonly lastTxId: string | null
  readonly txCount: number
}

const CheckpointRow = Schema.Struct({ blockNumber: Schema.BigIntFromString, txId: Schema.NullOr(Schema.String), blockHash: Schema.String })

export class FabricStore extends Context.Service<FabricStore, {
  /** The signed transaction (tx id + prepared transaction bytes) is stored before it is submitted. */
  readonly markSent: (batchId: string, tx: { readonly txId: string; readonly envelope: string }) => Effect.Effect<void, SqlError.SqlError>
  /** The writer saw its transaction committed VALID (the indexer confirms it from the block). */
  readonly markCommitted: (batchId: string, facts: {
    readonly txId: string
    readonly blockNumber: bigint
    readonly batchRef: string
    readonly anchoredAt: Date
  }) => Effect.Effect<void, SqlError.SqlError>
  readonly checkpoint: (networkId: string) => Effect.Effect<Checkpoint | undefined, SqlError.SqlError>
  /** An adopted anchor whose block the indexer had passed before the batch existed: MINED → CONFIRMED (records, events). */
  readonly applyAdopted: (batchId: string, blockHash: string) => Effect.Effect<number, SqlError.SqlError>
  /**
   * The indexer, one transaction per block: the block is logged (once: a second time violates the key
   * and rolls everything back), every live batch whose root is anchored in it is CONFIRMED with its
   * records (events), and the checkpoint moves to this block.
   */
  readonly applyBlock: (networkId: string, block: BlockFacts, anchors: ReadonlyArray<CommittedAnchor>) => Effect.Effect<
    { readonly batches: number; readonly records: number },
    SqlError.SqlError
  >
  /** The network was reset (a fresh dev peer): every live batch dropped and its records re-queued, checkpoint and block log forgotten. */
  readonly resetNetwork: (networkId: string) => Effect.Effect<number, SqlError.SqlError>
}>()("anchord/fabric/FabricStore") {
  static readonly layer = Layer.effect(
    FabricStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const batches = yield* BatchStore
      const transitions = batchTransitions(sql)

      const findCheckpoint = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: CheckpointRow,
        execute: (networkId) => sql`SELECT block_number::text AS block_number, tx_id, block_hash FROM fabric_checkpoints WHERE network_id = ${networkId}`
      })
      const confirmAdopted = SqlSchema.findOneOption({
        Request: Schema.Struct({ batchId: Schema.String, blockHash: Schema.String }),
        Result: IdRow,
        execute: ({ batchId, blockHash }) =>
          sql`
            UPDATE anchor_batches SET state = 'CONFIRMED', block_hash = ${blockHash}, updated_at = now()
            WHERE id = ${batchId} AND state = 'MINED' RETURNING id::text AS id`
      })
      const updateSent = SqlSchema.void({
        Request: Schema.Struct({ batchId: Schema.String, txId: Schema.String, envelope: Schema.String, sentAt: Schema.Date }),
        execute: ({ batchId, envelope, sentAt, txId }) =>
          sql`
          UPDATE anchor_batches SET state = 'SENT', tx_hash = ${txId}, raw_tx = ${envelope},
            tx_hashes = array_append(tx_hashes, ${txId}::text), chain_batch_ref = COALESCE(chain_batch_ref, id::text),
            sent_at = ${sentAt}, attempts = attempts + 1, updated_at = now()
          WHERE id = ${batchId} AND state IN ('PENDING', 'SENT')`
      })
      const updateCommitted = SqlSchema.void({
        Request: Schema.Struct({
          batchId: Schema.String,
          txId: Schema.String,
          blockNumber: Schema.BigIntFromString,
          batchRef: Schema.String,
          anchoredAt: Schema.Date
        }),
        execute: (f) =>
          sql`
          UPDATE anchor_batches SET state = 'MINED', tx_hash = ${f.txId}, block_number = ${f.blockNumber}::bigint,
            chain_batch_ref = ${f.batchRef}, anchored_at = ${f.anchoredAt},
            tx_hashes = CASE WHEN ${f.txId}::text = ANY(tx_hashes) THEN tx_hashes ELSE array_append(tx_hashes, ${f.txId}::text) END,
            updated_at = now()
          WHERE id = ${f.batchId} AND state IN ('PENDING', 'SENT', 'MINED')`
      })
      const BlockRequest = Schema.Struct({
        networkId: Schema.String,
        number: Schema.BigIntFromString,
        hash: Schema.String,
        lastTxId: Schema.NullOr(Schema.String),
        txCount: Schema.Number,
        anchors: Schema.Number
      })
      /** The block logged, once: a second time violates its key and rolls the block's transaction back. */
      const insertBlock = SqlSchema.void({
        Request: BlockRequest,
        execute: (b) =>
          sql`
            INSERT INTO fabric_blocks (network_id, block_number, block_hash, tx_count, anchors)
            VALUES (${b.networkId}, ${b.number}::bigint, ${b.hash}, ${b.txCount}, ${b.anchors})`
      })
      const upsertCheckpoint = SqlSchema.void({
        Request: BlockRequest,
        execute: (b) =>
          sql`
            INSERT INTO fabric_checkpoints (network_id, block_number, tx_id, block_hash)
            VALUES (${b.networkId}, ${b.number}::bigint, ${b.lastTxId}, ${b.hash})
            ON CONFLICT (network_id) DO UPDATE SET block_number = EXCLUDED.block_number, tx_id = EXCLUDED.tx_id,
              block_hash = EXCLUDED.block_hash, updated_at = now()`
      })
      const forget = SqlSchema.void({
        Request: Schema.String,
        execute: (networkId) =>
          Effect.andThen(
            sql`DELETE FROM fabric_checkpoints WHERE network_id = ${networkId}`,
            sql`DELETE FROM fabric_blocks WHERE network_id = ${networkId}`
          )
      })
      /** The live batches of the network whose root the block anchors: CONFIRMED with the block's facts. */
      const confirmAnchored = SqlSchema.findAll({
        Request: Schema.Struct({
          networkId: Schema.String,
          blockNumber: Schema.String,
          blockHash: Schema.String,
          root: Schema.String,
          txId: Schema.String,
          batchRef: Schema.String,
          anchoredAt: Schema.Date
        }),
        Result: IdRow,
        execute: (a) =>
          sql`
              UPDATE anchor_batches SET state = 'CONFIRMED', tx_hash = ${a.txId}, chain_batch_ref = ${a.batchRef},
                block_number = ${a.blockNumber}::bigint, block_hash = ${a.blockHash}, anchored_at = ${a.anchoredAt},
                tx_hashes = CASE WHEN ${a.txId}::text = ANY(tx_hashes) THEN tx_hashes ELSE array_append(tx_hashes, ${a.txId}::text) END,
                updated_at = now()
              WHERE network_id = ${a.networkId} AND merkle_root = ${a.root} AND chain_type = 'fabric'
                AND state IN ('PENDING', 'SENT', 'MINED')
              RETURNING id::text AS id`
      })

      const markSent = Effect.fn("FabricStore.markSent")(function*(batchId: string, tx: { readonly txId: string; readonly envelope: string }) {
        const now = yield* Clock.currentTimeMillis
        // Fencing (src/anchoring/Leadership.ts): a leader that lost its lock stores no transaction to send.
        yield* sql.withTransaction(
          Effect.andThen(fence(sql), rowDefects(updateSent({ batchId, txId: tx.txId, envelope: tx.envelope, sentAt: new Date(now) })))
        )
      })

      const markCommitted = Effect.fn("FabricStore.markCommitted")(function*(batchId: string, f: {
        readonly txId: string
        readonly blockNumber: bigint
        readonly batchRef: string
        readonly anchoredAt: Date
      }) {
        yield* rowDefects(updateCommitted({ batchId, ...f }))
      })

      const checkpoint = Effect.fn("FabricStore.checkpoint")(function*(networkId: string) {
        return Option.getOrUndefined(yield* rowDefects(findCheckpoint(networkId)))
      })

      const applyAdopted = Effect.fn("FabricStore.applyAdopted")(function*(batchId: string, blockHash: string) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          if (Option.isNone(yield* rowDefects(confirmAdopted({ batchId, blockHash })))) return 0
          return yield* transitions.confirmBatchRecords(batchId)
        }))
      })

      const applyBlock = Effect.fn("FabricStore.applyBlock")(function*(
        networkId: string,
        block: BlockFacts,
        anchors: ReadonlyArray<CommittedAnchor>
      ) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const logged = { networkId, ...block, anchors: anchors.length }
          yield* rowDefects(insertBlock(logged))
          let confirmed = 0
          let records = 0
          for (const a of anchors) {
            const rows = yield* rowDefects(confirmAnchored({
              networkId,
              blockNumber: block.number.toString(),
              blockHash: block.hash,
              root: a.root.toLowerCase(),
              txId: a.txId,
              batchRef: a.batchRef,
              anchoredAt: a.anchoredAt
            }))
            for (const r of rows) {
              confirmed++
              records += yield* transitions.confirmBatchRecords(r.id)
            }
          }
          yield* rowDefects(upsertCheckpoint(logged))
          return { batches: confirmed, records }
        }))
      })

      const resetNetwork = Effect.fn("FabricStore.resetNetwork")(function*(networkId: string) {
        const requeued = yield* batches.forgetNetwork(networkId)
        yield* rowDefects(forget(networkId))
        return requeued
      })

      return FabricStore.of({ markSent, markCommitted, checkpoint, applyAdopted, applyBlock, resetNetwork })
    })
  )
}
