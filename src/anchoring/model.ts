/**
 * The vocabulary of anchoring, defined once: a batch's states, the row of a batch as the stores read
 * it, where a batch goes, and the rows every store reads (ids, counts). The chain of an anchor (`evm` | `fabric`) is
 * the wire contract's `AnchorChainType` (src/api/recordSchemas.ts), an environment (`test` | `live`)
 * the keys' (src/api/recordSchemas.ts too); both re-exported here.
 */
import { Schema } from "effect"
import { AnchorChainType, Environment } from "../api/recordSchemas.ts"
import type { Hex } from "./merkle.ts"

export { AnchorChainType, Environment }
export type { Hex }

/**
 * PENDING (persisted, not sent) → SENT (a signed transaction is stored) → MINED (seen in a block) →
 * CONFIRMED (at depth); DROPPED (reorganised out, chain reset: records re-queued) or FAILED (given up).
 */
export const BatchState = Schema.Literals(["PENDING", "SENT", "MINED", "CONFIRMED", "DROPPED", "FAILED"])
export type BatchState = typeof BatchState.Type

/** `0x`-prefixed hex (EVM values, Merkle roots). */
export const HexString = Schema.TemplateLiteral(["0x", Schema.String])

/**
 * An `anchor_batches` row as the writers and watchers read it (numeric columns as text: bigint and
 * numeric(78)), with the schema of its transaction fields: `0x` hex on EVM (`batchRowOf(HexString)`),
 * a raw tx id and base64 transaction bytes on Fabric.
 */
export const batchRowOf = <Tx extends Schema.Top>(tx: Tx) =>
  Schema.Struct({
    id: Schema.String,
    networkId: Schema.String,
    merkleRoot: HexString,
    leafCount: Schema.Number,
    state: BatchState,
    attempts: Schema.Number,
    nonce: Schema.NullOr(Schema.String),
    gasLimit: Schema.NullOr(Schema.String),
    txHash: Schema.NullOr(tx),
    rawTx: Schema.NullOr(tx),
    txHashes: Schema.Array(tx),
    maxFeePerGas: Schema.NullOr(Schema.String),
    maxPriorityFeePerGas: Schema.NullOr(Schema.String),
    sentAt: Schema.NullOr(Schema.Date),
    chainBatchId: Schema.NullOr(Schema.String),
    blockNumber: Schema.NullOr(Schema.String),
    blockHash: Schema.NullOr(tx),
    createdAt: Schema.Date,
    /** The batch's RFC 9162 root, committed with its root; null for batches cut by older nodes, or on a contract without it. */
    logRoot: Schema.NullOr(HexString)
  })

/** A batch row of either chain. */
export const BatchRow = batchRowOf(Schema.String)
export type BatchRow = typeof BatchRow.Type

/** Where a batch goes: an EVM contract, or a Fabric channel + chaincode (stored with the batch). */
export const BatchMeta = Schema.Union([
  Schema.Struct({ chainType: Schema.Literal("evm"), chainId: Schema.Number, contractAddress: Schema.String }),
  Schema.Struct({ chainType: Schema.Literal("fabric"), channel: Schema.String, chaincode: Schema.String })
])
export type BatchMeta = typeof BatchMeta.Type

/** `RETURNING id::text AS id` rows. */
/** A batch by id (`anchor_batches.id`, bigint, as text). */
export const BatchId = Schema.String

export const IdRow = Schema.Struct({ id: Schema.String })
export const CountRow = Schema.Struct({ n: Schema.Number })
