/**
 * The records of a group commit in one statement: their columns bound as binary arrays, their accounts'
 * monthly usage counted by the same statement (src/records/IngestWriter.ts commits with it).
 */
import { PgTypes } from "@effect/sql-pg"
import type { SqlClient, Statement } from "effect/sql"
import { binaryArray } from "../db/rows.ts"
import type { RecordRow } from "./model.ts"

/** A row as ingest writes it: what it is before anchoring, deletion or anchors exist. */
export type NewRecord = Omit<RecordRow, "status" | "anchoredAt" | "deletedAt" | "hardDeleted" | "anchors"> & {
  /** A salted encrypted record's salt, for its 202 answer only (never stored in clear: it is inside the ciphertext). */
  readonly salt?: string | undefined
}

/**
 * Rows as one array per column, bound in PostgreSQL's binary format and turned back into rows by
 * `unnest`. Binary arrays are not parsed on either side: each canonical text (1 KB in a typical
 * record) reaches its column as the bytes it is, where a JSON document of rows had PostgreSQL tokenize
 * every record (under the same load: 63-75 µs of PostgreSQL CPU per row with json_populate_recordset,
 * 53-55 with these arrays). The statement's shape does not depend on the number of rows, so its
 * prepared form is reused.
 */
const columns = (rows: ReadonlyArray<NewRecord>) => {
  const n = rows.length
  const id = new Array<string>(n), accountId = new Array<string>(n), environment = new Array<string>(n)
  const hash = new Array<string>(n), chainType = new Array<string>(n), networkId = new Array<string>(n)
  const packageMode = new Array<string>(n), source = new Array<string>(n), dataJcs = new Array<string | null>(n)
  const ciphertext = new Array<Uint8Array | null>(n), nonce = new Array<Uint8Array | null>(n), authTag = new Array<Uint8Array | null>(n)
  const metadata = new Array<string>(n), webhookUrl = new Array<string | null>(n), collection = new Array<string | null>(n)
  const createdAt = new Array<Date>(n), updatedAt = new Array<Date>(n), salted = new Array<boolean>(n)
  for (let i = 0; i < n; i++) {
    const r = rows[i]!
    id[i] = r.id
    accountId[i] = r.accountId
    environment[i] = r.environment
    hash[i] = r.hash
    chainType[i] = r.chainType
    networkId[i] = r.networkId
    packageMode[i] = r.packageMode
    source[i] = r.source
    dataJcs[i] = r.dataJcs
    ciphertext[i] = r.ciphertext
    nonce[i] = r.nonce
    authTag[i] = r.authTag
    metadata[i] = JSON.stringify(r.metadata)
    webhookUrl[i] = r.webhookUrl
    collection[i] = r.collection
    createdAt[i] = r.createdAt
    updatedAt[i] = r.updatedAt
    salted[i] = r.salted
  }
  const text = (values: ReadonlyArray<string | null>) => binaryArray(values, PgTypes.OID.text)
  const bytea = (values: ReadonlyArray<Uint8Array | null>) => binaryArray(values, PgTypes.OID.bytea)
  const timestamptz = (values: ReadonlyArray<Date>) => binaryArray(values, PgTypes.OID.timestamptz)
  return {
    id: text(id),
    accountId: text(accountId),
    environment: text(environment),
    hash: text(hash),
    chainType: text(chainType),
    networkId: text(networkId),
    packageMode: text(packageMode),
    source: text(source),
    dataJcs: text(dataJcs),
    ciphertext: bytea(ciphertext),
    nonce: bytea(nonce),
    authTag: bytea(authTag),
    metadata: text(metadata),
    webhookUrl: text(webhookUrl),
    collection: text(collection),
    createdAt: timestamptz(createdAt),
    updatedAt: timestamptz(updatedAt),
    salted: binaryArray(salted, PgTypes.OID.bool)
  }
}

/** An account's usage after a commit (`used` is a bigint: text or a number from the driver). */
type UsageAfter = {
  readonly accountId: string
  readonly used: string | number
}

/**
 * All rows in one statement (see `columns`), counting usage in the same statement. Exported for the
 * commit-ceiling reference of `npm run bench:ingest`, which must write exactly what ingest writes.
 *
 * The store's one hot statement (docs/data-layer.md): its few result rows (one per account) are typed
 * by `sql<UsageAfter>`, not decoded by a schema, and its rows are bound as binary arrays, not encoded
 * by a request schema — a commit of thousands of records per second does no per-row schema work.
 */
export const insertRecords = (
  sql: SqlClient.SqlClient,
  rows: ReadonlyArray<NewRecord>,
  month: string,
  /** A companion's rows inserted by the same statement (a companion writer's insert as a fragment, ./companions.ts). */
  companion?: Statement.Fragment
) => {
  const c = columns(rows)
  return sql<UsageAfter>`
    WITH ins AS (
      INSERT INTO records (id, account_id, environment, hash, chain_type, network_id, package_mode, source,
                           data_jcs, ciphertext, nonce, auth_tag, metadata, webhook_url, collection, created_at, updated_at, salted)
      SELECT id, account_id, environment, hash, chain_type, network_id, package_mode, source,
             data_jcs, ciphertext, nonce, auth_tag, metadata::jsonb, webhook_url, collection, created_at, updated_at, salted
      FROM unnest(${c.id}::text[], ${c.accountId}::text[], ${c.environment}::text[], ${c.hash}::text[],
                  ${c.chainType}::text[], ${c.networkId}::text[], ${c.packageMode}::text[], ${c.source}::text[],
                  ${c.dataJcs}::text[], ${c.ciphertext}::bytea[], ${c.nonce}::bytea[], ${c.authTag}::bytea[],
                  ${c.metadata}::text[], ${c.webhookUrl}::text[], ${c.collection}::text[],
                  ${c.createdAt}::timestamptz[], ${c.updatedAt}::timestamptz[], ${c.salted}::bool[])
        AS u(id, account_id, environment, hash, chain_type, network_id, package_mode, source,
             data_jcs, ciphertext, nonce, auth_tag, metadata, webhook_url, collection, created_at, updated_at, salted)
      RETURNING account_id
    )${companion === undefined ? sql`` : sql`, companion AS (${companion})`}
    INSERT INTO usage_monthly (account_id, month, used)
    SELECT account_id, ${month}, count(*) FROM ins GROUP BY account_id
    ON CONFLICT (account_id, month) DO UPDATE SET used = usage_monthly.used + EXCLUDED.used
    RETURNING account_id, used`
}
