/**
 * What the console's overview and networks pages show that no other store answers: records per day and
 * per status of an account, each network's backlog (queued records, unconfirmed batches and how long
 * the oldest has waited), and the EVM signers' balances. Everything else they show comes from the
 * existing services (RecordStore, DeliveryLog, NetworkHealth, Accounts).
 */
import { Clock, Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { createPublicClient, http } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { Environment } from "../api/recordSchemas.ts"
import { rowDefects, type SqlEffect } from "../db/rows.ts"
import { EvmNetworks } from "../evm/config.ts"
import { inStatus, mayBeQueuedRange } from "../anchoring/recordState.ts"

export interface Backlog {
  readonly queued: number
  readonly unconfirmedBatches: number
  readonly oldestUnconfirmedSentAt: Date | null
  readonly lastConfirmedAt: Date | null
}

export interface SignerBalance {
  readonly address: string
  readonly balanceWei: string | null
  readonly error: string | null
}

/** The PostgreSQL session that holds a network's leadership lock: the node that leads it, as the database sees it. */
export interface LeaderSession {
  /** The leading node's address as PostgreSQL sees it (null over a Unix socket, or when not visible to this role). */
  readonly clientAddress: string | null
  /** When that session started: the leader has held the lock since then at the latest. */
  readonly since: Date
}

const BALANCE_CACHE_MS = 15_000
const BALANCE_TIMEOUT_MS = 3_000

const Daily = Schema.Struct({ day: Schema.String, count: Schema.Number })
const ByStatus = Schema.Struct({ status: Schema.String, count: Schema.Number })
const InFlight = Schema.Struct({ queued: Schema.Number, batching: Schema.Number })
const BacklogRow = Schema.Struct({
  queued: Schema.Number,
  unconfirmed: Schema.Number,
  oldestSentAt: Schema.NullOr(Schema.Date),
  lastConfirmedAt: Schema.NullOr(Schema.Date)
})

const LeaderRow = Schema.Struct({ clientAddr: Schema.NullOr(Schema.String), backendStart: Schema.Date })

/** The smallest record id created at or after `at` (ids start with their creation's Unix seconds, src/records/ids.ts). */
const firstIdAt = (at: Date) => Math.floor(at.getTime() / 1000).toString(16).padStart(8, "0") + "0".repeat(16)

export class ConsoleStats extends Context.Service<ConsoleStats, {
  /** Records created per UTC day since `from`, both environments (the quota counts both). */
  readonly daily: (accountId: string, from: Date) => SqlEffect<ReadonlyArray<{ readonly day: string; readonly count: number }>>
  /** Records of the environment by status; soft-deleted ones as DELETED. */
  readonly byStatus: (accountId: string, environment: Environment) => SqlEffect<Record<string, number>>
  readonly backlog: (networkId: string) => SqlEffect<Backlog>
  /** Who holds a network's leadership lock (src/anchoring/Leadership.ts); undefined when nobody does. */
  readonly leader: (lockKey: string) => SqlEffect<LeaderSession | undefined>
  /** The network's signer and its balance (EVM networks; cached 15 s; undefined for others). */
  readonly signer: (networkId: string) => Effect.Effect<SignerBalance | undefined>
}>()("anchord/console/ConsoleStats") {
  static readonly layer = Layer.effect(ConsoleStats, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { networks } = yield* EvmNetworks
    const AccountEnvironment = Schema.Struct({ accountId: Schema.String, environment: Environment })

    const findDaily = SqlSchema.findAll({
      Request: Schema.Struct({ accountId: Schema.String, from: Schema.Date }),
      Result: Daily,
      execute: ({ accountId, from }) =>
        sql`
          SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, count(*)::int AS count
          FROM records
          WHERE account_id = ${accountId} AND environment IN ('test', 'live') AND id >= ${firstIdAt(from)}
            AND created_at >= ${from}
          GROUP BY 1 ORDER BY 1`
    })
    const findByStatus = SqlSchema.findAll({
      Request: AccountEnvironment,
      Result: ByStatus,
      execute: ({ accountId, environment }) =>
        sql`
          SELECT CASE WHEN deleted_at IS NOT NULL THEN 'DELETED' ELSE status END AS status, count(*)::int AS count
          FROM records
          WHERE account_id = ${accountId} AND environment = ${environment} AND NOT hard_deleted
          GROUP BY 1`
    })
    // QUEUED: the queue's range first, behind a fence (OFFSET 0). Its bound is a parameter (estimated at a
    // third of the table), and with the filter's subplans costed per row the planner otherwise ANDed it
    // with the account's whole records_list range (11.5k buffers at 1M records, docs/benchmarks.md).
    const findInFlight = SqlSchema.findOne({
      Request: AccountEnvironment,
      Result: InFlight,
      execute: ({ accountId, environment }) => {
        const live = sql`r.account_id = ${accountId} AND r.environment = ${environment} AND r.deleted_at IS NULL`
        return sql`
          SELECT (SELECT count(*)::int FROM (SELECT * FROM records r WHERE ${mayBeQueuedRange(sql)} OFFSET 0) r
              WHERE ${live} AND ${inStatus(sql, "QUEUED")}) AS queued,
            (SELECT count(*)::int FROM records r WHERE ${live} AND ${inStatus(sql, "BATCHING")}) AS batching`
      }
    })
    const findBacklog = SqlSchema.findOne({
      Request: Schema.String,
      Result: BacklogRow,
      execute: (networkId) =>
        sql`
          SELECT
            (SELECT count(*)::int FROM records r WHERE r.network_id = ${networkId} AND ${inStatus(sql, "QUEUED")}) AS queued,
            (SELECT count(*)::int FROM anchor_batches WHERE network_id = ${networkId} AND state IN ('SENT', 'MINED')) AS unconfirmed,
            (SELECT min(sent_at) FROM anchor_batches WHERE network_id = ${networkId} AND state IN ('SENT', 'MINED')) AS oldest_sent_at,
            (SELECT anchored_at FROM anchor_batches WHERE network_id = ${networkId} AND state = 'CONFIRMED'
              ORDER BY id DESC LIMIT 1) AS last_confirmed_at`
    })
    // The same lock lookup as the leader's fence (Leadership.ts), read from any node.
    const findLeader = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: LeaderRow,
      execute: (lockKey) =>
        sql`
          SELECT host(s.client_addr) AS client_addr, s.backend_start
          FROM pg_locks l JOIN pg_stat_activity s ON s.pid = l.pid
          WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
            AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
            AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended(${lockKey}, 0)
          LIMIT 1`
    })

    // The signer's address is derived once; the key itself stays Redacted and is never shown.
    const signers = new Map(networks.map((n) => [n.networkId, {
      address: privateKeyToAccount(Redacted.value(n.privateKey)).address,
      client: createPublicClient({ transport: http(n.rpcUrl, { timeout: BALANCE_TIMEOUT_MS, retryCount: 0 }) })
    }]))
    const balances = new Map<string, { readonly at: number; readonly value: SignerBalance }>()

    return ConsoleStats.of({
      daily: Effect.fn("ConsoleStats.daily")((accountId, from) => rowDefects(findDaily({ accountId, from }))),

      // The stored status splits FAILED and DELETED from the rest; of the rest, the few still QUEUED or
      // BATCHING are counted from their candidates (src/anchoring/recordState.ts), and the others are ANCHORED.
      byStatus: Effect.fn("ConsoleStats.byStatus")(function*(accountId, environment) {
        const rows = yield* rowDefects(findByStatus({ accountId, environment }))
        const inFlight = yield* rowDefects(findInFlight({ accountId, environment }))
        const out: Record<string, number> = { QUEUED: 0, BATCHING: 0, ANCHORED: 0, FAILED: 0, DELETED: 0 }
        for (const r of rows) out[r.status] = r.count
        const { batching, queued } = inFlight
        out.ANCHORED = Math.max(0, out.QUEUED! - queued - batching)
        out.QUEUED = queued
        out.BATCHING = batching
        return out
      }),

      backlog: Effect.fn("ConsoleStats.backlog")((networkId) =>
        rowDefects(findBacklog(networkId)).pipe(
          Effect.map((row): Backlog => ({
            queued: row.queued,
            unconfirmedBatches: row.unconfirmed,
            oldestUnconfirmedSentAt: row.oldestSentAt,
            lastConfirmedAt: row.lastConfirmedAt
          }))
        )
      ),

      leader: Effect.fn("ConsoleStats.leader")((lockKey) =>
        rowDefects(findLeader(lockKey)).pipe(
          Effect.map(Option.match({ onNone: () => undefined, onSome: (row) => ({ clientAddress: row.clientAddr, since: row.backendStart }) }))
        )
      ),

      signer: Effect.fn("ConsoleStats.signer")(function*(networkId) {
        const signer = signers.get(networkId)
        if (signer === undefined) return undefined
        const now = yield* Clock.currentTimeMillis
        const cached = balances.get(networkId)
        if (cached !== undefined && now - cached.at < BALANCE_CACHE_MS) return cached.value
        const value = yield* Effect.tryPromise(() => signer.client.getBalance({ address: signer.address })).pipe(
          Effect.map((wei): SignerBalance => ({ address: signer.address, balanceWei: wei.toString(), error: null })),
          Effect.catch((e) =>
            Effect.succeed<SignerBalance>({
              address: signer.address,
              balanceWei: null,
              // The message names the endpoint's failure, never its URL (it may carry a provider key).
              error: `the RPC endpoint did not answer (${String((e.cause as { name?: string } | undefined)?.name ?? "error")})`
            })
          )
        )
        balances.set(networkId, { at: now, value })
        return value
      })
    })
  }))
}
