/**
 * Handlers of the receipts API (src/api/receipts.ts): a record's COSE Receipt (RFC 9942), built from its
 * anchor's stored RFC 9162 index and proof (migration 0022) and signed on request, and the receipt key.
 */
import { Effect, Option, Schema } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient, SqlSchema } from "effect/sql"
import { Api } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/auth.ts"
import { toWire } from "../api/errors.ts"
import { hashBytes, splitProof, toHex } from "../anchoring/rfc9162.ts"
import { logProofOffsets, readNodes } from "../anchoring/batchTrees.ts"
import { atEdge } from "../db/errors.ts"
import { rowDefects } from "../db/rows.ts"
import { NotAnchored } from "../records/errors.ts"
import { RecordStore, requireFound } from "../records/RecordStore.ts"
import { coseKeySet, ReceiptKey } from "./key.ts"
import { encodeReceipt, protectedHeader, type ReceiptAnchor, receiptRoot, parseReceipt, sigStructure } from "./receipt.ts"

export class ReceiptsOff extends Schema.TaggedError<ReceiptsOff>()("ReceiptsOff", {}) {
  get errorCode() {
    return "NOT_FOUND" as const
  }
  override get message() {
    return "This node issues no COSE receipts: set RECEIPT_KEY_FILE (docs/proof-format.md)"
  }
}

export class NoReceipt extends Schema.TaggedError<NoReceipt>()("NoReceipt", { recordId: Schema.String, networkId: Schema.optional(Schema.String) }) {
  get errorCode() {
    return "NOT_FOUND" as const
  }
  override get message() {
    const where = this.networkId === undefined ? "" : ` on network ${this.networkId}`
    return `Record ${this.recordId} has no COSE receipt${where}: its batch was anchored without an RFC 9162 tree (before receipts existed, or by a contract or chaincode deployed before them); its proof bundle (/proof) proves it`
  }
}

const ReceiptRow = Schema.Struct({
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
  /** NULL for anchors cut since migration 0025: derived from the batch's stored tree. */
  logProof: Schema.NullOr(Schema.Uint8Array),
  batchId: Schema.String,
  contractAddress: Schema.NullOr(Schema.String),
  chainId: Schema.NullOr(Schema.String),
  channel: Schema.NullOr(Schema.String),
  chaincode: Schema.NullOr(Schema.String)
})

export const ReceiptsHttpLayer = HttpApiBuilder.group(Api, "receipts", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const store = yield* RecordStore
    const { signer } = yield* ReceiptKey
    // Confirmed anchors whose batch has an RFC 9162 tree (batches cut before migration 0022 have none).
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
    return handlers.handle("recordReceipt", ({ params, query }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const row = yield* requireFound(yield* store.get(principal, params.recordId, false), params.recordId)
        if (row.status !== "ANCHORED") return yield* new NotAnchored({ recordId: row.id, status: row.status })
        if (Option.isNone(signer)) return yield* new ReceiptsOff()
        const found = yield* rowDefects(findReceiptAnchor({ recordId: row.id, networkId: query.networkId }))
        if (Option.isNone(found)) return yield* new NoReceipt({ recordId: row.id, networkId: query.networkId })
        const a = found.value
        const anchor: ReceiptAnchor = {
          chainType: a.chainType,
          networkId: a.networkId,
          ...(a.chainType === "evm"
            ? { chainId: a.chainId === null ? undefined : Number(a.chainId), contractAddress: a.contractAddress ?? undefined }
            : { channel: a.channel ?? undefined, chaincode: a.chaincode ?? undefined }),
          batchId: a.chainType === "evm" ? Number(a.chainBatchId ?? 0) : (a.chainBatchRef ?? a.chainBatchId ?? ""),
          merkleRoot: a.merkleRoot,
          logRoot: a.logRoot,
          txHash: a.txHash,
          blockNumber: Number(a.blockNumber),
          blockHash: a.blockHash,
          anchoredAt: a.anchoredAt === null ? null : a.anchoredAt.toISOString()
        }
        const key = signer.value
        const prot = protectedHeader(key.kid)
        const root = hashBytes(a.logRoot)
        const offsets = a.logProof === null ? logProofOffsets(a.leafCount, a.logIndex) : []
        const path = a.logProof !== null ? splitProof(a.logProof) : yield* Effect.map(
          readNodes(sql, "log", [{ batchId: a.batchId, merkleRoot: a.merkleRoot, offsets }]),
          (node) => offsets.map((o) => node(a.batchId, o))
        )
        const inclusion = { treeSize: a.leafCount, leafIndex: a.logIndex, path }
        const receipt = encodeReceipt(prot, inclusion, anchor, key.sign(sigStructure(prot, root)))
        // The stored proof must give the stored root: a receipt that would not verify is never served.
        const computed = receiptRoot(parseReceipt(receipt), hashBytes(row.hash))
        if (computed === undefined || toHex(computed) !== toHex(root)) {
          return yield* Effect.die(new Error(`stored RFC 9162 proof of record ${row.id} does not give its batch's root`))
        }
        return receipt
      }).pipe(atEdge))
  }))

export const ReceiptKeysHttpLayer = HttpApiBuilder.group(Api, "receiptKeys", (handlers) =>
  Effect.gen(function*() {
    const { signer } = yield* ReceiptKey
    const off = Effect.fail(toWire(new ReceiptsOff()))
    return handlers
      .handle("scittKeys", () => Option.isNone(signer) ? off : Effect.succeed(coseKeySet(signer.value)))
      .handle("receiptKeyPem", () => Option.isNone(signer) ? off : Effect.succeed(signer.value.publicKeyPem))
  }))
