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
  hardDeleted: Schema.Boolean
})

export type RecordRow = typeof RecordRow.Type & {
  /** Attached by RecordStore (src/anchoring/anchorViews.ts); not a column. */
  readonly anchors?: ReadonlyArray<typeof Anchor.Type> | undefined
}

export const toView = (
  row: RecordRow,
  options?: { readonly plaintext?: string | undefined; readonly data?: unknown }
): RecordView => {
  const encrypted = row.source === "encrypted"
  let data: unknown = null
  // parseStrictJson, not JSON.parse: V8 in Node 24 can mis-read escaped member names (nodejs/node#63785).
  if (row.dataJcs !== null) data = options?.data !== undefined ? options.data : parseStrictJson(row.dataJcs)
  else if (options?.plaintext !== undefined) data = parseStrictJson(options.plaintext)
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
  return view
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] }
