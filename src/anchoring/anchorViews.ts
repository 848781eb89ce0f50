/**
 * The anchor, once: one row type (`AnchorRow`, an `anchors` row joined with its batch), one query
 * (`anchorRows`), and the shapes built from it — `toAnchor`, the `Anchor` of the wire contract
 * (src/api/recordSchemas.ts) that record views (SPEC 4) and `anchor.confirmed` events carry, and the
 * proof bundle (SPEC 6, docs/proof-format.md), which keeps its own documented shape.
 *
 * An anchor is shown once its transaction is in a block; `anchoredAt` stays null until the configured
 * confirmation depth is reached.
 */
import { Effect, Schema } from "effect"
import { type SqlClient, type SqlError, SqlSchema } from "effect/sql"
import { rowDefects } from "../db/rows.ts"
import type { Anchor } from "../api/recordSchemas.ts"
import { AnchorChainType } from "./model.ts"
import { batchTreeNodes, merkleProofOf, merkleProofOffsets } from "./batchTrees.ts"

/** Numbers PostgreSQL keeps as bigint, read as text (`::text`) and decoded here. */
const BigIntText = Schema.NumberFromString

export const AnchorRow = Schema.Struct({
  recordId: Schema.String,
  chainType: AnchorChainType,
  networkId: Schema.String,
  /** EVM: the contract's batch counter. */
  chainBatchId: Schema.NullOr(BigIntText),
  /** Fabric: the string batch id given to the chaincode. */
  chainBatchRef: Schema.NullOr(Schema.String),
  txHash: Schema.String,
  blockNumber: Schema.NullOr(BigIntText),
  blockHash: Schema.NullOr(Schema.String),
  merkleRoot: Schema.String,
  merkleProof: Schema.Array(Schema.String),
  leafIndex: Schema.Number,
  leafCount: Schema.Number,
  /** Its batch is CONFIRMED (an anchor is confirmed exactly when its batch is: no state of its own). */
  confirmed: Schema.Boolean,
  anchoredAt: Schema.NullOr(Schema.Date),
  contractAddress: Schema.NullOr(Schema.String),
  chainId: Schema.NullOr(BigIntText),
  channel: Schema.NullOr(Schema.String),
  chaincode: Schema.NullOr(Schema.String)
})
export type AnchorRow = typeof AnchorRow.Type

/** An `anchors` row as read: its proof stored (on anchors cut before batches stored their trees) or its leaf position in its batch's stored tree. */
const StoredAnchorRow = Schema.Struct({
  ...AnchorRow.fields,
  merkleProof: Schema.NullOr(Schema.Array(Schema.String)),
  merkleIndex: Schema.NullOr(Schema.Number),
  batchId: Schema.String
})

/** The anchors of records (`findAnchors`), one row per record and anchor, stored proof or leaf position. */
const statements = (sql: SqlClient.SqlClient) => ({
  findAnchors: SqlSchema.findAll({
    Request: Schema.Array(Schema.String),
    Result: StoredAnchorRow,
    execute: (ids) =>
      sql`
    SELECT a.batch_id::text AS batch_id, a.merkle_index, a.record_id, a.chain_type, a.network_id, b.chain_batch_id::text AS chain_batch_id, b.chain_batch_ref, b.tx_hash,
      b.block_number::text AS block_number, b.block_hash, b.merkle_root, a.merkle_proof, a.leaf_index, b.leaf_count,
      b.state = 'CONFIRMED' AS confirmed, b.anchored_at, b.contract_address, b.chain_id::text AS chain_id, b.channel, b.chaincode
    FROM unnest(string_to_array(${ids.join(",")}, ',')) AS x(id)
    CROSS JOIN LATERAL (SELECT * FROM anchors a WHERE a.record_id = x.id OFFSET 0) a
    CROSS JOIN LATERAL (
      SELECT * FROM anchor_batches b WHERE b.id = a.batch_id AND b.state IN ('MINED', 'CONFIRMED') AND b.tx_hash IS NOT NULL OFFSET 0
    ) b
    ORDER BY a.record_id, a.chain_type, a.network_id`
  })
})

/** EVM: the contract's counter (an integer); Fabric: the string given to the chaincode (seed). */
const batchIdOf = (a: AnchorRow): number | string =>
  a.chainType === "evm" ? Number(a.chainBatchId) : (a.chainBatchRef ?? (a.chainBatchId === null ? "" : String(a.chainBatchId)))

const anchoredAtOf = (a: AnchorRow): string | null => a.confirmed && a.anchoredAt !== null ? a.anchoredAt.toISOString() : null

/** The anchor of a record view and of an event (the wire contract's `Anchor`). */
export const toAnchor = (a: AnchorRow): typeof Anchor.Type => ({
  chainType: a.chainType,
  networkId: a.networkId,
  batchId: batchIdOf(a),
  txHash: a.txHash,
  blockNumber: a.blockNumber,
  merkleRoot: a.merkleRoot,
  merkleProof: a.merkleProof,
  anchoredAt: anchoredAtOf(a),
  ...(a.chainType === "evm" && a.contractAddress !== null ? { contractAddress: a.contractAddress } : {}),
  ...(a.chainType === "evm" && a.chainId !== null ? { chainId: a.chainId } : {}),
  ...(a.chainType === "fabric" && a.channel !== null ? { channel: a.channel } : {}),
  ...(a.chainType === "fabric" && a.chaincode !== null ? { chaincode: a.chaincode } : {})
})

/**
 * The anchor as events carry it: `toAnchor`, with SPEC 4's rule for events that a Fabric anchor's
 * `blockNumber` is null (the block stays in the record view and the proof bundle).
 */
export const toEventAnchor = (a: AnchorRow): typeof Anchor.Type => a.chainType === "fabric" ? { ...toAnchor(a), blockNumber: null } : toAnchor(a)

/**
 * A record's `anchor.confirmed` as the outbox schema's facts (src/outbox/events.ts AnchorConfirmed):
 * every anchor it has as events carry them, and when it became ANCHORED (its completing batch's time).
 */
export const anchorConfirmedFacts = (
  record: { readonly id: string; readonly hash: string; readonly chainType: string; readonly networkId: string },
  anchoredAt: Date,
  anchors: ReadonlyArray<AnchorRow>
) => ({
  kind: "anchor.confirmed" as const,
  recordId: record.id,
  hash: record.hash,
  recordChainType: record.chainType,
  networkId: record.networkId,
  anchoredAt: anchoredAt.toISOString(),
  anchors: anchors.map(toEventAnchor)
})

/** The anchors as record views, proof bundles and events read them, over the layer's client; built once by the layer. */
export const anchorReads = (sql: SqlClient.SqlClient) => {
  const q = statements(sql)
  const nodes = batchTreeNodes(sql)

  /**
   * The anchors of the given records whose transaction is in a block, by record id (one query), each
   * record's in (chain type, network) order. Written as per-record lookups behind fences (OFFSET 0): as a
   * plain join, stale statistics on anchor_batches (their states change by the second) once made
   * PostgreSQL walk every anchor of every confirmed batch to find 128 records — 120–330 ms per call
   * (docs/benchmarks.md).
   */
  const anchorRows = (ids: ReadonlyArray<string>): Effect.Effect<Map<string, Array<AnchorRow>>, SqlError.SqlError> =>
    ids.length === 0 ? Effect.succeed(new Map()) : rowDefects(q.findAnchors(ids)).pipe(
      Effect.flatMap((stored) => {
        // Proofs not stored (NULL) derived from their batches' stored trees, each batch's nodes read once (batchTrees.ts).
        const derived = stored.filter((r) => r.merkleProof === null)
        if (derived.length === 0) return Effect.succeed(stored as ReadonlyArray<AnchorRow>)
        const offsets = new Map(derived.map((r) => [r, merkleProofOffsets(r.leafCount, r.merkleIndex ?? NaN)]))
        return Effect.map(
          nodes.readNodes("merkle", derived.map((r) => ({ batchId: r.batchId, merkleRoot: r.merkleRoot, offsets: offsets.get(r)! }))),
          (node) =>
            stored.map((r): AnchorRow => r.merkleProof !== null ? r as AnchorRow : { ...r, merkleProof: merkleProofOf(node, r.batchId, offsets.get(r)!) })
        )
      }),
      Effect.map((rows) => {
        const out = new Map<string, Array<AnchorRow>>()
        for (const r of rows) {
          const list = out.get(r.recordId)
          if (list === undefined) out.set(r.recordId, [r])
          else list.push(r)
        }
        return out
      })
    )

  /**
   * The one assembly of `anchor.confirmed` (SQL holds no copy of it): each derived event's facts (one per record of
   * a batch event), by the caller's key, from the record, when it became ANCHORED (its completing batch's
   * `anchored_at`) and its anchors (`anchorRows`, one query for all of them). The webhook dispatcher renders every
   * body from these (src/webhooks/renderInputs.ts, fanOut.ts); `Outbox.decode` then
   * `Outbox.storedPayload` give their stored form. Built here, not in jsonb: that cost ~80 µs per record
   * (docs/benchmarks.md).
   */
  const anchorConfirmedPayloads = (
    rows: ReadonlyArray<
      { readonly key: string; readonly recordId: string; readonly anchoredAt: Date; readonly hash: string | null; readonly chainType: string | null;
        readonly networkId: string | null }
    >
  ): Effect.Effect<Map<string, Record<string, unknown>>, SqlError.SqlError> =>
    Effect.map(anchorRows([...new Set(rows.map((r) => r.recordId))]), (anchors) => {
      const out = new Map<string, Record<string, unknown>>()
      for (const r of rows) {
        out.set(r.key, anchorConfirmedFacts(
          { id: r.recordId, hash: r.hash ?? "", chainType: r.chainType ?? "", networkId: r.networkId ?? "" },
          r.anchoredAt,
          anchors.get(r.recordId) ?? []
        ))
      }
      return out
    })

  /** Anchors of the given records, by record id (one query), for the read paths (SqlError typed: 503 at the edge). */
  const loadAnchors = (ids: ReadonlyArray<string>) => anchorRows(ids)

  /** Attaches `anchors` to record rows (for toView). */
  const withAnchors = <Row extends { readonly id: string }>(rows: ReadonlyArray<Row>) =>
    Effect.map(loadAnchors(rows.map((r) => r.id)), (byId) => rows.map((r) => ({ ...r, anchors: (byId.get(r.id) ?? []).map(toAnchor) })))

  return { anchorRows, anchorConfirmedPayloads, loadAnchors, withAnchors }
}

/**
 * SPEC 6: the self-contained receipt of an anchored record (see docs/proof-format.md). A salted
 * encrypted record's bundle says so (`hashScheme`): its hash is sha256(JCS({"data", "salt"})), and the
 * salt is not in the bundle (only its owner, holding the key, reads it).
 */
export const proofBundle = (record: { readonly id: string; readonly hash: string; readonly salted?: boolean }, anchors: ReadonlyArray<AnchorRow>) => ({
  version: 1 as const,
  recordId: record.id,
  hash: record.hash,
  hashAlgorithm: "sha256" as const,
  canonicalization: "RFC8785-JCS" as const,
  ...(record.salted === true ? { hashScheme: "salted-jcs-sha256" as const } : {}),
  leafEncoding: "openzeppelin-standard-merkle-tree:bytes32" as const,
  anchors: anchors.filter((a) => a.confirmed).map((a) => ({
    chainType: a.chainType,
    networkId: a.networkId,
    ...(a.chainType === "evm" ? { chainId: a.chainId, contractAddress: a.contractAddress } : {}),
    ...(a.chainType === "fabric" ? { channel: a.channel ?? "", chaincode: a.chaincode ?? "" } : {}),
    batchId: batchIdOf(a),
    merkleRoot: a.merkleRoot,
    merkleProof: a.merkleProof,
    leafIndex: a.leafIndex,
    leafCount: a.leafCount,
    txHash: a.txHash,
    blockNumber: a.blockNumber,
    blockHash: a.blockHash,
    anchoredAt: anchoredAtOf(a)
  }))
})
