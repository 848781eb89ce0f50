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

/**
 * Schema pieces that also say, in the OpenAPI document, what the server enforces. `isPattern` alone
 * leaves its RegExp out of JSON Schema (it cannot carry the flags), so patterns say theirs.
 */
export const patterned = (re: RegExp, annotations?: { readonly expected?: string }) =>
  Schema.String.check(Schema.isPattern(re, { ...annotations, toJsonSchema: () => ({ pattern: re.source }) }))

/**
 * A rule the document states but this schema does not enforce, because the handler enforces it with
 * its own error code or message (the encryption key: 400 INVALID_ENCRYPTION_KEY, SPEC 3.1; the
 * Idempotency-Key: the same message on the ingest fast path). A filter that passes everything, with
 * the JSON Schema keywords of the rule.
 */
export const documented = (keywords: Record<string, unknown>) => Schema.makeFilter(() => true, { toJsonSchema: () => keywords as never })

/** ISO 8601 UTC with milliseconds (`Date.toISOString`). */
export const DateTimeString = Schema.String.annotate({ format: "date-time" })

/** A count or index: an integer, written as a plain JSON number. */
export const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * Any JSON value. Declared `Any` (and typed as unknown) only so the OpenAPI document keeps
 * `additionalProperties` on the objects that hold it: for `Unknown` the generator drops it, and
 * openapi-typescript then types `{}` as an object that may hold nothing (`Record<string, never>`).
 * Both accept every value alike.
 */
const AnyJson = Schema.Any.annotate({ description: "Any JSON value" }) as unknown as typeof Schema.Unknown

export const JsonObject = Schema.Record(Schema.String, AnyJson).annotate({
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

export const RecordId = patterned(/^[0-9a-f]{24}$/).annotate({
  description: "24 lowercase hex characters (ObjectId-shaped)"
})
export const Hash64 = patterned(/^[0-9a-fA-F]{64}$/).annotate({
  description: "SHA-256 as 64 hex characters"
})
/** A hash as the node writes it: lowercase. */
export const HashHex = patterned(/^[0-9a-f]{64}$/).annotate({ description: "SHA-256 as 64 lowercase hex characters" })

/** `encryptionKey` (SPEC 3.1): checked by ingest, which answers 400 INVALID_ENCRYPTION_KEY. */
export const EncryptionKey = Schema.String.check(documented({ pattern: "^[\\x20-\\x7E]{32}$", minLength: 32, maxLength: 32 })).annotate({
  description: "Exactly 32 printable ASCII characters (their UTF-8 bytes are the AES-256-GCM key); otherwise 400 INVALID_ENCRYPTION_KEY",
  writeOnly: true
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

/**
 * How an encrypted record's hash commits to its plaintext (docs/verifying.md, "Salted commitments"):
 * `salted-jcs-sha256` (the default for new encrypted records), `sha256(JCS({"data": data, "salt": salt}))`
 * with 32 random bytes of salt kept inside the ciphertext; `jcs-sha256`, `sha256(JCS(data))` (SPEC 3.1,
 * every record written before the salted scheme, and new ones that ask for it).
 */
export const HashScheme = Schema.Literals(["salted-jcs-sha256", "jcs-sha256"]).annotate({ identifier: "HashScheme" })
export type HashScheme = typeof HashScheme.Type
export const HASH_SCHEMES: ReadonlySet<unknown> = new Set<HashScheme>(["salted-jcs-sha256", "jcs-sha256"])

export const EncryptedAnchorBody = Schema.Struct({
  ...anchorFields,
  encryptionKey: EncryptionKey,
  /** Default `salted-jcs-sha256`; `jcs-sha256` for SPEC 3.1's unsalted hash (guessable from proofs for low-entropy data). */
  hashScheme: Schema.optionalKey(HashScheme)
}).annotate({
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
/**
 * Items are decoded one by one by the handler (a refused item is reported in place, the others are
 * accepted), so this schema takes any items; the document shows each as an AnchorRequest
 * (`openapiWire.ts`).
 */
export const BatchAnchorBody = Schema.Struct({
  records: Schema.Array(Schema.Unknown).check(Schema.isMinLength(1), Schema.isMaxLength(MAX_BATCH_RECORDS))
}).annotate({ identifier: "BatchAnchorRequest", description: "records: 1 to 100 AnchorRequest bodies" })

/** The mutable fields. */
export const PatchFields = Schema.Struct({
  metadata: Schema.optionalKey(Metadata),
  webhookUrl: Schema.optionalKey(Schema.NullOr(Schema.String))
})

/** The mutable fields; any other member is accepted by the schema and answered 422 IMMUTABLE_FIELD. */
export const PatchBody = Schema.StructWithRest(PatchFields, [Schema.Record(Schema.String, AnyJson)]).annotate({
  identifier: "RecordPatch",
  description: "Only the mutable fields: metadata, webhookUrl (any other member: 422 IMMUTABLE_FIELD)"
})
export type PatchBody = typeof PatchBody.Type

export const Anchor = Schema.Struct({
  chainType: AnchorChainType,
  networkId: Schema.String,
  /** EVM: the contract's batch counter (an integer); Fabric: a string. */
  batchId: Schema.Union([Count, Schema.String]),
  txHash: Schema.String,
  blockNumber: Schema.NullOr(Count),
  merkleRoot: Schema.String,
  merkleProof: Schema.Array(Schema.String),
  anchoredAt: Schema.NullOr(DateTimeString),
  contractAddress: Schema.optionalKey(Schema.String),
  chainId: Schema.optionalKey(Count),
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
  recordId: RecordId,
  hash: HashHex,
  status: RecordStatus,
  environment: Environment,
  chainType: ChainType,
  networkId: Schema.String,
  packageMode: PackageMode,
  collection: Schema.NullOr(Schema.String),
  metadata: JsonObject,
  webhookUrl: Schema.NullOr(Schema.String),
  createdAt: DateTimeString,
  updatedAt: DateTimeString,
  anchoredAt: Schema.NullOr(DateTimeString),
  deletedAt: Schema.NullOr(DateTimeString),
  /** Per package mode (SPEC 3.2); null when the node keeps no data or holds only ciphertext. */
  data: Schema.NullOr(AnyJson),
  encrypted: Schema.Boolean,
  encryptedData: Schema.optionalKey(EncryptedPayload),
  /** Encrypted records: how `hash` commits to the plaintext (see HashScheme). */
  hashScheme: Schema.optionalKey(HashScheme),
  /**
   * A salted encrypted record's salt (base64url, 32 bytes): in the 202 of its creation and in a lookup
   * with its X-Encryption-Key, never otherwise. With `data` it recomputes `hash`.
   */
  salt: Schema.optionalKey(Schema.String),
  anchors: Schema.Array(Anchor)
}).annotate({ identifier: "Record" })
export type RecordView = typeof RecordView.Type

export const ok = <S extends Schema.Top>(data: S) => Schema.Struct({ success: Schema.Literal(true), data })

export const BatchItemResult = Schema.Union([
  Schema.Struct({ index: Count, success: Schema.Literal(true), data: RecordView }).annotate({ identifier: "BatchItemAccepted" }),
  Schema.Struct({ index: Count, success: Schema.Literal(false), error: Schema.String, errorCode: Schema.String })
    .annotate({ identifier: "BatchItemRefused", description: "errorCode: VALIDATION_ERROR, INVALID_ENCRYPTION_KEY or INVALID_WEBHOOK_URL" })
])

export const BatchResult = Schema.Struct({
  accepted: Count,
  rejected: Count,
  /** The seed service's names for the same two counts. */
  summary: Schema.Struct({ successful: Count, failed: Count }),
  results: Schema.Array(BatchItemResult)
}).annotate({ identifier: "BatchResult" })

export const RecordList = Schema.Struct({
  records: Schema.Array(RecordView),
  nextCursor: Schema.NullOr(Schema.String).annotate({ description: "Opaque; null on the last page" })
}).annotate({ identifier: "RecordList" })

export const DeleteResult = Schema.Struct({
  recordId: RecordId,
  mode: Schema.Literals(["soft", "hard"]),
  deletedAt: DateTimeString
}).annotate({ identifier: "DeleteResult" })

export const ProofLookup = Schema.Struct({
  hash: HashHex,
  records: Schema.Array(Schema.Struct({
    recordId: RecordId,
    status: RecordStatus,
    createdAt: DateTimeString,
    anchors: Schema.Array(Anchor)
  }))
}).annotate({ identifier: "ProofLookup" })

export const Usage = Schema.Struct({
  accountId: Schema.String,
  plan: PlanName,
  environment: Environment,
  month: patterned(/^\d{4}-\d{2}$/).annotate({ description: "The calendar month counted (UTC), YYYY-MM" }),
  used: Count,
  quota: Schema.NullOr(Count).annotate({ description: "Records per month; null = unlimited (ENTERPRISE)" }),
  remaining: Schema.NullOr(Count),
  resetsAt: DateTimeString,
  perSecond: Count
}).annotate({ identifier: "Usage" })

/** A network as /v1/health reports it (docs/api.md "Health"). */
export const NetworkState = Schema.Literals(["up", "unreachable", "starting", "follower"])

export const Health = Schema.Struct({
  status: Schema.Literals(["ok", "degraded"]),
  version: Schema.String,
  database: Schema.Struct({ status: Schema.Literals(["up", "down"]), latencyMs: Schema.NullOr(Schema.Finite) }),
  networks: Schema.Array(Schema.Struct({ networkId: Schema.String, chainType: AnchorChainType, status: NetworkState }))
}).annotate({ identifier: "Health" })

/**
 * `limit` of the paged lists: an integer from 1 to 100, written as such (`1e2`, `050`, `10.0` are
 * refused). The query string carries text; the document shows the integer it stands for.
 */
export const Limit = patterned(/^(100|[1-9][0-9]?)$/, { expected: "an integer from 1 to 100" }).pipe(
  Schema.decodeTo(Schema.Int, SchemaTransformation.transform({ decode: (s: string) => Number(s), encode: (n: number) => String(n) }))
)
