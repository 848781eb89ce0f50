/**
 * Anchors as records show them (SPEC 4) and the proof bundle (SPEC 6), read from the `anchors`
 * and `anchor_batches` tables. An anchor is shown once its transaction is in a block; `anchoredAt`
 * stays null until the configured confirmation depth is reached.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export interface AnchorFacts {
  readonly recordId: string
  readonly chainType: "evm" | "fabric"
  readonly networkId: string
  readonly batchId: number | string
  readonly txHash: string
  readonly blockNumber: number | null
  readonly blockHash: string | null
  readonly merkleRoot: string
  readonly merkleProof: ReadonlyArray<string>
  readonly leafIndex: number
  readonly leafCount: number
  readonly confirmed: boolean
  readonly anchoredAt: string | null
  readonly contractAddress: string | null
  readonly chainId: number | null
  readonly channel: string | null
  readonly chaincode: string | null
}

/** The anchor entry of a record view (the `Anchor` schema of src/records/schemas.ts). */
export const anchorView = (a: AnchorFacts) => ({
  chainType: a.chainType,
  networkId: a.networkId,
  batchId: a.batchId,
  txHash: a.txHash,
  blockNumber: a.blockNumber,
  merkleRoot: a.merkleRoot,
  merkleProof: a.merkleProof,
  anchoredAt: a.anchoredAt,
  ...(a.chainType === "evm" && a.contractAddress !== null ? { contractAddress: a.contractAddress } : {}),
  ...(a.chainType === "evm" && a.chainId !== null ? { chainId: a.chainId } : {}),
  ...(a.chainType === "fabric" && a.channel !== null ? { channel: a.channel } : {}),
  ...(a.chainType === "fabric" && a.chaincode !== null ? { chaincode: a.chaincode } : {})
})

interface Row {
  readonly recordId: string
  readonly chainType: "evm" | "fabric"
  readonly networkId: string
  readonly chainBatchId: string | null
  readonly txHash: string
  readonly blockNumber: string | null
  readonly blockHash: string | null
  readonly merkleRoot: string
  readonly merkleProof: ReadonlyArray<string>
  readonly leafIndex: number
  readonly leafCount: number
  readonly confirmed: boolean
  readonly anchoredAt: Date | null
  readonly contractAddress: string | null
  readonly chainId: string | null
  readonly chainBatchRef: string | null
  readonly channel: string | null
  readonly chaincode: string | null
}

/** Anchors of the given records, by record id (one query). */
export const loadAnchors = (sql: SqlClient.SqlClient, ids: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const out = new Map<string, Array<AnchorFacts>>()
    if (ids.length === 0) return out
    const rows = yield* sql<Row>`
      SELECT a.record_id, a.chain_type, a.network_id, b.chain_batch_id::text AS chain_batch_id, b.tx_hash,
        b.block_number::text AS block_number, b.block_hash, b.merkle_root, a.merkle_proof, a.leaf_index, b.leaf_count,
        a.confirmed, b.anchored_at, b.contract_address, b.chain_id::text AS chain_id,
        b.chain_batch_ref, b.channel, b.chaincode
      FROM anchors a JOIN anchor_batches b ON b.id = a.batch_id
      WHERE a.record_id IN ${sql.in(ids as Array<string>)} AND b.state IN ('MINED', 'CONFIRMED') AND b.tx_hash IS NOT NULL
      ORDER BY a.record_id, a.chain_type, a.network_id`.pipe(Effect.orDie)
    for (const r of rows) {
      const facts: AnchorFacts = {
        recordId: r.recordId,
        chainType: r.chainType,
        networkId: r.networkId,
        // EVM: the contract's counter; Fabric: the string given to the chaincode.
        batchId: r.chainType === "evm" ? Number(r.chainBatchId) : (r.chainBatchRef ?? r.chainBatchId ?? ""),
        txHash: r.txHash,
        blockNumber: r.blockNumber === null ? null : Number(r.blockNumber),
        blockHash: r.blockHash,
        merkleRoot: r.merkleRoot,
        merkleProof: r.merkleProof,
        leafIndex: r.leafIndex,
        leafCount: r.leafCount,
        confirmed: r.confirmed,
        anchoredAt: r.confirmed && r.anchoredAt !== null ? r.anchoredAt.toISOString() : null,
        contractAddress: r.contractAddress,
        chainId: r.chainId === null ? null : Number(r.chainId),
        channel: r.channel,
        chaincode: r.chaincode
      }
      const list = out.get(r.recordId)
      if (list === undefined) out.set(r.recordId, [facts])
      else list.push(facts)
    }
    return out
  })

/** Attaches `anchors` to record rows (for toView). */
export const withAnchors = (sql: SqlClient.SqlClient) => <Row extends { readonly id: string }>(rows: ReadonlyArray<Row>) =>
  Effect.map(loadAnchors(sql, rows.map((r) => r.id)), (byId) =>
    rows.map((r) => ({ ...r, anchors: (byId.get(r.id) ?? []).map(anchorView) })))

/** SPEC 6: the self-contained receipt of an anchored record (see docs/proof-format.md). */
export const proofBundle = (record: { readonly id: string; readonly hash: string }, anchors: ReadonlyArray<AnchorFacts>) => ({
  version: 1 as const,
  recordId: record.id,
  hash: record.hash,
  hashAlgorithm: "sha256" as const,
  canonicalization: "RFC8785-JCS" as const,
  leafEncoding: "openzeppelin-standard-merkle-tree:bytes32" as const,
  anchors: anchors.filter((a) => a.confirmed).map((a) => ({
    chainType: a.chainType,
    networkId: a.networkId,
    ...(a.chainType === "evm" ? { chainId: a.chainId, contractAddress: a.contractAddress } : {}),
    ...(a.chainType === "fabric" ? { channel: a.channel ?? "", chaincode: a.chaincode ?? "" } : {}),
    batchId: a.batchId,
    merkleRoot: a.merkleRoot,
    merkleProof: a.merkleProof,
    leafIndex: a.leafIndex,
    leafCount: a.leafCount,
    txHash: a.txHash,
    blockNumber: a.blockNumber,
    blockHash: a.blockHash,
    anchoredAt: a.anchoredAt
  }))
})
