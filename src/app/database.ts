/** The node's database: DATABASE_URL, or an embedded PostgreSQL under the data directory (src/dev/). */
import { Effect, Layer, Option } from "effect"
import { AppConfig } from "../config.ts"
import { MigrationsLayer, pgClientLayer } from "../db/Database.ts"
import { embeddedPostgres } from "../dev/EmbeddedPostgres.ts"

/** PgClient + SqlClient for DATABASE_URL, or for an embedded PostgreSQL under the data directory. */
export const DatabaseLayer = Layer.unwrap(
  Effect.gen(function*() {
    const config = yield* AppConfig
    const url = Option.isSome(config.databaseUrl)
      ? config.databaseUrl.value
      : (yield* embeddedPostgres({ dataDir: config.dataDir })).url
    return pgClientLayer(url, { connectTimeoutMillis: config.dbConnectTimeoutMillis, statementTimeoutMillis: config.dbStatementTimeoutMillis })
  })
)

/** The database with the schema migrated. */
export const DatabaseLive = MigrationsLayer.pipe(Layer.provideMerge(DatabaseLayer))
