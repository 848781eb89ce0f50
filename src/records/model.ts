/** Rows of the `records` table and their API representation (SPEC 4). */
import { parseStrictJson } from "../canonical/strictJson.ts"
import { Schema } from "effect"
import { type Anchor, ChainType, Environment, PackageMode, type RecordView } from "../api/recordSchemas.ts"

/** A `records` row as the stores read it (decoded where it is read: lookups and lists, never ingest). */
export const RecordRow = Schema.Struct({
  id: Schema.String,
  accountId: Schema.String,
  environment: Environment,
  hash: Schema.String,
  status: Schema.Literals(["QUEUED", "BATCHING", "ANCHORED", "FAILED"]),
  chainType: ChainType,
  networkId: Schema.String,
  packageMode: PackageMode,
  collection: Schema.NullOr(Schema.String),
  source: Schema.Literals(["data", "encrypted", "hash"]),
  dataJcs: Schema.NullOr(Schema.String),
  ciphertext: Schema.NullOr(Schema.Uint8Array),
  nonce: Schema.NullOr(Schema.Uint8Array),
  authTag: Schema.NullOr(Schema.Uint8Array),
  metadata: Schema.Record(Schema.String, Schema.Unknown),
  webhookUrl: Schema.NullOr(Schema.String),
  createdAt: Schema.Date,
  updatedAt: Schema.Date,
  anchoredAt: Schema.NullOr(Schema.Date),
  deletedAt: Schema.NullOr(Schema.Date),
  hardDeleted: Schema.Boolean,
  /** The hash is the salted commitment (HashScheme `salted-jcs-sha256`), not sha256(JCS(data)). */
  salted: Schema.Boolean
})

export type RecordRow = typeof RecordRow.Type & {
  /** Attached by RecordStore (src/anchoring/anchorViews.ts); not a column. */
  readonly anchors?: ReadonlyArray<typeof Anchor.Type> | undefined
}

export const toView = (
  row: RecordRow,
  options?: {
    readonly plaintext?: string | undefined
    readonly data?: unknown
    /** A new salted record's salt (its 202 answer). */
    readonly salt?: string | undefined
  }
): RecordView => {
  const encrypted = row.source === "encrypted"
  let data: unknown = null
  let salt: string | undefined = options?.salt
  // parseStrictJson, not JSON.parse: V8 in Node 24 can mis-read escaped member names (nodejs/node#63785).
  if (row.dataJcs !== null) data = options?.data !== undefined ? options.data : parseStrictJson(row.dataJcs)
  else if (options?.plaintext !== undefined) {
    const opened = openedPlaintext(row, options.plaintext)
    data = opened.data
    salt = opened.salt
  }
  const view: Mutable<RecordView> = {
    recordId: row.id,
    hash: row.hash,
    status: row.deletedAt !== null ? "DELETED" : row.status,
    environment: row.environment,
    chainType: row.chainType,
    networkId: row.networkId,
    packageMode: row.packageMode,
    collection: row.collection,
    metadata: row.metadata,
    webhookUrl: row.webhookUrl,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    anchoredAt: row.anchoredAt?.toISOString() ?? null,
    deletedAt: row.deletedAt?.toISOString() ?? null,
    data,
    encrypted,
    anchors: row.anchors ?? []
  }
  if (encrypted && data === null && row.ciphertext !== null && row.nonce !== null && row.authTag !== null) {
    view.encryptedData = {
      algorithm: "AES-256-GCM",
      ciphertext: Buffer.from(row.ciphertext).toString("base64"),
      nonce: Buffer.from(row.nonce).toString("base64"),
      tag: Buffer.from(row.authTag).toString("base64")
    }
  }
  if (encrypted) {
    view.hashScheme = row.salted ? "salted-jcs-sha256" : "jcs-sha256"
    if (row.salted && salt !== undefined) view.salt = salt
  }
  return view
}

/**
 * The data (and salt) of a decrypted record: a salted record's sealed text is its committed JSON,
 * `{"data": <data>, "salt": "<salt>"}` (src/records/encryption.ts `commitSalted`); an unsalted one's is the data.
 */
export const openedPlaintext = (row: { readonly salted: boolean }, plaintext: string): { readonly data: unknown; readonly salt?: string } => {
  const parsed = parseStrictJson(plaintext)
  if (!row.salted) return { data: parsed }
  const committed = parsed as { readonly data: unknown; readonly salt: string }
  return { data: committed.data, salt: committed.salt }
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] }
