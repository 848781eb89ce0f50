/**
 * The sign-in throttle: failed sign-ins are counted per email and per client address in fixed
 * 15-minute windows (`console_sign_in_failures`, in PostgreSQL so it holds across restarts and nodes).
 * Past 5 failures for an email, or 20 from an address, sign-in is refused without checking the password
 * until the window ends, with a message that says so and when to come back. A successful sign-in clears
 * its email's count (not its address's: one good password does not reopen guessing at others).
 *
 * Why these numbers: 5 per email per 15 minutes lets someone mistype a few times but caps guessing one
 * account at 480 passwords a day; 20 per address allows a shared office address a few people's typos
 * while stopping one address from trying one password on many emails.
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { decodeRows } from "../db/rows.ts"
import { SignInThrottled } from "./errors.ts"

export const WINDOW_MS = 15 * 60_000
export const MAX_FAILURES_PER_EMAIL = 5
export const MAX_FAILURES_PER_ADDRESS = 20

export interface ThrottleKeys {
  readonly email: string
  readonly address: string
}

const keysOf = (k: ThrottleKeys) => ({ email: `email:${k.email.trim().toLowerCase()}`, address: `address:${k.address}` })

const Counter = Schema.Struct({ key: Schema.String, windowStartsAt: Schema.Date, failures: Schema.Number })

export class SignInThrottle extends Context.Service<SignInThrottle, {
  /** Refuses (SignInThrottled) when the email or the address is past its limit in the current window. */
  readonly check: (keys: ThrottleKeys) => Effect.Effect<void, SignInThrottled | SqlError.SqlError>
  /** Counts a failure for both; the attempts left for the email. */
  readonly failed: (keys: ThrottleKeys) => Effect.Effect<number, SqlError.SqlError>
  /** Clears the email's count. */
  readonly succeeded: (keys: ThrottleKeys) => Effect.Effect<void, SqlError.SqlError>
}>()("anchord/console/SignInThrottle") {
  static readonly layer = Layer.effect(SignInThrottle, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const counters = decodeRows(Counter)
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    return SignInThrottle.of({
      check: Effect.fn("SignInThrottle.check")(function*(k) {
        const keys = keysOf(k)
        const at = yield* now
        const rows = yield* sql`
          SELECT key, window_starts_at, failures FROM console_sign_in_failures
          WHERE key IN (${keys.email}, ${keys.address}) AND window_starts_at > ${new Date(at.getTime() - WINDOW_MS)}`.pipe(
          Effect.flatMap(counters)
        )
        for (const row of rows) {
          const byEmail = row.key === keys.email
          if (row.failures >= (byEmail ? MAX_FAILURES_PER_EMAIL : MAX_FAILURES_PER_ADDRESS)) {
            const retryAfterSeconds = Math.ceil((row.windowStartsAt.getTime() + WINDOW_MS - at.getTime()) / 1000)
            return yield* new SignInThrottled({ scope: byEmail ? "email" : "address", retryAfterSeconds })
          }
        }
      }),

      failed: Effect.fn("SignInThrottle.failed")(function*(k) {
        const keys = keysOf(k)
        const at = yield* now
        const windowStart = new Date(at.getTime() - WINDOW_MS)
        const rows = yield* sql`
          INSERT INTO console_sign_in_failures AS f (key, window_starts_at, failures)
          VALUES (${keys.email}, ${at}, 1), (${keys.address}, ${at}, 1)
          ON CONFLICT (key) DO UPDATE SET
            failures = CASE WHEN f.window_starts_at <= ${windowStart} THEN 1 ELSE f.failures + 1 END,
            window_starts_at = CASE WHEN f.window_starts_at <= ${windowStart} THEN ${at} ELSE f.window_starts_at END
          RETURNING key, window_starts_at, failures`.pipe(Effect.flatMap(counters))
        const email = rows.find((r) => r.key === keys.email)
        return Math.max(0, MAX_FAILURES_PER_EMAIL - (email?.failures ?? 0))
      }),

      succeeded: Effect.fn("SignInThrottle.succeeded")((k) =>
        Effect.asVoid(sql`DELETE FROM console_sign_in_failures WHERE key = ${keysOf(k).email}`))
    })
  }))
}
