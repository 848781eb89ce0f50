/** Upgrade tests: the database at `url` migrated by exactly the named migrations (the others left out). */
import { NodeServices } from "@effect/platform-node"
import { PgMigrator } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { Migrator } from "effect/sql"
import { pgClientLayer } from "../../src/db/Database.ts"
import { migrations } from "../../src/db/migrations/index.ts"

export const migrateTo = (url: string, names: ReadonlyArray<string>) =>
  Effect.scoped(Layer.build(PgMigrator.layer({
    loader: Migrator.fromRecord(Object.fromEntries(Object.entries(migrations).filter(([name]) => names.includes(name))))
  }).pipe(Layer.provide(NodeServices.layer), Layer.provide(pgClientLayer(Redacted.make(url))))))
