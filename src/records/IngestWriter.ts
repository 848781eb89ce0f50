/**
 * Durable ingest with group commit. Every accepted record is committed to PostgreSQL before its
 * 202 is sent; concurrent requests share one transaction (one multi-row INSERT), which is how the
 * node reaches thousands of durably committed records per second on two cores.
 *
 * The monthly quota is enforced in the same transaction, against a row lock on the account's
 * usage row, so it holds across several nodes sharing the database.
 */
import { Cause, Clock, Context, Effect, Layer, Option, Queue, Schema } from "effect"
import { SqlClient, type SqlError, SqlSchema } from "effect/sql"
import { AppConfig } from "../config.ts"
import { isConnectionFailure } from "../db/errors.ts"
import { DatabaseGuard, DatabaseUnavailable } from "../db/guard.ts"
import { rowDefects } from "../db/rows.ts"
import { currentMonth } from "../auth/plans.ts"
import type { Environment } from "../api/recordSchemas.ts"
import { type Companion, gather } from "./companions.ts"
import { insertRecords, type NewRecord } from "./insertRecords.ts"
import { DomainErrorClass } from "../api/domainError.ts"

export interface Submission {
  readonly accountId: string
  readonly environment: Environment
  /** null = unlimited */
  readonly monthlyQuota: number | null
  readonly rows: ReadonlyArray<NewRecord>
  /**
   * Rows of another capability's table that exist only with these records, committed in the same
   * transaction (a time-stamp token and its record: src/tsa/). Not with an Idempotency-Key.
   */
  readonly companion?: Companion | undefined
  /** Stored with the records, in the same transaction (Idempotency-Key). */
  readonly idempotency?: {
    readonly key: string
    readonly requestHash: string
    readonly status: number
    readonly body: string
  } | undefined
}

export type SubmitOutcome =
  | { readonly _tag: "Committed"; readonly usedAfter: number }
  | { readonly _tag: "QuotaExceeded"; readonly used: number }
  | { readonly _tag: "IdempotencyKeyTaken" }

/** The companions of the submissions committed, one insert per writer. */
const insertCompanions = (sql: SqlClient.SqlClient, committed: ReadonlyArray<Submission>) =>
  Effect.forEach(gather(committed.map((s) => s.companion)), (insert) => insert(sql), { discard: true })

interface Pending {
  readonly submission: Submission
  /** Resumes the submitting request (a plain callback: no Deferred per record on the hot path). */
  readonly done: (outcome: Effect.Effect<SubmitOutcome, SubmitError>) => void
}

/**
 * More records accepted and waiting for their commit than INGEST_MAX_PENDING: the node sheds load (503,
 * Retry-After) instead of queueing without bound.
 */
export class IngestOverloaded
  extends DomainErrorClass<IngestOverloaded>()("IngestOverloaded", { pending: Schema.Number }, "SERVICE_UNAVAILABLE",
    () => "The node is at capacity; retry shortly")
{
  get retryAfterSeconds() {
    return 1
  }
}

export type SubmitError = SqlError.SqlError | DatabaseUnavailable | IngestOverloaded

export class IngestWriter extends Context.Service<IngestWriter, {
  /**
   * Resolves once the records are committed (or refused by the quota), or with the database's failure.
   * The wait is bounded: past REQUEST_DEADLINE_MS it fails with DatabaseUnavailable (the commit may still
   * happen later: a 503 does not say the records were not stored, which is what Idempotency-Key is for).
   * While the database is known to be down, and beyond INGEST_MAX_PENDING records waiting, it refuses at once.
   */
  readonly submit: (submission: Submission) => Effect.Effect<SubmitOutcome, SubmitError>
}>()("anchord/records/IngestWriter") {
  static readonly layer = Layer.effect(
    IngestWriter,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      // The month a commit counts against, on the node's Clock (read without an effect step).
      const clock = yield* Clock.Clock
      const queue = yield* Queue.unbounded<Pending>()
      const guard = yield* DatabaseGuard

      /** The account's usage row for the month, made if missing and locked for the transaction. */
      const lockUsage = SqlSchema.findOne({
        Request: Schema.Struct({ accountId: Schema.String, month: Schema.String }),
        Result: Schema.Struct({ used: Schema.NumberFromString }),
        execute: ({ accountId, month }) =>
          sql`
              INSERT INTO usage_monthly (account_id, month, used) VALUES (${accountId}, ${month}, 0)
              ON CONFLICT (account_id, month) DO UPDATE SET used = usage_monthly.used
              RETURNING used::text AS used`
      })
      /** An Idempotency-Key claimed with its answer; none when the key is taken. */
      const claimKey = SqlSchema.findOneOption({
        Request: Schema.Struct({
          accountId: Schema.String,
          environment: Schema.String,
          key: Schema.String,
          requestHash: Schema.String,
          status: Schema.Number,
          body: Schema.String,
          createdAt: Schema.Date
        }),
        Result: Schema.Struct({ claimed: Schema.Number }),
        execute: (k) =>
          sql`
            INSERT INTO idempotency_keys (account_id, environment, key, request_hash, status, body, created_at)
            VALUES (${k.accountId}, ${k.environment}, ${k.key}, ${k.requestHash}, ${k.status}, ${k.body}, ${k.createdAt})
            ON CONFLICT DO NOTHING RETURNING 1 AS claimed`
      })

      /**
       * One round trip for a group of submissions from accounts without a monthly quota (ENTERPRISE):
       * a single statement is its own transaction.
       */
      const commitUnlimited = (group: ReadonlyArray<Pending>) => {
        const companions = gather(group.map((p) => p.submission.companion))
        // One kind of companion rides in the records' statement: one statement, no transaction.
        const within = companions.length === 1 ? companions[0]!(sql) : undefined
        const commit = Effect.gen(function*() {
          const rows = group.flatMap((p) => p.submission.rows)
          const used = new Map(
            (yield* insertRecords(sql, rows, currentMonth(clock.currentTimeMillisUnsafe()).month, within)).map((r) => [r.accountId, Number(r.used)])
          )
          if (within === undefined) yield* insertCompanions(sql, group.map((p) => p.submission))
          return new Map(group.map((p) => [p, { _tag: "Committed", usedAfter: used.get(p.submission.accountId) ?? 0 } as SubmitOutcome]))
        })
        // With companions in statements of their own it is two statements: one transaction.
        return companions.length > 0 && within === undefined ? sql.withTransaction(commit) : commit
      }

      /**
       * Accounts with a quota: lock their usage rows (in a fixed order, so concurrent nodes cannot
       * deadlock), accept submissions while they fit, insert, all in one transaction.
       */
      const commitGroup = (group: ReadonlyArray<Pending>) =>
        sql.withTransaction(Effect.gen(function*() {
          const month = currentMonth(clock.currentTimeMillisUnsafe()).month
          const outcomes = new Map<Pending, SubmitOutcome>()
          const accepted: Array<NewRecord> = []
          const committed: Array<Submission> = []
          const byAccount = new Map<string, Array<Pending>>()
          for (const p of group) {
            const list = byAccount.get(p.submission.accountId)
            if (list) list.push(p)
            else byAccount.set(p.submission.accountId, [p])
          }
          for (const accountId of [...byAccount.keys()].sort()) {
            let { used } = yield* rowDefects(lockUsage({ accountId, month }))
            for (const p of byAccount.get(accountId)!) {
              const n = p.submission.rows.length
              const quota = p.submission.monthlyQuota
              if (quota !== null && used + n > quota) {
                outcomes.set(p, { _tag: "QuotaExceeded", used })
                continue
              }
              used += n
              outcomes.set(p, { _tag: "Committed", usedAfter: used })
              committed.push(p.submission)
              for (const row of p.submission.rows) accepted.push(row)
            }
          }
          if (accepted.length > 0) yield* insertRecords(sql, accepted, month)
          yield* insertCompanions(sql, committed)
          return outcomes
        }))

      /**
       * A submission carrying an Idempotency-Key commits alone, with its key, or not at all. The answer is
       * stored at its records' createdAt (the node's Clock, as the 24 h replay window reads it): a hard
       * delete finds the answers holding a record by that time (RecordStore.remove).
       */
      const commitIdempotent = (p: Pending) =>
        sql.withTransaction(Effect.gen(function*() {
          const idem = p.submission.idempotency!
          const claimed = yield* rowDefects(claimKey({
            accountId: p.submission.accountId,
            environment: p.submission.environment,
            key: idem.key,
            requestHash: idem.requestHash,
            status: idem.status,
            body: idem.body,
            createdAt: p.submission.rows[0]!.createdAt
          }))
          if (Option.isNone(claimed)) return { _tag: "IdempotencyKeyTaken" } as SubmitOutcome
          const outcome = (yield* commitGroup([p])).get(p)!
          // A refused submission must not keep the key: roll the claim back with it.
          if (outcome._tag !== "Committed") return yield* Effect.fail(outcome)
          return outcome
        })).pipe(
          Effect.catch((outcome) => "_tag" in outcome && outcome._tag === "QuotaExceeded" ? Effect.succeed(outcome as SubmitOutcome) : Effect.fail(outcome))
        )

      /**
       * Commits a group and resumes every waiting request with its outcome, also when the commit fails
       * or is interrupted. A group the database refuses for any reason but the connection (a row it
       * cannot store) is committed again one submission at a time, so that the row fails only its own
       * request, not the others that happened to share its statement.
       */
      const settle = (
        group: ReadonlyArray<Pending>,
        commit: (group: ReadonlyArray<Pending>) => Effect.Effect<Map<Pending, SubmitOutcome>, unknown>
      ): Effect.Effect<void> =>
        group.length === 0 ? Effect.void : commit(group).pipe(
          Effect.onInterrupt(() =>
            Effect.sync(() => {
              for (const p of group) p.done(Effect.interrupt)
            })
          ),
          Effect.matchCauseEffect({
            onSuccess: (outcomes) =>
              Effect.sync(() => {
                for (const p of group) p.done(Effect.succeed(outcomes.get(p)!))
              }),
            onFailure: (cause) => {
              const error = cause.reasons.find(Cause.isFailReason)?.error
              if (group.length > 1 && error !== undefined && !isConnectionFailure(error)) {
                return Effect.andThen(
                  Effect.logWarning("group commit refused; committing its submissions one by one", { rows: group.length, error: String(error) }),
                  Effect.forEach(group, (p) => settle([p], commit), { discard: true })
                )
              }
              return Effect.sync(() => {
                // The database's failure, typed, to every request of the group (503 when it is unreachable).
                const failed = Effect.failCause(cause as Cause.Cause<SqlError.SqlError>)
                for (const p of group) p.done(failed)
              })
            }
          })
        )

      const worker = Effect.gen(function*() {
        const batch = yield* Queue.takeBetween(queue, 1, config.ingestMaxBatch)
        const unlimited: Array<Pending> = []
        const limited: Array<Pending> = []
        const idempotent: Array<Pending> = []
        for (const p of batch) {
          if (p.submission.idempotency) idempotent.push(p)
          else if (p.submission.monthlyQuota === null) unlimited.push(p)
          else limited.push(p)
        }
        // Idempotent submissions commit alone, each in its own transaction: they do not hold up the group.
        for (const p of idempotent) {
          yield* Effect.forkIn(settle([p], () => Effect.map(commitIdempotent(p), (o) => new Map([[p, o]]))), scope)
        }
        yield* Effect.all([settle(unlimited, commitUnlimited), settle(limited, commitGroup)], {
          concurrency: "unbounded",
          discard: true
        })
      })

      // INGEST_WRITERS group-commit statements in flight at once. One (the default) makes the largest
      // groups: on a local database it measured 10-15% less CPU per record than four, with the same or
      // better throughput; a database far away (long round trips) may want more.
      if (!(config.ingestWriters >= 1)) return yield* Effect.die(new Error("INGEST_WRITERS must be at least 1"))
      const scope = yield* Effect.scope
      for (let i = 0; i < config.ingestWriters; i++) yield* Effect.forkScoped(Effect.forever(worker))

      // Bounded waits and load shedding, without a timer per request: the waiting submissions in
      // arrival order, checked by one sweep every 100 ms. A submission answered here (deadline passed) is
      // still committed if its group goes through; its late outcome is dropped.
      let pending = 0
      type Waiting = { readonly deadline: number; readonly resume: (e: Effect.Effect<SubmitOutcome, SubmitError>) => boolean }
      // A queue as an array and a head index (shift() would move every entry each time).
      let waiting: Array<Waiting | undefined> = []
      let head = 0
      const timedOut = Effect.suspend(() => Effect.fail(guard.timedOut()))
      yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep("100 millis"), Effect.suspend(() => {
        const now = clock.currentTimeMillisUnsafe()
        let expired = 0
        while (head < waiting.length && waiting[head]!.deadline <= now) {
          if (waiting[head]!.resume(timedOut)) expired++
          waiting[head++] = undefined
        }
        if (head > 4096 && head * 2 > waiting.length) {
          waiting = waiting.slice(head)
          head = 0
        }
        return expired > 0 ? guard.probeSoon : Effect.void
      }))))

      return IngestWriter.of({
        submit: (submission) => {
          if (!guard.isUp()) return guard.refuse
          const n = submission.rows.length
          if (pending + n > config.ingestMaxPending) return Effect.fail(new IngestOverloaded({ pending }))
          return Effect.callback<SubmitOutcome, SubmitError>((resume) => {
            let open = true
            pending += n
            const once = (outcome: Effect.Effect<SubmitOutcome, SubmitError>) => {
              if (!open) return false
              open = false
              pending -= n
              resume(outcome)
              return true
            }
            waiting.push({ deadline: clock.currentTimeMillisUnsafe() + config.requestDeadlineMillis, resume: once })
            Queue.offerUnsafe(queue, { submission, done: (outcome) => void once(outcome) })
          })
        }
      })
    })
  )
}
