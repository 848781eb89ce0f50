/**
 * The database breaker (src/db/guard.ts) against a real PostgreSQL: a node that is busy (its pool taken
 * by requests) is not a database that is down, and says so; a database that is
 * unreachable or does not answer still opens the breaker within a few probes.
 *   npx vitest run test/db/guard.test.ts
 */
import { assert, describe, it } from "@effect/vitest"
import * as Net from "node:net"
import { Effect, Exit, Fiber, Layer, Redacted, SubscriptionRef } from "effect"
import { SqlClient } from "effect/sql"
import { beforeAll } from "vitest"
import { AppConfig } from "../../src/config.ts"
import { POOL_MAX_CONNECTIONS, pgClientLayer } from "../../src/db/Database.ts"
import { DatabaseGuard } from "../../src/db/guard.ts"
import { freshDatabase } from "../support/db.ts"

let url = ""
beforeAll(async () => {
  url = await freshDatabase()
})

const PROBE_INTERVAL = 200, PROBE_TIMEOUT = 300, DEADLINE = 500

const guarded = (databaseUrl: () => string) => <A, E>(body: Effect.Effect<A, E, DatabaseGuard | SqlClient.SqlClient>) =>
  Effect.scoped(Effect.gen(function*() {
    const services = yield* Layer.build(DatabaseGuard.layer.pipe(
      Layer.provideMerge(AppConfig.layerWith({ dbProbeIntervalMillis: PROBE_INTERVAL, dbProbeTimeoutMillis: PROBE_TIMEOUT, requestDeadlineMillis: DEADLINE })),
      Layer.provideMerge(pgClientLayer(Redacted.make(databaseUrl()), { connectTimeoutMillis: 10_000, statementTimeoutMillis: 60_000 }))
    ))
    return yield* Effect.provideContext(body, services)
  }))

/** Whether the breaker was ever open while `during` ran, sampled every 10 ms. */
const everOpen = <A, E, R>(during: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const guard = yield* DatabaseGuard
    let open = false
    const watcher = yield* Effect.forkChild(Effect.forever(Effect.andThen(Effect.sync(() => void (open ||= !guard.isUp())), Effect.sleep("10 millis"))))
    const result = yield* during
    yield* Fiber.interrupt(watcher)
    return { open, result }
  })

const probed = Effect.gen(function*() {
  const guard = yield* DatabaseGuard
  yield* Effect.repeat(SubscriptionRef.get(guard.state), { until: (s) => s.latencyMs !== null })
})

const messageOf = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) ? String((exit.cause.reasons.find((r) => r._tag === "Fail") as { error?: { message?: string } } | undefined)?.error?.message) : "success"

describe("the database breaker", () => {
  it.live("every pool connection taken by requests: the breaker stays closed, and a request out of time is told the node is overloaded",
    () =>
      guarded(() => url)(Effect.gen(function*() {
        const guard = yield* DatabaseGuard
        const sql = yield* SqlClient.SqlClient
        yield* probed
        // More slow statements than the pool has connections, for 3 s (ten probe rounds).
        const busy = yield* Effect.forkChild(
          Effect.forEach(Array.from({ length: POOL_MAX_CONNECTIONS + 5 }), () => sql`SELECT pg_sleep(3)`, { concurrency: "unbounded" })
        )
        const { open, result } = yield* everOpen(Effect.gen(function*() {
          yield* Effect.sleep("500 millis")
          const late = yield* Effect.exit(guard.bounded(sql`SELECT 1`))
          yield* Effect.sleep("1500 millis")
          return late
        }))
        assert.isFalse(open, "the breaker opened while PostgreSQL answered")
        assert.match(messageOf(result), /^The node is overloaded: its database answers/)
        assert.strictEqual((yield* SubscriptionRef.get(guard.state)).status, "up")
        yield* Fiber.join(busy)
        assert.isTrue(Exit.isSuccess(yield* Effect.exit(guard.bounded(sql`SELECT 1`))))
      })), 30_000)

  it.live("a database that does not answer (a listener that never speaks) opens the breaker at the first probe; refused, alike", () =>
    Effect.gen(function*() {
      const silent = Net.createServer(() => {})
      yield* Effect.promise(() => new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve)))
      const port = (silent.address() as Net.AddressInfo).port
      const opened = (target: string) =>
        guarded(() => target)(Effect.gen(function*() {
          const guard = yield* DatabaseGuard
          const started = Date.now()
          while (guard.isUp()) yield* Effect.sleep("10 millis")
          const exit = yield* Effect.exit(guard.refuse)
          return { ms: Date.now() - started, message: messageOf(exit), state: yield* SubscriptionRef.get(guard.state) }
        }))
      const frozen = yield* opened(`postgres://postgres:x@127.0.0.1:${port}/postgres`)
      silent.close()
      assert.strictEqual(frozen.state.status, "down")
      assert.strictEqual(frozen.message, "The database is unavailable; retry later")
      // One probe's bound (and a loaded machine's slack).
      assert.isAtLeast(frozen.ms, PROBE_TIMEOUT - 50)
      assert.isBelow(frozen.ms, 5_000)
      const refused = yield* opened(`postgres://postgres:x@127.0.0.1:${port}/postgres`)
      assert.isBelow(refused.ms, 2_000, "a refused connection opens the breaker at the first probe")
    }), 60_000)
})
