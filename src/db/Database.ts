/**
 * PostgreSQL, the system of record: the `@effect/sql-pg` client for a URL, and the migrations (run
 * when the layer is built, so every process sees the current schema). Which server: src/app/database.ts.
 */
import { PgClient, PgMigrator } from "@effect/sql-pg"
import { NodeServices } from "@effect/platform-node"
import { Layer, Redacted, String as Str } from "effect"
import { Migrator } from "effect/sql"
import { migrations } from "./migrations/index.ts"

/** The waits the client bounds (AppConfig, docs/operations.md "Bounded waits"); defaults for tools and tests. */
export interface PgBounds {
  readonly connectTimeoutMillis: number
  /** PostgreSQL's `statement_timeout` for the node's sessions (0: none). */
  readonly statementTimeoutMillis: number
}

export const defaultPgBounds: PgBounds = { connectTimeoutMillis: 5_000, statementTimeoutMillis: 60_000 }

/** Connections in the node's pool at most (also reported by /metrics: anchord_db_pool_max_connections). */
export const POOL_MAX_CONNECTIONS = 20

export const pgClientLayer = (url: Redacted.Redacted<string>, bounds: PgBounds = defaultPgBounds) =>
  PgClient.layer({
    url,
    maxConnections: POOL_MAX_CONNECTIONS,
    connectTimeout: `${bounds.connectTimeoutMillis} millis`,
    // Server-side bounds too: a statement that runs away (a lock wait, a plan gone wrong) ends there,
    // and a session left idle inside a transaction by a client that vanished does not hold its locks.
    startupParameters: {
      statement_timeout: String(bounds.statementTimeoutMillis),
      idle_in_transaction_session_timeout: String(Math.max(bounds.statementTimeoutMillis, 60_000)),
      // Short statements on indexes only: JIT compiling one (~15 ms, seen on the webhook render) costs
      // far more than it can save.
      jit: "off"
    },
    transformResultNames: Str.snakeToCamel,
    transformQueryNames: Str.camelToSnake,
    // Column names only: never rename the members of JSON values (clients' metadata keys).
    transformJson: false,
    applicationName: "anchord"
  })

export const MigrationsLayer = PgMigrator.layer({ loader: Migrator.fromRecord(migrations) }).pipe(
  Layer.provide(NodeServices.layer)
)
