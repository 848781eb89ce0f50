/**
 * PostgreSQL, the system of record: the `@effect/sql-pg` client for a URL, and the migrations (run
 * when the layer is built, so every process sees the current schema). Which server: src/app/database.ts.
 */
import { PgClient, PgMigrator } from "@effect/sql-pg"
import { NodeServices } from "@effect/platform-node"
import { Layer, Redacted, String as Str } from "effect"
import { Migrator, SqlError } from "effect/sql"
import { migrations } from "./migrations/index.ts"

export const pgClientLayer = (url: Redacted.Redacted<string>) =>
  PgClient.layer({
    url,
    maxConnections: 20,
    transformResultNames: Str.snakeToCamel,
    transformQueryNames: Str.camelToSnake,
    // Column names only: never rename the members of JSON values (clients' metadata keys).
    transformJson: false,
    applicationName: "anchord"
  })

export const MigrationsLayer = PgMigrator.layer({ loader: Migrator.fromRecord(migrations) }).pipe(
  Layer.provide(NodeServices.layer)
)

/**
 * A failure to reach the database (as opposed to a statement it refused): 503 and retry. The client
 * reports lost sockets and SQLSTATE class 08 as ConnectionError; a server shutting down (class 57P,
 * "terminating connection") arrives as UnknownError with that code. Not the message: every error of
 * the client says "PgConnection: ...".
 */
export const isConnectionFailure = (error: unknown): boolean => {
  if (!SqlError.isSqlError(error)) return false
  const reason = error.reason
  if (reason._tag === "ConnectionError") return true
  if (reason._tag !== "UnknownError") return false
  const cause = reason.cause as { readonly code?: unknown; readonly message?: unknown } | undefined
  const code = typeof cause?.code === "string" ? cause.code : ""
  return code.startsWith("57P") || /^(ECONNREFUSED|ECONNRESET|EPIPE)$/.test(code) ||
    /ECONNREFUSED|ECONNRESET|terminat/i.test(String(cause?.message ?? ""))
}
