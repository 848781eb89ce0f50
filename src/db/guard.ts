/**
 * The database as requests see it: a bounded wait and a circuit breaker.
 *
 * A PostgreSQL that stops answering (a frozen process, a black-holed network, a stuck volume) gives no
 * error and no reset: statements just wait, and interrupting one waits too (the client drains and
 * cancels, ~6 s). So a request never waits on the database for more than `requestDeadlineMillis`:
 * past it, the request is answered 503 and the statement finishes (or fails) in the background. A probe
 * (`SELECT 1`, bounded the same way) runs every `probeIntervalMillis`: when it fails the breaker opens
 * and requests that need the database are answered 503 at once, without queueing behind the stall;
 * when a probe succeeds again it closes. One log line when the database goes, one when it comes back
 * (with how long and how many requests were refused), never one per request. /v1/health reads the
 * probe's last result: it answers at once whatever the database does.
 */
import { Cause, Clock, Context, Effect, Exit, Fiber, FiberSet, Layer, Schema, SubscriptionRef } from "effect"
import { toWire } from "../api/errors.ts"
import { DatabaseBound, RequestDeadline } from "../api/http.ts"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config.ts"
import { isConnectionFailure } from "./errors.ts"

/** The database did not answer within the bound, or the breaker is open: retry later (503). */
export class DatabaseUnavailable extends Schema.TaggedError<DatabaseUnavailable>()("DatabaseUnavailable", {
  retryAfterSeconds: Schema.Number
}) {
  get errorCode() {
    return "SERVICE_UNAVAILABLE" as const
  }
  override get message() {
    return "The database is unavailable; retry later"
  }
}

export interface DatabaseState {
  readonly status: "up" | "down"
  /** Latency of the last successful probe (ms); null while down. */
  readonly latencyMs: number | null
  /** When the status last changed (the node's Clock, epoch ms). */
  readonly since: number
  /** Requests refused since the database went down. */
  readonly refused: number
}

export class DatabaseGuard extends Context.Service<DatabaseGuard, {
  readonly state: SubscriptionRef.SubscriptionRef<DatabaseState>
  /** Whether the breaker is closed (read without an effect step: the ingest fast path asks per request). */
  readonly isUp: () => boolean
  /** The database is down: counts the refusal, fails with the 503. */
  readonly refuse: Effect.Effect<never, DatabaseUnavailable>
  /**
   * Runs `effect` (which waits on the database) for at most the request deadline: past it, fails with
   * DatabaseUnavailable at once, lets the effect end in the background, and probes the database now.
   */
  readonly bounded: <A, E, R>(effect: Effect.Effect<A, E, R>, millis?: number) => Effect.Effect<A, E | DatabaseUnavailable, R>
  /** Seconds a refused client is told to wait. */
  readonly retryAfterSeconds: number
  /** Something waiting on the database gave up: probe it now rather than at the next tick. */
  readonly probeSoon: Effect.Effect<void>
}>()("anchord/db/DatabaseGuard") {
  static readonly layer = Layer.effect(
    DatabaseGuard,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      const clock = yield* Clock.Clock
      const background = yield* FiberSet.make<unknown, unknown>()
      const retryAfterSeconds = Math.max(1, Math.ceil(config.dbProbeIntervalMillis / 1000))
      const state = yield* SubscriptionRef.make<DatabaseState>({ status: "up", latencyMs: null, since: clock.currentTimeMillisUnsafe(), refused: 0 })
      let up = true
      let probing = false

      const unavailable = new DatabaseUnavailable({ retryAfterSeconds })

      const bounded = <A, E, R>(effect: Effect.Effect<A, E, R>, millis = config.requestDeadlineMillis): Effect.Effect<A, E | DatabaseUnavailable, R> =>
        Effect.flatMap(FiberSet.run(background, effect), (fiber) =>
          Effect.raceFirst(
            // Its exit, but an interruption that did not come from here (the client ending a connection it
            // gave up on, under a stall) is the database being unavailable, not this request's interruption.
            Effect.flatMap(Fiber.await(fiber as Fiber.Fiber<A, E>), (exit): Effect.Effect<A, E | DatabaseUnavailable> =>
              Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? Effect.fail(unavailable) : exit),
            Effect.andThen(
              Effect.sleep(millis),
              // The statement is interrupted in the background (that waits for the database too); its
              // late result is dropped. The database is probed now, not at the next tick.
              Effect.andThen(
                Effect.andThen(FiberSet.run(background, Fiber.interrupt(fiber)), triggerProbe()),
                Effect.fail(unavailable)
              )
            )
          ))

      const transition = Effect.fnUntraced(function*(next: "up" | "down", latencyMs: number | null) {
        const now = yield* Clock.currentTimeMillis
        const previous = yield* SubscriptionRef.get(state)
        if (previous.status === next) {
          if (next === "up") yield* SubscriptionRef.set(state, { ...previous, latencyMs })
          return
        }
        up = next === "up"
        yield* SubscriptionRef.set(state, { status: next, latencyMs, since: now, refused: 0 })
        if (next === "down") {
          yield* Effect.logWarning("database unavailable: requests that need it are answered 503 until it answers again")
        } else {
          yield* Effect.logInfo("database available again").pipe(Effect.annotateLogs({
            downForMs: now - previous.since,
            refusedRequests: previous.refused
          }))
        }
      })

      const probe = Effect.gen(function*() {
        const started = yield* Clock.currentTimeMillis
        const result = yield* bounded(sql`SELECT 1`, config.dbProbeTimeoutMillis).pipe(Effect.result)
        const ended = yield* Clock.currentTimeMillis
        if (result._tag === "Success") return yield* transition("up", ended - started)
        const failure = result.failure
        // A statement the database refused means it answers: only unreachability opens the breaker.
        if (failure instanceof DatabaseUnavailable || isConnectionFailure(failure)) yield* transition("down", null)
      })

      /** One probe at a time: a probe asked for while one runs is that one. */
      const probeOnce: Effect.Effect<void> = Effect.suspend(() => {
        if (probing) return Effect.void
        probing = true
        // A defect in one probe must not end the probing (the breaker would stay as it is for good).
        return Effect.ensuring(
          Effect.catchCause(probe, (cause) => Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.logWarning("database probe failed", cause)),
          Effect.sync(() => void (probing = false))
        )
      })
      function triggerProbe() {
        return Effect.asVoid(FiberSet.run(background, probeOnce))
      }

      yield* Effect.forkScoped(Effect.forever(Effect.andThen(probeOnce, Effect.sleep(config.dbProbeIntervalMillis))))

      return DatabaseGuard.of({
        state,
        isUp: () => up,
        refuse: Effect.andThen(
          SubscriptionRef.update(state, (s) => ({ ...s, refused: s.refused + 1 })),
          Effect.fail(unavailable)
        ),
        bounded,
        retryAfterSeconds,
        probeSoon: Effect.suspend(triggerProbe)
      })
    })
  )
}

/**
 * The DatabaseBound middleware of the contract (src/api/http.ts): 503 at once while the breaker is open,
 * else the endpoint bounded by its deadline (`RequestDeadline`, or REQUEST_DEADLINE_MS).
 */
export const DatabaseBoundLayer = Layer.effect(
  DatabaseBound,
  Effect.map(DatabaseGuard, (guard) =>
    DatabaseBound.of((httpEffect, { endpoint }) => {
      const deadline = Context.get(endpoint.annotations as Context.Context<never>, RequestDeadline)
      const bounded = guard.bounded(httpEffect, deadline).pipe(
        Effect.catchIf(
          (e): e is DatabaseUnavailable => e instanceof DatabaseUnavailable,
          (e) => Effect.fail(toWire(e))
        ),
        // A handler that could not reach the database (its 503): probe now, so the breaker and
        // /v1/health know within milliseconds rather than at the next tick.
        Effect.tapError((e) =>
          typeof e === "object" && e !== null && (e as { errorCode?: unknown }).errorCode === "SERVICE_UNAVAILABLE" ? guard.probeSoon : Effect.void
        )
      )
      // Per request: this function runs once per endpoint, when the routes are built, so a check outside
      // the effect never saw the breaker open (found by the 503 test of test/handlers/records.test.ts).
      return Effect.suspend(() => guard.isUp() ? bounded : Effect.mapError(guard.refuse, toWire))
    }))
)
