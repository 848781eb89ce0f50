/**
 * The sign-in throttle (`console_sign_in_counters`: in PostgreSQL so it holds across
 * restarts and nodes). Three counters see each attempt:
 *
 * - **(email, address)**: 5 failures, and that address may not try that email again until 15 minutes
 *   after its last failure. This is the budget that stops one address guessing one account, and it is
 *   the guesser's own: the email's owner, elsewhere, keeps theirs.
 * - **address**: 20 failures over any emails, and that address waits 15 minutes after its last
 *   failure (one address trying one password on many emails).
 * - **email**: no lock, a slow-down. The first 5 failures (from anywhere) cost nothing; after that,
 *   an attempt must come at least 5 s after the email's last failure, then 10 s, 20 s, ... capped at
 *   5 minutes (`delayAfter`): guessing one account from many addresses gets at most ~290 guesses a
 *   day, and nobody waits more than 5 minutes. Addresses from which this email signed in with its
 *   password in the last 30 days ("known") skip the slow-down: an attacker elsewhere cannot keep the
 *   owner out of their usual place (their attempts do not feed the email's count either).
 * - **(email, device)**, when the browser presents a device token (a cookie given at each password
 *   sign-in): a browser from which this email signed in with its password in the last 30 days skips the
 *   slow-down wherever it is, like a known address, until 5 failures of its own within 15 minutes. This
 *   is what keeps the owner's own browser at a new address out of reach of guesses it did not make: an
 *   attacker who sends one guess each time the slow-down ends holds back only browsers that never
 *   signed in (docs/console.md, "Sign-in throttling").
 *
 * A counter starts again from 0 once 15 minutes pass without a failure. Refused attempts are not
 * counted and their password is not checked.
 *
 * Atomic: `reserve` counts the attempt as a failure **before** the password is checked, in one
 * transaction that holds the three counters' rows (locked in key order), so concurrent guesses
 * queue on the rows and cannot exceed the limits; a success (`succeeded`) or an attempt that was never
 * checked (`release`) takes its reservation back.
 */
import { Clock, Context, Effect, Layer, Ref, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { rowDefects, type SqlEffect } from "../db/rows.ts"
import { SignInThrottled } from "./errors.ts"
import { tokenDigest } from "./tokens.ts"
import { normalizeEmail } from "./Users.ts"

/** A counter starts again after this long without a failure; a paused pair or address waits this long. */
export const WINDOW_MS = 15 * 60_000
export const MAX_FAILURES_PER_PAIR = 5
export const MAX_FAILURES_PER_ADDRESS = 20
/** Failures of an email (from anywhere) before its attempts slow down. */
export const FREE_FAILURES_PER_EMAIL = 5
export const FIRST_DELAY_MS = 5_000
export const MAX_DELAY_MS = 5 * 60_000
/** An address where the email signed in this recently skips the email's slow-down. */
export const KNOWN_FOR_MS = 30 * 86_400_000

/** The wait after an email's last failure, once it has `failures` (≥ FREE_FAILURES_PER_EMAIL). */
export const delayAfter = (failures: number) => Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** Math.min(20, failures - FREE_FAILURES_PER_EMAIL))

export interface ThrottleKeys {
  readonly email: string
  readonly address: string
  /** The browser's device token (a cookie), if it sent one. */
  readonly device?: string | undefined
}

// Addresses hold no space: what follows the first one in a pair's key is the email.
const keysOf = (k: ThrottleKeys) => {
  const email = normalizeEmail(k.email)
  return {
    email: `email:${email}`,
    address: `address:${k.address}`,
    pair: `pair:${k.address} ${email}`,
    // Only the token's digest is stored (a copy of the table names no browser).
    device: k.device === undefined ? undefined : `device:${tokenDigest(k.device).toString("base64url")} ${email}`
  }
}

const Counter = Schema.Struct({
  key: Schema.String,
  failures: Schema.Number,
  lastFailureAt: Schema.NullOr(Schema.Date),
  succeededAt: Schema.NullOr(Schema.Date)
})

export interface Reservation {
  /** Failures the pair has left after this one. */
  readonly attemptsLeft: number
  /** Whether the email's counter took it (a known address's attempts skip the email: it neither waits nor feeds the slow-down). */
  readonly emailCounted: boolean
  /** Whether the browser's device counter took it (it exists once the email signed in from that browser). */
  readonly deviceCounted: boolean
}

export class SignInThrottle extends Context.Service<SignInThrottle, {
  /**
   * Counts the attempt (as a failure until `succeeded` or `release` says otherwise), or refuses it
   * (SignInThrottled) without counting.
   */
  readonly reserve: (keys: ThrottleKeys) => SqlEffect<Reservation, SignInThrottled>
  /**
   * The password was right: the pair starts again (and its address is known), the browser's device
   * (`keys.device`, a token the caller gives it if it had none) is known for this email, the others take
   * the attempt back.
   */
  readonly succeeded: (keys: ThrottleKeys, reservation: Reservation) => SqlEffect<void>
  /** The attempt was never checked (the node was too busy): every counter takes it back. */
  readonly release: (keys: ThrottleKeys, reservation: Reservation) => SqlEffect<void>
}>()("anchord/console/SignInThrottle") {
  static readonly layer = Layer.effect(SignInThrottle, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    /** The three counters of an attempt, locked in key order (no deadlock between two attempts). */
    const lockCounters = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: Counter,
      execute: (keys) =>
        sql`
            SELECT key, failures, last_failure_at, succeeded_at FROM console_sign_in_counters
            WHERE key IN ${sql.in(keys)} ORDER BY key FOR UPDATE`
    })
    const ensureCounters = SqlSchema.void({
      Request: Schema.Array(Schema.String),
      execute: (keys) => sql`INSERT INTO console_sign_in_counters (key) VALUES ${sql.csv(keys.map((key) => sql`(${key})`))} ON CONFLICT (key) DO NOTHING`
    })
    /** Takes an attempt back from the counters (`reset`: that counter starts again, its address now known). */
    const takeBackCounters = SqlSchema.void({
      Request: Schema.Struct({ keys: Schema.Array(Schema.String), reset: Schema.optional(Schema.String), at: Schema.Date }),
      execute: ({ at, keys, reset }) =>
        reset === undefined
          ? sql`UPDATE console_sign_in_counters SET failures = GREATEST(failures - 1, 0) WHERE key IN ${sql.in(keys)}`
          : sql`
            UPDATE console_sign_in_counters SET
              failures = CASE WHEN key = ${reset} THEN 0 ELSE GREATEST(failures - 1, 0) END,
              succeeded_at = CASE WHEN key = ${reset} THEN ${at} ELSE succeeded_at END
            WHERE key IN ${sql.in(keys)}`
    })
    const countFailures = SqlSchema.void({
      Request: Schema.Struct({ counts: Schema.Array(Schema.Struct({ key: Schema.String, failures: Schema.Number })), at: Schema.Date }),
      execute: ({ at, counts }) =>
        sql`
            UPDATE console_sign_in_counters AS c SET failures = v.failures, last_failure_at = ${at}
            FROM (VALUES ${sql.csv(counts.map((c) => sql`(${c.key}, ${c.failures}::int)`))}) AS v (key, failures)
            WHERE c.key = v.key`
    })
    const deleteStale = SqlSchema.void({
      Request: Schema.Struct({ failedBefore: Schema.Date, succeededBefore: Schema.Date }),
      execute: ({ failedBefore, succeededBefore }) =>
        sql`
        DELETE FROM console_sign_in_counters
        WHERE COALESCE(last_failure_at, '-infinity') <= ${failedBefore}
          AND COALESCE(succeeded_at, '-infinity') <= ${succeededBefore}`
    })
    /** A browser the email signed in from: known from `at`, its failures forgotten. */
    const rememberDevice = SqlSchema.void({
      Request: Schema.Struct({ key: Schema.String, at: Schema.Date }),
      execute: ({ at, key }) =>
        sql`
            INSERT INTO console_sign_in_counters (key, failures, succeeded_at) VALUES (${key}, 0, ${at})
            ON CONFLICT (key) DO UPDATE SET failures = 0, succeeded_at = EXCLUDED.succeeded_at`
    })
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    const takeBack = (k: ThrottleKeys, reservation: Reservation, success: boolean) =>
      Effect.gen(function*() {
        const keys = keysOf(k)
        const at = yield* now
        const counted = [keys.pair, keys.address, ...(reservation.emailCounted ? [keys.email] : []),
          ...(reservation.deviceCounted && !success && keys.device !== undefined ? [keys.device] : [])]
        yield* rowDefects(takeBackCounters({ keys: counted, reset: success ? keys.pair : undefined, at }))
        if (success && keys.device !== undefined) yield* rowDefects(rememberDevice({ key: keys.device, at }))
      })

    /**
     * Counters with nothing left to say go, at most once a minute per node (after an attempt): the table
     * holds what was tried in the last 15 minutes and the known addresses of the last 30 days.
     */
    const lastSweep = yield* Ref.make(0)
    const sweep = Effect.gen(function*() {
      const at = yield* now
      const due = yield* Ref.modify(lastSweep, (last) => at.getTime() - last >= 60_000 ? [true, at.getTime()] : [false, last])
      if (!due) return
      yield* rowDefects(deleteStale({
        failedBefore: new Date(at.getTime() - WINDOW_MS),
        succeededBefore: new Date(at.getTime() - KNOWN_FOR_MS)
      }))
    })

    return SignInThrottle.of({
      reserve: Effect.fn("SignInThrottle.reserve")((k) =>
        Effect.ensuring(sql.withTransaction(Effect.gen(function*() {
          const keys = keysOf(k)
          const ordered = [keys.pair, keys.address, keys.email].sort()
          // The rows exist, then are locked in one order (no deadlock between two attempts). A device's
          // row is made by a success only: a token nobody signed in with has none, and makes none.
          yield* rowDefects(ensureCounters(ordered))
          const rows = yield* rowDefects(lockCounters(keys.device === undefined ? ordered : [...ordered, keys.device]))
          // The time once the rows are held: attempts that waited on them see each other's failures in order.
          const at = yield* now
          const row = (key: string) => rows.find((r) => r.key === key)!
          const recent = (r: typeof Counter.Type) => r.lastFailureAt !== null && at.getTime() - r.lastFailureAt.getTime() < WINDOW_MS ? r.failures : 0
          const waitOf = (r: typeof Counter.Type, ms: number) => Math.max(1, Math.ceil((r.lastFailureAt!.getTime() + ms - at.getTime()) / 1000))
          const pair = row(keys.pair), address = row(keys.address), email = row(keys.email)
          const [pairFailures, addressFailures, emailFailures] = [recent(pair), recent(address), recent(email)]
          if (pairFailures >= MAX_FAILURES_PER_PAIR) return yield* new SignInThrottled({ scope: "pair", retryAfterSeconds: waitOf(pair, WINDOW_MS) })
          if (addressFailures >= MAX_FAILURES_PER_ADDRESS) {
            return yield* new SignInThrottled({ scope: "address", retryAfterSeconds: waitOf(address, WINDOW_MS) })
          }
          const device = keys.device === undefined ? undefined : rows.find((r) => r.key === keys.device)
          const knownSince = (r: typeof Counter.Type) => r.succeededAt !== null && at.getTime() - r.succeededAt.getTime() < KNOWN_FOR_MS
          // A known browser stops being one after a pair's worth of failures of its own (a stolen cookie
          // is worth a few guesses, not an exemption).
          const known = knownSince(pair) || (device !== undefined && knownSince(device) && recent(device) < MAX_FAILURES_PER_PAIR)
          if (!known && emailFailures >= FREE_FAILURES_PER_EMAIL && at.getTime() < email.lastFailureAt!.getTime() + delayAfter(emailFailures)) {
            return yield* new SignInThrottled({ scope: "email", retryAfterSeconds: waitOf(email, delayAfter(emailFailures)) })
          }
          // A known address's attempt leaves the email's counter alone.
          const counts = [
            { key: keys.pair, failures: pairFailures + 1 },
            { key: keys.address, failures: addressFailures + 1 },
            ...(known ? [] : [{ key: keys.email, failures: emailFailures + 1 }]),
            ...(device === undefined ? [] : [{ key: device.key, failures: recent(device) + 1 }])
          ]
          yield* rowDefects(countFailures({ counts, at }))
          return { attemptsLeft: MAX_FAILURES_PER_PAIR - pairFailures - 1, emailCounted: !known, deviceCounted: device !== undefined }
        })), Effect.ignore(sweep))
      ),

      succeeded: Effect.fn("SignInThrottle.succeeded")((k, r) => takeBack(k, r, true)),
      release: Effect.fn("SignInThrottle.release")((k, r) => takeBack(k, r, false))
    })
  }))
}
