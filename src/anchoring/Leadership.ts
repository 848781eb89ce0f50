/**
 * A network's leadership as its writes see it (docs/architecture.md, "Leadership, lease and fencing").
 *
 * Leadership is a PostgreSQL session advisory lock held on one dedicated connection (Pipeline.ts).
 * The lease: that connection runs with `idle_session_timeout`, and the leader pings it every 2 s, so
 * a leader that stops answering (paused by SIGSTOP, a stalled VM, a network cut) loses its session,
 * hence the lock, after `LEADER_LEASE_MS` at most; another node then takes over.
 *
 * Fencing is by the lock: a leader's writes go through other connections of its pool, which a pause
 * does not close. So the transaction that cuts a batch and the one that stores a signed transaction
 * first check, inside themselves, that the lock is still held by this leader's session (its backend
 * pid and start time, so a reused pid is not mistaken for it), and a broadcast is preceded by the same
 * check. A leader woken after losing its lock fails that check and stops (its pipeline ends; it tries
 * to lead again like any follower). The gap left between the check before a broadcast and the
 * broadcast itself is closed on chain: the contract refuses a root already anchored, and a nonce is
 * used once.
 */
import { Context, Effect, Schema } from "effect"
import { type SqlClient, SqlSchema } from "effect/sql"
import { rowDefects } from "../db/rows.ts"

/** How long a leader that stops answering keeps its lock (PostgreSQL's idle_session_timeout on the lock session). */
export const LEADER_LEASE_MS = 10_000

/** The advisory lock's key of a network's leadership (Pipeline.ts takes it; the console looks up who holds it). */
export const leaderLockKey = (chainType: string, networkId: string) => `anchord:${chainType}:${networkId}`

/** The lock session of the leadership a pipeline runs under (unset outside a pipeline: no check). */
export interface LeaderLease {
  readonly key: string
  readonly pid: number
  readonly backendStart: string
}

export const CurrentLeadership = Context.Reference<LeaderLease | undefined>("anchord/anchoring/CurrentLeadership", {
  defaultValue: () => undefined
})

/** Raised (as a defect: nothing can handle it but the pipeline, which stops) when the lock is gone. */
export class LeadershipLost extends Error {
  readonly _tag = "LeadershipLost"
  constructor(key: string) {
    super(`leadership lost: the lock ${key} is no longer held by this node's session`)
  }
}

const LeaseRequest = Schema.Struct({ key: Schema.String, pid: Schema.Number, backendStart: Schema.String })
const HeldRow = Schema.Struct({ held: Schema.Boolean })

/** Whether the lease's session (pid and start time: a reused pid is not it) still holds its advisory lock. */
const lockHeld = (sql: SqlClient.SqlClient) =>
  SqlSchema.findOne({
    Request: LeaseRequest,
    Result: HeldRow,
    execute: (lease) =>
      sql`
        SELECT EXISTS (
          SELECT 1 FROM pg_locks l JOIN pg_stat_activity s ON s.pid = l.pid
          WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.pid = ${lease.pid}
            AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
            AND s.backend_start = ${lease.backendStart}::timestamptz
            AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended(${lease.key}, 0)
        ) AS held`
  })

/**
 * In the caller's transaction (or right before a broadcast): dies with LeadershipLost unless this
 * pipeline's lock session still holds its advisory lock.
 */
export const fence = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    const lease = yield* CurrentLeadership
    if (lease === undefined) return
    const { held } = yield* rowDefects(lockHeld(sql)(lease))
    if (!held) return yield* Effect.die(new LeadershipLost(lease.key))
  })
