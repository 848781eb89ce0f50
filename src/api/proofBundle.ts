/** Wire schema of the proof bundle (SPEC 6, docs/proof-format.md). Definitions only: no server code. */
import { Schema } from "effect"
import { AnchorChainType, Count, DateTimeString, HashHex, RecordId } from "./recordSchemas.ts"

export const ProofBundleAnchor = Schema.Struct({
  chainType: AnchorChainType,
  networkId: Schema.String,
  chainId: Schema.optionalKey(Schema.NullOr(Count)),
  contractAddress: Schema.optionalKey(Schema.NullOr(Schema.String)),
  channel: Schema.optionalKey(Schema.String),
  chaincode: Schema.optionalKey(Schema.String),
  /** Fabric: MSP id of the submitting identity (docs/proof-format.md). */
  mspId: Schema.optionalKey(Schema.String),
  batchId: Schema.Union([Count, Schema.String]),
  merkleRoot: Schema.String,
  merkleProof: Schema.Array(Schema.String),
  leafIndex: Count,
  leafCount: Count,
  txHash: Schema.String,
  blockNumber: Schema.NullOr(Count),
  blockHash: Schema.NullOr(Schema.String),
  anchoredAt: Schema.NullOr(DateTimeString)
}).annotate({ identifier: "ProofBundleAnchor" })

export const ProofBundle = Schema.Struct({
  version: Schema.Literal(1),
  recordId: RecordId,
  hash: HashHex,
  hashAlgorithm: Schema.Literal("sha256"),
  canonicalization: Schema.Literal("RFC8785-JCS"),
  /**
   * Present for a salted encrypted record: `hash` = sha256(JCS({"data": data, "salt": salt}))
   * (docs/verifying.md). Absent: `hash` = sha256(JCS(data)).
   */
  hashScheme: Schema.optionalKey(Schema.Literal("salted-jcs-sha256")),
  /** The salt, only in the bundle embedded as `_anchor` in a decrypted IN_PLACE lookup (its owner's copy). */
  salt: Schema.optionalKey(Schema.String),
  leafEncoding: Schema.Literal("openzeppelin-standard-merkle-tree:bytes32"),
  anchors: Schema.Array(ProofBundleAnchor)
}).annotate({ identifier: "ProofBundle", description: "Self-contained anchoring receipt (version 1)" })
export type ProofBundle = typeof ProofBundle.Type
