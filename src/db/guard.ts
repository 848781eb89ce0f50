/**
 * The database as requests see it: a bounded wait and a circuit breaker.
 *
 * A PostgreSQL that stops answering (a frozen process, a black-holed network, a stuck volume) gives no
 * error and no reset: statements just wait, and interrupting one waits too (the client drains and
 * cancels, ~6 s). So a request never waits on the database for more than `requestDeadlineMillis`:
 * past it, the request is answered 503 and the statement finishes (or fails) in the background. A probe
 * (`SELECT 1`, bounded the same way) runs every `probeIntervalMillis` **on a connection of its own**
 * (reserved from the pool and kept: a pool busy with requests does not make the database look slow).
 * The breaker opens when the database is unreachable (a connection refused or lost) or leaves a probe
 * unanswered while the node's own event loop ran on time: the node could have read an answer, and none
 * came. A probe that timed out while the event loop was itself held for (nearly) the probe's whole bound
 * (a saturated CPU) says nothing about the database: only MISSES_TO_OPEN such misses in a row open the
 * breaker (the requests waiting meanwhile still get their 503 at their deadline). While open,
 * requests that need the database are answered 503 at once, without queueing behind the stall; when a
 * probe succeeds again it closes. One log line when the database goes, one when it comes back (with how
 * long and how many requests were refused), never one per request. /v1/health reads the probe's last
 * result: it answers at once whatever the database does.
 *
 * A 503 says which it is: "The database is unavailable" while the breaker is open or the probe is
 * missing, "The node is overloaded" when a request ran out of time while the database answers the
 * probe (the wait was in the node: its pool, its CPU).
 */
import { monitorEventLoopDelay } from "node:perf_hooks"
import { Cause, Clock, Context, Effect, Exit, Fiber, FiberSet, Layer, Schema, Scope, SubscriptionRef } from "effect"
import { SqlClient, type SqlConnection } from "effect/sql"
import { toWire } from "../api/errors.ts"
import { DatabaseBound, RequestDeadline } from "../api/http.ts"
import { AppConfig } from "../config.ts"
import { isConnectionFailure } from "./errors.ts"
import { DomainErrorClass } from "../api/domainError.ts"

/**
 * The database did not answer within the bound, or the breaker is open: retry later (503). `overloaded`:
 * the database answers the probe, the wait was the node's own.
 */
export class DatabaseUnavailable extends DomainErrorClass<DatabaseUnavailable>()("DatabaseUnavailable", {
  retryAfterSeconds: Schema.Number,
  overloaded: Schema.optional(Schema.Boolean)
}, "SERVICE_UNAVAILABLE", (error) => {
  return error.overloaded === true
    ? "The node is overloaded: its database answers, but this request could not be served in time; retry later"
    : "The database is unavailable; retry later"
}) {}

/** Probes in a row left unanswered while the node itself ran late, before the breaker opens anyway. */
export const MISSES_TO_OPEN = 3

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
  /** The 503 for a wait on the database that passed its deadline: the database's fault, or the node's. */
  readonly timedOut: () => DatabaseUnavailable
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
      /** Probes missed in a row (not counting those the node itself was too late for). */
      let misses = 0
      /** When the running probe started (null: none runs). */
      let probeStartedAt: number | null = null
      // How late the node's event loop runs (a saturated CPU shows here), read per probe.
      const loopDelay = monitorEventLoopDelay({ resolution: 20 })
      loopDelay.enable()
      yield* Effect.addFinalizer(() => Effect.sync(() => loopDelay.disable()))
      /** The probe's own connection, while it has one. */
      let own: { readonly connection: SqlConnection.Connection; readonly scope: Scope.Closeable } | undefined

      const unavailable = new DatabaseUnavailable({ retryAfterSeconds })
      const overloaded = new DatabaseUnavailable({ retryAfterSeconds, overloaded: true })
      /** Whether the database answers its probe now: then a request out of time waited on the node, not on it. */
      const databaseAnswers = () =>
        up && misses === 0 && (probeStartedAt === null || clock.currentTimeMillisUnsafe() - probeStartedAt < config.dbProbeTimeoutMillis)
      const timedOut = () => databaseAnswers() ? overloaded : unavailable

      const bounded = <A, E, R>(effect: Effect.Effect<A, E, R>, millis = config.requestDeadlineMillis): Effect.Effect<A, E | DatabaseUnavailable, R> =>
        Effect.flatMap(FiberSet.run(background, effect), (fiber) => {
          // Which 503 a wait past its deadline gets is decided once, when the deadline passes (the
          // statement's own interruption may end the race first).
          let expired: DatabaseUnavailable | undefined
          return Effect.raceFirst(
            // Its exit, but an interruption that did not come from here (the client ending a connection it
            // gave up on, under a stall) is the database being unavailable, not this request's interruption.
            Effect.flatMap(Fiber.await(fiber as Fiber.Fiber<A, E>), (exit): Effect.Effect<A, E | DatabaseUnavailable> =>
              Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? Effect.fail(expired ?? unavailable) : exit),
            Effect.andThen(
              Effect.sleep(millis),
              // The statement is interrupted in the background (that waits for the database too); its
              // late result is dropped. The database is probed now, not at the next tick.
              Effect.suspend(() => {
                const error = expired = timedOut()
                return Effect.andThen(Effect.andThen(FiberSet.run(background, Fiber.interrupt(fiber)), triggerProbe()), Effect.fail(error))
              })
            )
          )
        })

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

      /** The probe's connection: the one it holds, else one reserved from the pool (kept until it fails). */
      const ownConnection = Effect.suspend(() => {
        if (own !== undefined) return Effect.succeed(own.connection)
        return Effect.flatMap(Scope.make(), (scope) =>
          Scope.provide(scope)(sql.reserve).pipe(
            Effect.tap((connection) => Effect.sync(() => void (own = { connection, scope }))),
            Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.void : Scope.close(scope, Exit.void))
          ))
      })
      /** Gives the probe's connection back (a statement cut off on it may leave it in any state). */
      const dropOwn = Effect.suspend(() => {
        const held = own
        own = undefined
        return held === undefined ? Effect.void : Scope.close(held.scope, Exit.void)
      })

      const probe = Effect.gen(function*() {
        const started = yield* Clock.currentTimeMillis
        probeStartedAt = started
        loopDelay.reset()
        const fiber = yield* FiberSet.run(background, Effect.flatMap(ownConnection, (c) => c.executeUnprepared("SELECT 1", [], undefined)))
        const result = yield* Effect.raceFirst(
          Effect.map(Fiber.await(fiber), (exit) => ({ exit })),
          Effect.as(Effect.sleep(config.dbProbeTimeoutMillis), { exit: undefined })
        )
        probeStartedAt = null
        const ended = yield* Clock.currentTimeMillis
        if (result.exit !== undefined && Exit.isSuccess(result.exit)) {
          misses = 0
          return yield* transition("up", ended - started)
        }
        if (result.exit === undefined) {
          // No answer in time: the statement is cut off and its connection given back, in the background;
          // the next probe takes another one.
          const held = own
          own = undefined
          yield* FiberSet.run(background, Effect.andThen(Fiber.interrupt(fiber), held === undefined ? Effect.void : Scope.close(held.scope, Exit.void)))
          // The node was itself late (it may not have read an answer that came): a miss, not yet an outage.
          misses = loopDelay.max / 1e6 >= config.dbProbeTimeoutMillis * 0.9 ? misses + 1 : MISSES_TO_OPEN
          if (misses >= MISSES_TO_OPEN) yield* transition("down", null)
          return
        }
        const failure = Cause.squash(result.exit.cause)
        // A statement the database refused means it answers: only unreachability opens the breaker, at once.
        if (isConnectionFailure(failure)) {
          yield* dropOwn
          misses = MISSES_TO_OPEN
          yield* transition("down", null)
        }
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

      // The probe's connection goes back to the pool before the pool closes (it was built first).
      yield* Effect.addFinalizer(() => dropOwn)
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
        probeSoon: Effect.suspend(triggerProbe),
        timedOut
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
