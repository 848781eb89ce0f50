/**
 * The pipeline of a network, the same for every chain (`AnchorChain`):
 *
 * - leadership: exactly one node runs a network's pipeline, the holder of a PostgreSQL session
 *   advisory lock (`pg_try_advisory_lock(hash("anchord:<chainType>:<networkId>"))`) on a dedicated
 *   connection. When that node dies its connection closes, the lock is released, and another node's
 *   retry takes over; when it stops answering, PostgreSQL ends that session after the lease
 *   (Leadership.ts), and the writes of a leader woken after that are fenced by the lock;
 * - the batcher (src/anchoring/Batcher.ts, over BatchStore) followed by the chain's `submit` in one
 *   fiber, every quarter window;
 * - the chain's `watch` (EVM: a poll of logs; Fabric: the block-event indexer, long running) in another,
 *   restarted after a failure;
 * - one warning when a loop starts failing and one line when it recovers (not one per tick);
 * - what it sees goes to NetworkHealth (leader, endpoint up / down, last error).
 *
 * `superviseNetworks` starts one such pipeline per configured network of a chain, in the layer's scope.
 */
import { Cause, type Duration, Effect, Schedule, type Scope } from "effect"
import { SqlClient, Statement } from "effect/sql"
import type { AnchorChain } from "./AnchorChain.ts"
import { AnchoringLag } from "./AnchoringLag.ts"
import { batcherPeriodMs, batcherTick } from "./Batcher.ts"
import type { AnchorChainType } from "./model.ts"
import { CurrentLeadership, LEADER_LEASE_MS, type LeaderLease, leaderLockKey } from "./Leadership.ts"
import { NetworkHealth } from "./NetworkHealth.ts"
import { errorText, supervised } from "../supervision.ts"

const LEADER_RETRY = "2 seconds"
/** idle_session_timeout (the lease) exists from PostgreSQL 14 on; before, the lock has no lease. */
const ON_14 = Statement.literal("CASE WHEN current_setting('server_version_num')::int >= 140000")
const HEARTBEAT = "2 seconds"

/** Runs `tick` every `period`, logging failures (and outages once, not per tick), reporting them to NetworkHealth. */
export const loop = Effect.fnUntraced(function*<E, R>(
  name: string,
  period: Duration.Input,
  networkId: string,
  tick: Effect.Effect<void, E, R>,
  isUnavailable: (error: unknown) => boolean
) {
  const health = yield* NetworkHealth
  return yield* supervised(tick, {
    name,
    pause: period,
    onFailure: (cause) => health.update(networkId, { lastError: errorText(cause), ...(isUnavailable(Cause.squash(cause)) ? { rpc: "down" as const } : {}) }),
    onRecovery: health.update(networkId, { rpc: "up" })
  })
})

/** Holds the network's advisory lock and runs `pipeline` while it is held; retries every 2 s otherwise. */
export const leaderLoop = Effect.fnUntraced(function*<E, R>(key: string, networkId: string, pipeline: Effect.Effect<void, E, R | Scope.Scope>) {
  const sql = yield* SqlClient.SqlClient
  const health = yield* NetworkHealth
  const attempt = Effect.scoped(Effect.gen(function*() {
    const conn = yield* sql.reserve
    // The lock is the reserved connection's (a session lock): statements are written with the client's
    // tagged template, like every other, and run on that connection compiled.
    const onConn = (statement: Statement.Statement<object>) => conn.executeValues(...statement.compile())
    const rows = yield* onConn(sql`SELECT pg_try_advisory_lock(hashtextextended(${key}, 0))`)
    const got = rows[0]?.[0]
    if (got !== true && got !== "t") return
    yield* Effect.addFinalizer(() =>
      Effect.andThen(
        onConn(sql`SELECT pg_advisory_unlock(hashtextextended(${key}, 0)), ${ON_14} THEN set_config('idle_session_timeout', '0', false) END`)
          .pipe(Effect.ignore),
        health.update(networkId, { leader: false })
      )
    )
    // The lease (Leadership.ts): the server ends this session, and so the lock, once it has been idle
    // this long; the heartbeat below keeps it busy while the node runs. Who this session is goes with
    // the pipeline, so that its writes can check the lock is still theirs (fencing).
    const [session] = yield* onConn(
      sql`SELECT ${ON_14} THEN set_config('idle_session_timeout', ${`${LEADER_LEASE_MS}ms`}, false) END, pg_backend_pid(),
        (SELECT backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid())`
    )
    if (session?.[0] === null || session?.[0] === undefined) {
      yield* Effect.logWarning("PostgreSQL before 14 has no idle_session_timeout: a leader that stops answering without dying keeps the lock")
    }
    const lease: LeaderLease = { key, pid: Number(session?.[1]), backendStart: String(session?.[2]) }
    yield* health.update(networkId, { leader: true })
    yield* Effect.logInfo("network leadership acquired")
    // The lock lives as long as this connection: check it, and stop leading when it is gone.
    const heartbeat = onConn(sql`SELECT 1`).pipe(
      Effect.timeout("5 seconds"),
      Effect.repeat(Schedule.spaced(HEARTBEAT)),
      Effect.andThen(Effect.never)
    )
    yield* Effect.raceFirst(Effect.provideService(pipeline, CurrentLeadership, lease), heartbeat)
  }))
  return yield* attempt.pipe(
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
export const runAnchorChain = <E, R>(chain: AnchorChain<E, R>) => {
  const networkId = chain.target.networkId
  return leaderLoop(
    leaderLockKey(chain.chainType, networkId),
    networkId,
    Effect.gen(function*() {
      const lag = yield* AnchoringLag
      // Not leading (or stopped): this node's view of the network's lag no longer counts.
      yield* Effect.addFinalizer(() => lag.clear(networkId))
      const connected = yield* chain.connect
      // The lag counts once the batches it cut went out: a tick that fails (the endpoint is down) holds no deliveries back.
      const batchAndSubmit = batcherTick(chain.target, Effect.void).pipe(
        Effect.tap(() => connected.submit),
        Effect.flatMap((excess) => lag.report(networkId, excess)),
        Effect.tapCause(() => lag.clear(networkId))
      )
      yield* Effect.all([
        loop("batcher/writer", `${batcherPeriodMs(chain.target)} millis`, networkId, batchAndSubmit, chain.isUnavailable),
        loop("watcher", connected.watchPeriod, networkId, connected.watch, chain.isUnavailable)
      ], { concurrency: "unbounded", discard: true })
    })
  ).pipe(Effect.annotateLogs({ service: chain.chainType, networkId }))
}

/**
 * One supervised pipeline per configured network of a chain, each registered in NetworkHealth and
 * forked into the caller's scope (the layer's: the pipelines stop with the node). `none` is logged
 * when no network of that chain is configured.
 */
export const superviseNetworks = Effect.fnUntraced(function*<N extends { readonly networkId: string }, E, R>(
  chainType: AnchorChainType,
  networks: ReadonlyArray<N>,
  chainOf: (network: N) => AnchorChain<E, R>,
  none: string
) {
  const health = yield* NetworkHealth
  if (networks.length === 0) yield* Effect.logWarning(none)
  for (const network of networks) {
    yield* health.register(network.networkId, chainType)
    yield* runAnchorChain(chainOf(network)).pipe(Effect.forkScoped)
  }
})
