/** Wire schemas of the records API (SPEC 3, 4). Shared by the server and the typed client. */
import { Schema, SchemaTransformation } from "effect"

/** The environment of a key and of everything it creates (SPEC 1). */
export const Environment = Schema.Literals(["test", "live"])
export type Environment = typeof Environment.Type

/** An account's plan (the seed's four). */
export const PlanName = Schema.Literals(["FREE", "STARTUP", "SCALE", "ENTERPRISE"])
export type PlanName = typeof PlanName.Type

export const ChainType = Schema.Literals(["evm", "fabric", "hybrid"])
export type ChainType = typeof ChainType.Type
/** The chain of one anchor (a hybrid record has one of each). */
export const AnchorChainType = Schema.Literals(["evm", "fabric"])
export type AnchorChainType = typeof AnchorChainType.Type
export const PackageMode = Schema.Literals(["SEPARATED", "IN_PLACE", "MANAGED"])
export type PackageMode = typeof PackageMode.Type
export const RecordStatus = Schema.Literals(["QUEUED", "BATCHING", "ANCHORED", "FAILED", "DELETED"])
export type RecordStatus = typeof RecordStatus.Type

export const JsonObject = Schema.Record(Schema.String, Schema.Unknown).annotate({
  description: "A JSON object"
})
/** Whether a member name or string anywhere in the value holds U+0000. */
export const holdsNul = (value: unknown): boolean => {
  if (typeof value === "string") return value.includes("\u0000")
  if (typeof value !== "object" || value === null) return false
  if (Array.isArray(value)) return value.some(holdsNul)
  for (const name in value) if (name.includes("\u0000") || holdsNul((value as Record<string, unknown>)[name])) return true
  return false
}

/**
 * Metadata: a JSON object stored as jsonb, which cannot hold U+0000. Refused here with a 400, where
 * the database would refuse it as the statement runs (and with it the other records committed in the
 * same group).
 */
export const Metadata = JsonObject.check(
  Schema.makeFilter((value) => holdsNul(value) ? "U+0000 is not allowed in member names or strings" : true)
).annotate({ description: "A JSON object; no member name or string may contain U+0000" })

export const RecordId = Schema.String.check(Schema.isPattern(/^[0-9a-f]{24}$/)).annotate({
  description: "24 lowercase hex characters (ObjectId-shaped)"
})
export const Hash64 = Schema.String.check(Schema.isPattern(/^[0-9a-fA-F]{64}$/)).annotate({
  description: "SHA-256 as 64 hex characters"
})

/** What a collection name may be: 1 to 128 characters, none of them a control character. */
export const COLLECTION_PATTERN = /^[^\u0000-\u001f\u007f]{1,128}$/

/**
 * The seed service's grouping field (SPEC 3): a name the client chooses, not hashed, stored with the
 * record, immutable; lists filter by it and events carry it.
 */
export const Collection = Schema.String.check(Schema.isPattern(COLLECTION_PATTERN, {
  expected: "1 to 128 characters, no control characters",
  toJsonSchema: () => ({ pattern: COLLECTION_PATTERN.source, minLength: 1, maxLength: 128 })
})).annotate({ description: "A grouping name (1 to 128 characters, no control characters); not hashed, immutable" })

const anchorFields = {
  data: JsonObject,
  webhookUrl: Schema.optionalKey(Schema.String),
  chain: Schema.optionalKey(ChainType),
  packageMode: Schema.optionalKey(PackageMode),
  metadata: Schema.optionalKey(Metadata),
  collection: Schema.optionalKey(Collection)
}

export const AnchorBody = Schema.Struct(anchorFields).annotate({ identifier: "AnchorRequest" })
export type AnchorBody = typeof AnchorBody.Type

export const EncryptedAnchorBody = Schema.Struct({ ...anchorFields, encryptionKey: Schema.String }).annotate({
  identifier: "EncryptedAnchorRequest"
})
export type EncryptedAnchorBody = typeof EncryptedAnchorBody.Type

export const HashAnchorBody = Schema.Struct({
  hash: Hash64,
  webhookUrl: Schema.optionalKey(Schema.String),
  chain: Schema.optionalKey(ChainType),
  metadata: Schema.optionalKey(Metadata),
  collection: Schema.optionalKey(Collection)
}).annotate({ identifier: "HashAnchorRequest" })
export type HashAnchorBody = typeof HashAnchorBody.Type

export const MAX_BATCH_RECORDS = 100
export const BatchAnchorBody = Schema.Struct({
  records: Schema.Array(Schema.Unknown).check(Schema.isMinLength(1), Schema.isMaxLength(MAX_BATCH_RECORDS))
}).annotate({ identifier: "BatchAnchorRequest", description: "records: 1 to 100 AnchorRequest bodies" })

/** The mutable fields. */
export const PatchFields = Schema.Struct({
  metadata: Schema.optionalKey(Metadata),
  webhookUrl: Schema.optionalKey(Schema.NullOr(Schema.String))
})

/** The mutable fields; any other member is accepted by the schema and answered 422 IMMUTABLE_FIELD. */
export const PatchBody = Schema.StructWithRest(PatchFields, [Schema.Record(Schema.String, Schema.Unknown)]).annotate({
  identifier: "RecordPatch",
  description: "Only the mutable fields: metadata, webhookUrl (any other member: 422 IMMUTABLE_FIELD)"
})
export type PatchBody = typeof PatchBody.Type

export const Anchor = Schema.Struct({
  chainType: AnchorChainType,
  networkId: Schema.String,
  batchId: Schema.Union([Schema.Number, Schema.String]),
  txHash: Schema.String,
  blockNumber: Schema.NullOr(Schema.Number),
  merkleRoot: Schema.String,
  merkleProof: Schema.Array(Schema.String),
  anchoredAt: Schema.NullOr(Schema.String),
  contractAddress: Schema.optionalKey(Schema.String),
  chainId: Schema.optionalKey(Schema.Number),
  channel: Schema.optionalKey(Schema.String),
  chaincode: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "Anchor" })

export const EncryptedPayload = Schema.Struct({
  algorithm: Schema.Literal("AES-256-GCM"),
  ciphertext: Schema.String,
  nonce: Schema.String,
  tag: Schema.String
}).annotate({ identifier: "EncryptedPayload", description: "base64 fields" })

export const RecordView = Schema.Struct({
  recordId: Schema.String,
  hash: Schema.String,
  status: RecordStatus,
  environment: Environment,
  chainType: ChainType,
  networkId: Schema.String,
  packageMode: PackageMode,
  collection: Schema.NullOr(Schema.String),
  metadata: JsonObject,
  webhookUrl: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  updatedAt: Schema.String,
  anchoredAt: Schema.NullOr(Schema.String),
  deletedAt: Schema.NullOr(Schema.String),
  data: Schema.NullOr(Schema.Unknown),
  encrypted: Schema.Boolean,
  encryptedData: Schema.optionalKey(EncryptedPayload),
  anchors: Schema.Array(Anchor)
}).annotate({ identifier: "Record" })
export type RecordView = typeof RecordView.Type

export const ok = <S extends Schema.Top>(data: S) => Schema.Struct({ success: Schema.Literal(true), data })

export const BatchItemResult = Schema.Union([
  Schema.Struct({ index: Schema.Number, success: Schema.Literal(true), data: RecordView }),
  Schema.Struct({ index: Schema.Number, success: Schema.Literal(false), error: Schema.String, errorCode: Schema.String })
])

export const BatchResult = Schema.Struct({
  accepted: Schema.Number,
  rejected: Schema.Number,
  /** The seed service's names for the same two counts. */
  summary: Schema.Struct({ successful: Schema.Number, failed: Schema.Number }),
  results: Schema.Array(BatchItemResult)
})

export const RecordList = Schema.Struct({
  records: Schema.Array(RecordView),
  nextCursor: Schema.NullOr(Schema.String)
})

export const DeleteResult = Schema.Struct({
  recordId: Schema.String,
  mode: Schema.Literals(["soft", "hard"]),
  deletedAt: Schema.String
})

export const ProofLookup = Schema.Struct({
  hash: Schema.String,
  records: Schema.Array(Schema.Struct({
    recordId: Schema.String,
    status: RecordStatus,
    createdAt: Schema.String,
    anchors: Schema.Array(Anchor)
  }))
})

export const Usage = Schema.Struct({
  accountId: Schema.String,
  plan: PlanName,
  environment: Environment,
  month: Schema.String,
  used: Schema.Number,
  quota: Schema.NullOr(Schema.Number),
  remaining: Schema.NullOr(Schema.Number),
  resetsAt: Schema.String,
  perSecond: Schema.Number
})

export const Health = Schema.Struct({
  status: Schema.Literals(["ok", "degraded"]),
  version: Schema.String,
  database: Schema.Struct({ status: Schema.Literals(["up", "down"]), latencyMs: Schema.NullOr(Schema.Number) }),
  networks: Schema.Array(Schema.Struct({ networkId: Schema.String, chainType: Schema.String, status: Schema.String }))
})

/**
 * `limit` of the paged lists: an integer from 1 to 100, written as such (`1e2`, `050`, `10.0` are
 * refused). The query string carries text; the document shows the integer it stands for.
 */
export const Limit = Schema.String.check(Schema.isPattern(/^(100|[1-9][0-9]?)$/, {
  expected: "an integer from 1 to 100",
  toJsonSchema: () => ({ pattern: "^(100|[1-9][0-9]?)$" })
})).pipe(Schema.decodeTo(Schema.Int, SchemaTransformation.transform({ decode: (s: string) => Number(s), encode: (n: number) => String(n) })))
