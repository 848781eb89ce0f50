/**
 * PostgreSQL, the system of record: the `@effect/sql-pg` client for a URL, and the migrations (run
 * when the layer is built, so every process sees the current schema). Which server: src/app/database.ts.
 */
import { PgClient, PgMigrator } from "@effect/sql-pg"
import { NodeServices } from "@effect/platform-node"
import { Layer, Redacted, String as Str } from "effect"
import { Migrator } from "effect/sql"
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

export { isConnectionFailure } from "./errors.ts"
