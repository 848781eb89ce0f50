/**
 * The Fabric writer's and indexer's own bookkeeping (docs/anchoring-fabric.md): a batch's signed
 * transaction (stored before it is submitted), its commit, the indexer's checkpoint and block log, and
 * the application of a block — in one transaction with the chain-neutral confirmation of its batches
 * (BatchStore's `confirmBatchRecords`: anchors confirmed, records ANCHORED with their events).
 *
 * SqlError stays typed: the loops log a failure once and try again.
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { BatchStore, confirmBatchRecords } from "../anchoring/BatchStore.ts"
import { fence } from "../anchoring/Leadership.ts"
import { decodeFirst, decodeRows, IdRow } from "../anchoring/model.ts"

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
const decodeCheckpoint = decodeFirst(CheckpointRow)
const decodeIds = decodeRows(IdRow)

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

      const markSent = Effect.fn("FabricStore.markSent")(function*(batchId: string, tx: { readonly txId: string; readonly envelope: string }) {
        const now = yield* Clock.currentTimeMillis
        // Fencing (src/anchoring/Leadership.ts): a leader that lost its lock stores no transaction to send.
        yield* sql.withTransaction(Effect.andThen(fence(sql), sql`
          UPDATE anchor_batches SET state = 'SENT', tx_hash = ${tx.txId}, raw_tx = ${tx.envelope},
            tx_hashes = array_append(tx_hashes, ${tx.txId}::text), chain_batch_ref = COALESCE(chain_batch_ref, id::text),
            sent_at = ${new Date(now)}, attempts = attempts + 1, updated_at = now()
          WHERE id = ${batchId} AND state IN ('PENDING', 'SENT')`))
      })

      const markCommitted = Effect.fn("FabricStore.markCommitted")(function*(batchId: string, f: {
        readonly txId: string
        readonly blockNumber: bigint
        readonly batchRef: string
        readonly anchoredAt: Date
      }) {
        yield* sql`
          UPDATE anchor_batches SET state = 'MINED', tx_hash = ${f.txId}, block_number = ${f.blockNumber.toString()}::bigint,
            chain_batch_ref = ${f.batchRef}, anchored_at = ${f.anchoredAt},
            tx_hashes = CASE WHEN ${f.txId}::text = ANY(tx_hashes) THEN tx_hashes ELSE array_append(tx_hashes, ${f.txId}::text) END,
            updated_at = now()
          WHERE id = ${batchId} AND state IN ('PENDING', 'SENT', 'MINED')`
      })

      const checkpoint = Effect.fn("FabricStore.checkpoint")(function*(networkId: string) {
        return yield* sql`
          SELECT block_number::text AS block_number, tx_id, block_hash FROM fabric_checkpoints WHERE network_id = ${networkId}`.pipe(
          Effect.flatMap(decodeCheckpoint)
        )
      })

      const applyAdopted = Effect.fn("FabricStore.applyAdopted")(function*(batchId: string, blockHash: string) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          const rows = yield* sql`
            UPDATE anchor_batches SET state = 'CONFIRMED', block_hash = ${blockHash}, updated_at = now()
            WHERE id = ${batchId} AND state = 'MINED' RETURNING id`
          if (rows.length === 0) return 0
          return yield* confirmBatchRecords(sql, batchId)
        }))
      })

      const applyBlock = Effect.fn("FabricStore.applyBlock")(function*(
        networkId: string,
        block: BlockFacts,
        anchors: ReadonlyArray<CommittedAnchor>
      ) {
        return yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`
            INSERT INTO fabric_blocks (network_id, block_number, block_hash, tx_count, anchors)
            VALUES (${networkId}, ${block.number.toString()}::bigint, ${block.hash}, ${block.txCount}, ${anchors.length})`
          let confirmed = 0
          let records = 0
          for (const a of anchors) {
            const rows = yield* sql`
              UPDATE anchor_batches SET state = 'CONFIRMED', tx_hash = ${a.txId}, chain_batch_ref = ${a.batchRef},
                block_number = ${block.number.toString()}::bigint, block_hash = ${block.hash}, anchored_at = ${a.anchoredAt},
                tx_hashes = CASE WHEN ${a.txId}::text = ANY(tx_hashes) THEN tx_hashes ELSE array_append(tx_hashes, ${a.txId}::text) END,
                updated_at = now()
              WHERE network_id = ${networkId} AND merkle_root = ${a.root.toLowerCase()} AND chain_type = 'fabric'
                AND state IN ('PENDING', 'SENT', 'MINED')
              RETURNING id::text AS id`.pipe(Effect.flatMap(decodeIds))
            for (const r of rows) {
              confirmed++
              records += yield* confirmBatchRecords(sql, r.id)
            }
          }
          yield* sql`
            INSERT INTO fabric_checkpoints (network_id, block_number, tx_id, block_hash)
            VALUES (${networkId}, ${block.number.toString()}::bigint, ${block.lastTxId}, ${block.hash})
            ON CONFLICT (network_id) DO UPDATE SET block_number = EXCLUDED.block_number, tx_id = EXCLUDED.tx_id,
              block_hash = EXCLUDED.block_hash, updated_at = now()`
          return { batches: confirmed, records }
        }))
      })

      const resetNetwork = Effect.fn("FabricStore.resetNetwork")(function*(networkId: string) {
        const requeued = yield* batches.forgetNetwork(networkId)
        yield* sql`DELETE FROM fabric_checkpoints WHERE network_id = ${networkId}`
        yield* sql`DELETE FROM fabric_blocks WHERE network_id = ${networkId}`
        return requeued
      })

      return FabricStore.of({ markSent, markCommitted, checkpoint, applyAdopted, applyBlock, resetNetwork })
    })
  )
}
