/** Services over a real PostgreSQL for tests on virtual time (TestClock). */
import { Effect, Layer, Redacted } from "effect"
import type { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { MigrationsLayer, pgClientLayer } from "../../src/db/Database.ts"

/**
 * Runs `body` with `layer` over the database at `url` (migrated). The layer, and so the connection
 * pool, is built on the live clock: its connect and idle timers would never fire on virtual time. The
 * services' own reads of the time happen in `body`, on the TestClock.
 */
export const withDatabaseServices =
  <ROut, E2>(url: () => string, layer: Layer.Layer<ROut, E2, SqlClient.SqlClient>) => <A, E>(body: Effect.Effect<A, E, ROut | SqlClient.SqlClient>) =>
    Effect.scoped(Effect.gen(function*() {
      const services = yield* TestClock.withLive(Layer.build(layer.pipe(
        Layer.provideMerge(MigrationsLayer),
        Layer.provideMerge(pgClientLayer(Redacted.make(url())))
      )))
      return yield* Effect.provideContext(body, services)
    }))

/** A virtual "now" a little ahead of the real one, so rows the database stamps with now() are in its past. */
export const startClockNearNow = Effect.sync(() => Date.now() + 1_000).pipe(Effect.tap((t) => TestClock.setTime(t)))

/** A random lowercase hex id of `n` characters. */
export const hexId = (n = 24) => Array.from({ length: n }, () => "0123456789abcdef"[Math.floor(Math.random() * 16)]).join("")
