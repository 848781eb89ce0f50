/**
 * This month's usage per account for the X-Quota-* headers, read from PostgreSQL at most once a
 * second per account. Enforcement does not use it: the ingest transaction checks the quota itself.
 * The headers are informational, so a database that cannot answer gives the last count known (or 0),
 * never a failed response.
 */
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { DatabaseGuard } from "../db/guard.ts"
import { rowDefects } from "../db/rows.ts"
import { currentMonth } from "./plans.ts"

export class UsageCache extends Context.Service<UsageCache, {
  readonly get: (accountId: string) => Effect.Effect<number>
  readonly observe: (accountId: string, used: number) => void
}>()("anchord/auth/UsageCache") {
  static readonly layer = Layer.effect(
    UsageCache,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const guard = yield* DatabaseGuard
      // Read without an effect step: this runs on every authenticated response.
      const clock = yield* Clock.Clock
      const cache = new Map<string, { used: number; month: string; at: number }>()
      const findUsage = SqlSchema.findOneOption({
        Request: Schema.Struct({ accountId: Schema.String, month: Schema.String }),
        // `used` is a bigint, read as text.
        Result: Schema.Struct({ used: Schema.NumberFromString }),
        execute: ({ accountId, month }) => sql`SELECT used::text AS used FROM usage_monthly WHERE account_id = ${accountId} AND month = ${month}`
      })
      return UsageCache.of({
        get: (accountId) => {
          const now = clock.currentTimeMillisUnsafe()
          const month = currentMonth(now).month
          const hit = cache.get(accountId)
          if (hit && hit.month === month && now - hit.at < 1000) return Effect.succeed(hit.used)
          const known = hit?.month === month ? hit.used : 0
          // Headers never wait on a stalled database: the last count known, at once or within the bound.
          if (!guard.isUp()) return Effect.succeed(known)
          return guard.bounded(rowDefects(findUsage({ accountId, month }))).pipe(
            Effect.map((row) => {
              const used = Option.match(row, { onNone: () => 0, onSome: (r) => r.used })
              cache.set(accountId, { used, month, at: now })
              return used
            }),
            Effect.catch(() => Effect.succeed(known))
          )
        },
        observe: (accountId, used) => {
          const hit = cache.get(accountId)
          const now = clock.currentTimeMillisUnsafe()
          if (!hit || used > hit.used) cache.set(accountId, { used, month: currentMonth(now).month, at: hit?.at ?? now })
        }
      })
    })
  )
}
