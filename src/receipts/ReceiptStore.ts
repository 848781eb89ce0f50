/**
 * What a record's COSE Receipt is built from: a confirmed anchor of the record whose batch has an RFC 9162
 * tree, and the record's inclusion path in that tree.
 */
import { Context, Effect, Layer, type Option, Schema } from "effect"
import { SqlClient, type SqlError, SqlSchema } from "effect/sql"
import { batchTreeNodes, logProofOffsets } from "../anchoring/batchTrees.ts"
import { splitProof } from "../anchoring/rfc9162.ts"
import { rowDefects } from "../db/rows.ts"

export const ReceiptRow = Schema.Struct({
  chainType: Schema.Literals(["evm", "fabric"]),
  networkId: Schema.String,
  chainBatchId: Schema.NullOr(Schema.String),
  chainBatchRef: Schema.NullOr(Schema.String),
  txHash: Schema.String,
  blockNumber: Schema.String,
  blockHash: Schema.NullOr(Schema.String),
  anchoredAt: Schema.NullOr(Schema.Date),
  merkleRoot: Schema.String,
  logRoot: Schema.String,
  leafCount: Schema.Number,
  logIndex: Schema.Number,
  /** The stored proof; NULL when the path is derived from the batch's stored tree (anchors cut since trees are stored). */
  logProof: Schema.NullOr(Schema.Uint8Array),
  batchId: Schema.String,
  contractAddress: Schema.NullOr(Schema.String),
  chainId: Schema.NullOr(Schema.String),
  channel: Schema.NullOr(Schema.String),
  chaincode: Schema.NullOr(Schema.String)
})
export type ReceiptRow = typeof ReceiptRow.Type

export class ReceiptStore extends Context.Service<ReceiptStore, {
  /** The record's first confirmed anchor (by chain type and network) with an RFC 9162 tree, on `networkId` if given. */
  readonly find: (recordId: string, networkId: string | undefined) => Effect.Effect<Option.Option<ReceiptRow>, SqlError.SqlError>
  /** The anchor's RFC 9162 inclusion path: its stored proof, or the sibling nodes read from its batch's stored tree. */
  readonly inclusionPath: (anchor: ReceiptRow) => Effect.Effect<ReadonlyArray<Uint8Array>, SqlError.SqlError>
}>()("anchord/receipts/ReceiptStore") {
  static readonly layer = Layer.effect(
    ReceiptStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const nodes = batchTreeNodes(sql)
      // Batches anchored without an RFC 9162 tree (no log_root) have no receipt.
      const findReceiptAnchor = SqlSchema.findOneOption({
        Request: Schema.Struct({ recordId: Schema.String, networkId: Schema.optional(Schema.String) }),
        Result: ReceiptRow,
        execute: ({ networkId, recordId }) =>
          sql`
            SELECT a.chain_type, a.network_id, b.chain_batch_id::text AS chain_batch_id, b.chain_batch_ref, b.tx_hash,
              b.block_number::text AS block_number, b.block_hash, b.anchored_at, b.merkle_root, b.log_root, b.leaf_count,
              a.log_index, a.log_proof, a.batch_id::text AS batch_id, b.contract_address, b.chain_id::text AS chain_id, b.channel, b.chaincode
            FROM anchors a JOIN anchor_batches b ON b.id = a.batch_id
            WHERE a.record_id = ${recordId} AND b.state = 'CONFIRMED' AND b.log_root IS NOT NULL AND a.log_index IS NOT NULL
              AND b.tx_hash IS NOT NULL AND b.block_number IS NOT NULL
              ${networkId === undefined ? sql`` : sql`AND a.network_id = ${networkId}`}
            ORDER BY a.chain_type, a.network_id LIMIT 1`
      })
      return ReceiptStore.of({
        find: Effect.fn("ReceiptStore.find")((recordId, networkId) => rowDefects(findReceiptAnchor({ recordId, networkId }))),
        inclusionPath: Effect.fn("ReceiptStore.inclusionPath")(function*(a) {
          if (a.logProof !== null) return splitProof(a.logProof)
          const offsets = logProofOffsets(a.leafCount, a.logIndex)
          const node = yield* nodes.readNodes("log", [{ batchId: a.batchId, merkleRoot: a.merkleRoot, offsets }])
          return offsets.map((o) => node(a.batchId, o))
        })
      })
    })
  )
}
