/**
 * Durable ingest with group commit. Every accepted record is committed to PostgreSQL before its
 * 202 is sent; concurrent requests share one transaction (one multi-row INSERT), which is how the
 * node reaches thousands of durably committed records per second on two cores.
 *
 * The monthly quota is enforced in the same transaction, against a row lock on the account's
 * usage row, so it holds across several nodes sharing the database.
 */
import { Deferred, Context, Effect, Layer, Queue } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config.ts"
import { monthStart } from "../auth/plans.ts"

export interface NewRecord {
  readonly id: string
  readonly accountId: string
  readonly environment: "test" | "live"
  readonly hash: string
  readonly chainType: "evm" | "fabric" | "hybrid"
  readonly networkId: string
  readonly packageMode: "SEPARATED" | "IN_PLACE" | "MANAGED"
  readonly source: "data" | "encrypted" | "hash"
  readonly dataJcs: string | null
  readonly ciphertext: Uint8Array | null
  readonly nonce: Uint8Array | null
  readonly authTag: Uint8Array | null
  /** JSON text of the metadata object */
  readonly metadata: string
  readonly webhookUrl: string | null
  readonly createdAt: Date
  readonly updatedAt: Date
}

export interface Submission {
  readonly accountId: string
  readonly environment: "test" | "live"
  /** null = unlimited */
  readonly monthlyQuota: number | null
  readonly rows: ReadonlyArray<NewRecord>
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

interface Pending {
  readonly submission: Submission
  readonly done: Deferred.Deferred<SubmitOutcome, unknown>
}

export class IngestWriter extends Context.Service<IngestWriter, {
  /** Resolves once the records are committed (or refused by the quota). Database failures are defects. */
  readonly submit: (submission: Submission) => Effect.Effect<SubmitOutcome>
}>()("anchord/records/IngestWriter") {
  static readonly layer = Layer.effect(
    IngestWriter,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      const queue = yield* Queue.unbounded<Pending>()

      /** One transaction for a group of submissions; returns each one's outcome. */
      const commitGroup = (group: ReadonlyArray<Pending>) =>
        sql.withTransaction(Effect.gen(function*() {
          const month = monthStart(new Date())
          const outcomes = new Map<Pending, SubmitOutcome>()
          const accepted: Array<NewRecord> = []
          const byAccount = new Map<string, Array<Pending>>()
          for (const p of group) {
            const list = byAccount.get(p.submission.accountId)
            if (list) list.push(p)
            else byAccount.set(p.submission.accountId, [p])
          }
          // Lock usage rows in a fixed order so concurrent nodes cannot deadlock.
          for (const accountId of [...byAccount.keys()].sort()) {
            const pendings = byAccount.get(accountId)!
            const rows = yield* sql<{ used: string | number | bigint }>`
              INSERT INTO usage_monthly (account_id, month, used) VALUES (${accountId}, ${month}, 0)
              ON CONFLICT (account_id, month) DO UPDATE SET used = usage_monthly.used
              RETURNING used`
            let used = Number(rows[0].used)
            const start = used
            for (const p of pendings) {
              const n = p.submission.rows.length
              const quota = p.submission.monthlyQuota
              if (quota !== null && used + n > quota) {
                outcomes.set(p, { _tag: "QuotaExceeded", used })
                continue
              }
              used += n
              outcomes.set(p, { _tag: "Committed", usedAfter: used })
              for (const row of p.submission.rows) accepted.push(row)
            }
            if (used !== start) {
              yield* sql`UPDATE usage_monthly SET used = ${used} WHERE account_id = ${accountId} AND month = ${month}`
            }
          }
          if (accepted.length > 0) yield* sql`INSERT INTO records ${sql.insert(accepted as unknown as [Record<string, unknown>, ...Array<Record<string, unknown>>])}`
          return outcomes
        }))

      /** A submission carrying an Idempotency-Key commits alone, with its key, or not at all. */
      const commitIdempotent = (p: Pending) =>
        sql.withTransaction(Effect.gen(function*() {
          const idem = p.submission.idempotency!
          const claimed = yield* sql`
            INSERT INTO idempotency_keys (account_id, environment, key, request_hash, status, body)
            VALUES (${p.submission.accountId}, ${p.submission.environment}, ${idem.key}, ${idem.requestHash},
                    ${idem.status}, ${idem.body})
            ON CONFLICT DO NOTHING RETURNING 1 AS claimed`
          if (claimed.length === 0) return { _tag: "IdempotencyKeyTaken" } as SubmitOutcome
          const outcome = (yield* commitGroup([p])).get(p)!
          // A refused submission must not keep the key: roll the claim back with it.
          if (outcome._tag !== "Committed") return yield* Effect.fail(outcome)
          return outcome
        })).pipe(Effect.catch((outcome) =>
          "_tag" in outcome && outcome._tag === "QuotaExceeded" ? Effect.succeed(outcome as SubmitOutcome) : Effect.fail(outcome)
        ))

      const worker = Effect.gen(function*() {
        const batch = yield* Queue.takeBetween(queue, 1, config.ingestMaxBatch)
        const plain: Array<Pending> = []
        const idempotent: Array<Pending> = []
        for (const p of batch) (p.submission.idempotency ? idempotent : plain).push(p)
        if (plain.length > 0) {
          yield* commitGroup(plain).pipe(
            Effect.flatMap((outcomes) =>
              Effect.forEach(plain, (p) => Deferred.succeed(p.done, outcomes.get(p)!), { discard: true })),
            Effect.catchCause((cause) => Effect.forEach(plain, (p) => Deferred.failCause(p.done, cause), { discard: true }))
          )
        }
        yield* Effect.forEach(idempotent, (p) =>
          commitIdempotent(p).pipe(
            Effect.flatMap((outcome) => Deferred.succeed(p.done, outcome)),
            Effect.catchCause((cause) => Deferred.failCause(p.done, cause))
          ), { discard: true, concurrency: "unbounded" })
      })

      // Two writers: while one transaction commits, the next group is already being written.
      yield* Effect.forkScoped(Effect.forever(worker))
      yield* Effect.forkScoped(Effect.forever(worker))

      return IngestWriter.of({
        submit: (submission) =>
          Effect.gen(function*() {
            const done = yield* Deferred.make<SubmitOutcome, unknown>()
            yield* Queue.offer(queue, { submission, done })
            return yield* Effect.orDie(Deferred.await(done))
          })
      })
    })
  )
}
