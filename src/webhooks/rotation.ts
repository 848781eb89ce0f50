/**
 * Secret rotation (SPEC 5.5) over `webhook_settings`: `secret` is always the newest
 * secret; after a rotation the previous one keeps signing x-webhook-signature for the overlap (24 h
 * after `rotated_at`, or until the account confirms), while the newest signs x-webhook-signature-next.
 *
 * The rule is read by the settings store (what GET /v1/webhooks shows, what a rotation keeps) and by the
 * dispatcher's renderer (which secrets sign a delivery), as SQL fragments over the Clock's time passed in
 * as a parameter, never PostgreSQL's now(): one clock for the node and its tests.
 */
import type { SqlClient, Statement } from "effect/sql"

/** The old secret keeps signing x-webhook-signature this long after a rotation, unless confirmed. */
export const rotationOverlap = (sql: SqlClient.SqlClient): Statement.Fragment => sql`interval '24 hours'`

/** When the overlap of a rotation at `rotatedAt` (a column) ends. */
export const overlapEnd = (sql: SqlClient.SqlClient, rotatedAt: Statement.Fragment): Statement.Fragment => sql`${rotatedAt} + ${rotationOverlap(sql)}`

/** Whether the settings row (its columns under `table`, e.g. "s", else unqualified) is inside a rotation overlap at `now`. */
export const inOverlap = (sql: SqlClient.SqlClient, now: Date, table?: string): Statement.Fragment => {
  const column = (name: string) => sql(table === undefined ? name : `${table}.${name}`)
  return sql`${column("previous_secret")} IS NOT NULL AND ${column("rotated_at")} > ${now}::timestamptz - ${rotationOverlap(sql)}`
}
