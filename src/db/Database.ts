/**
 * PostgreSQL, the system of record: `@effect/sql-pg` against DATABASE_URL, or an embedded server.
 * Migrations run when the layer is built, so every process sees the current schema.
 */
import { PgClient, PgMigrator } from "@effect/sql-pg"
import { NodeServices } from "@effect/platform-node"
import { Effect, Layer, Option, Redacted, String as Str } from "effect"
import { Migrator, SqlError } from "effect/sql"
import { AppConfig } from "../config.ts"
import { embeddedPostgres } from "./EmbeddedPostgres.ts"
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

/** PgClient + SqlClient for DATABASE_URL, or for an embedded PostgreSQL under the data directory. */
export const DatabaseLayer = Layer.unwrap(
  Effect.gen(function*() {
    const config = yield* AppConfig
    const url = Option.isSome(config.databaseUrl)
      ? config.databaseUrl.value
      : (yield* embeddedPostgres({ dataDir: config.dataDir })).url
    return pgClientLayer(url)
  })
)

/** The database with the schema migrated. */
export const DatabaseLive = MigrationsLayer.pipe(Layer.provideMerge(DatabaseLayer))

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
