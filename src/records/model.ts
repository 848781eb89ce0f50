/** Rows of the `records` table and their API representation (SPEC 4). */
import { parseStrictJson } from "../canonical/strictJson.ts"
import type { Environment } from "../auth/apiKeys.ts"
import type { Anchor, ChainType, PackageMode, RecordView } from "../api/recordSchemas.ts"

export interface RecordRow {
  readonly id: string
  readonly accountId: string
  readonly environment: Environment
  readonly hash: string
  readonly status: "QUEUED" | "BATCHING" | "ANCHORED" | "FAILED"
  readonly chainType: ChainType
  readonly networkId: string
  readonly packageMode: PackageMode
  readonly source: "data" | "encrypted" | "hash"
  readonly dataJcs: string | null
  readonly ciphertext: Uint8Array | null
  readonly nonce: Uint8Array | null
  readonly authTag: Uint8Array | null
  readonly metadata: Record<string, unknown>
  readonly webhookUrl: string | null
  readonly createdAt: Date
  readonly updatedAt: Date
  readonly anchoredAt: Date | null
  readonly deletedAt: Date | null
  readonly hardDeleted: boolean
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
