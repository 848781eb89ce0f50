/**
 * The seam between the shared anchoring pipeline and a chain. EVM (src/evm/Anchoring.ts) and Fabric
 * (src/fabric/Anchoring.ts) are two implementations of `AnchorChain`; everything else is shared:
 *
 * - leadership: exactly one node runs a network's pipeline, the holder of a PostgreSQL session
 *   advisory lock (`pg_try_advisory_lock(hash("anchord:<chainType>:<networkId>"))`) on a dedicated
 *   connection. When that node dies its connection closes, the lock is released, and another node's
 *   retry takes over;
 * - the batcher (src/batching/Batcher.ts, over AnchorStore) followed by the chain's `submit` in one
 *   fiber, every quarter window;
 * - the chain's `watch` (EVM: a poll of logs; Fabric: the block-event indexer, long running) in another,
 *   restarted after a failure;
 * - one warning when a loop starts failing and one line when it recovers (not one per tick).
 */
import { Cause, Duration, Effect, Schedule, Scope } from "effect"
import { SqlClient } from "effect/sql"
import type { AnchorStore } from "./AnchorStore.ts"
import { type BatchTarget, batcherPeriodMs, batcherTick } from "./Batcher.ts"

const LEADER_RETRY = "2 seconds"
const HEARTBEAT = "2 seconds"

/** Per-network health, for /v1/health and tests. */
export interface NetworkStatus {
  readonly networkId: string
  leader: boolean
  rpc: "up" | "down" | "unknown"
  head: bigint | undefined
  lastError: string | undefined
}

export const makeStatus = (networkId: string): NetworkStatus => ({
  networkId, leader: false, rpc: "unknown", head: undefined, lastError: undefined
})

/** What a connected chain does once this node leads its network. */
export interface ChainPipeline<E> {
  /** Sends the open batches (after each batcher pass). */
  readonly submit: Effect.Effect<void, E, AnchorStore>
  /** Watches the chain and confirms batches: a tick repeated every `watchPeriod`, or a long-running effect. */
  readonly watch: Effect.Effect<void, E, AnchorStore>
  readonly watchPeriod: Duration.Input
}

export interface AnchorChain<E> {
  readonly chainType: "evm" | "fabric"
  readonly target: BatchTarget
  /** Connects (and checks the endpoint) once leadership is held; lives as long as the leadership. */
  readonly connect: Effect.Effect<ChainPipeline<E>, E, AnchorStore | Scope.Scope>
  /** Errors meaning "the endpoint is unreachable" (health shows `down`). */
  readonly isUnavailable: (error: unknown) => boolean
}

export const errorText = (cause: Cause.Cause<unknown>): string => {
  const e = Cause.squash(cause)
  return (e instanceof Error ? e.message : String(e)).slice(0, 300)
}

/** Runs `tick` every `period`, logging failures (and outages once, not per tick). */
export const loop = <E, R>(
  name: string,
  period: Duration.Input,
  status: NetworkStatus,
  tick: Effect.Effect<void, E, R>,
  isUnavailable: (error: unknown) => boolean
) => {
  let failing = false
  return tick.pipe(
    Effect.tap(() =>
      Effect.suspend(() => {
        if (!failing) return Effect.void
        failing = false
        status.rpc = "up"
        return Effect.logInfo(`${name} recovered`)
      })
    ),
    Effect.catchCause((cause) =>
      Effect.suspend(() => {
        if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
        const message = errorText(cause)
        status.lastError = message
        if (isUnavailable(Cause.squash(cause))) status.rpc = "down"
        if (failing) return Effect.void
        failing = true
        return Effect.logWarning(`${name} failing (will keep retrying)`, { error: message })
      })
    ),
    Effect.andThen(Effect.sleep(period)),
    Effect.forever
  )
}

/** Holds the network's advisory lock and runs `pipeline` while it is held; retries every 2 s otherwise. */
export const leaderLoop = <E, R>(key: string, status: NetworkStatus, pipeline: Effect.Effect<void, E, R | Scope.Scope>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const attempt = Effect.scoped(Effect.gen(function*() {
      const conn = yield* sql.reserve
      const rows = yield* conn.executeValues("SELECT pg_try_advisory_lock(hashtextextended($1, 0))", [key])
      const got = rows[0]?.[0]
      if (got !== true && got !== "t") return
      yield* Effect.addFinalizer(() =>
        Effect.andThen(
          conn.executeValues("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [key]).pipe(Effect.ignore),
          Effect.sync(() => void (status.leader = false))
        )
      )
      status.leader = true
      yield* Effect.logInfo("network leadership acquired")
      // The lock lives as long as this connection: check it, and stop leading when it is gone.
      const heartbeat = conn.executeValues("SELECT 1", []).pipe(
        Effect.timeout("5 seconds"),
        Effect.repeat(Schedule.spaced(HEARTBEAT)),
        Effect.andThen(Effect.never)
      )
      yield* Effect.raceFirst(pipeline, heartbeat)
    }))
    yield* attempt.pipe(
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause)
          ? Effect.failCause(cause)
          : Effect.logWarning("network pipeline stopped", { error: errorText(cause) })
      ),
      Effect.andThen(Effect.sleep(LEADER_RETRY)),
      Effect.forever
    )
  })

/** The shared pipeline of one network: leadership, then batcher + `submit`, and `watch`. */
export const runAnchorChain = <E>(chain: AnchorChain<E>, status: NetworkStatus) =>
  leaderLoop(
    `anchord:${chain.chainType}:${chain.target.networkId}`,
    status,
    Effect.gen(function*() {
      const connected = yield* chain.connect
      yield* Effect.all([
        loop("batcher/writer", `${batcherPeriodMs(chain.target)} millis`, status,
          Effect.andThen(batcherTick(chain.target, Effect.void), connected.submit), chain.isUnavailable),
        loop("watcher", connected.watchPeriod, status, connected.watch, chain.isUnavailable)
      ], { concurrency: "unbounded", discard: true })
    })
  ).pipe(Effect.annotateLogs({ service: chain.chainType, networkId: chain.target.networkId }))
