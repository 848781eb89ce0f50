/**
 * Console sessions (`console_sessions`): server-side, keyed by the SHA-256 of a random
 * token that only the browser's cookie holds. A session ends when it has not been used for the idle
 * time, when it reaches its absolute length, at sign-out, or when its user signs out everywhere.
 *
 * Time is the Clock's (passed to SQL, never PostgreSQL's now()), so expiry is tested on a clock the
 * test moves. `last_seen_at` is written at most once a minute per session (idle expiry is in minutes).
 */
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { digestsEqual } from "../auth/apiKeys.ts"
import { rowDefects, type SqlEffect } from "../db/rows.ts"
import { ConsoleConfig } from "./config.ts"
import { NotSignedIn, SessionExpired } from "./errors.ts"
import { isToken, newToken, tokenDigest } from "./tokens.ts"
import { type ConsoleUserInfo, UserRow, withoutPassword } from "./Users.ts"

const TOUCH_EVERY_MS = 60_000

export interface Session {
  readonly user: ConsoleUserInfo
  readonly createdAt: Date
  /** When it ends regardless of use. */
  readonly expiresAt: Date
  /** When it ends unless used before (never after `expiresAt`). */
  readonly idleExpiresAt: Date
  /** The member's account is suspended (its console is read-only: src/console/middleware.ts). */
  readonly accountSuspended: boolean
}

const SessionRow = Schema.Struct({
  ...UserRow.fields,
  digest: Schema.Uint8Array,
  sessionCreatedAt: Schema.Date,
  lastSeenAt: Schema.Date,
  expiresAt: Schema.Date,
  accountStatus: Schema.NullOr(Schema.String)
})

export class ConsoleSessions extends Context.Service<ConsoleSessions, {
  /** A new session for the user: its token (for the cookie, shown nowhere else) and its facts. */
  readonly create: (user: ConsoleUserInfo) => SqlEffect<{ readonly token: string; readonly session: Session }>
  /** The live session of a cookie's token (its use noted), or why there is none; an expired one is removed. */
  readonly resolve: (token: string) => SqlEffect<Session, NotSignedIn | SessionExpired>
  /** Ends this session (sign-out). */
  readonly end: (token: string) => SqlEffect<void>
  /** Ends every session of the user (sign-out everywhere); how many there were. */
  readonly endAll: (userId: string) => SqlEffect<number>
}>()("anchord/console/ConsoleSessions") {
  static readonly layer = Layer.effect(ConsoleSessions, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* ConsoleConfig
    const findSession = SqlSchema.findOneOption({
      Request: Schema.Uint8Array,
      Result: SessionRow,
      execute: (digest) =>
        sql`
          SELECT s.digest, s.created_at AS session_created_at, s.last_seen_at, s.expires_at,
                 u.id, u.email, u.password_hash, u.operator, u.account_id, u.role, u.created_at, a.status AS account_status
          FROM console_sessions s JOIN console_users u ON u.id = s.user_id LEFT JOIN accounts a ON a.id = u.account_id
          WHERE s.digest = ${digest}`
    })
    const isSuspended = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ suspended: Schema.Boolean }),
      execute: (accountId) => sql`SELECT EXISTS (SELECT 1 FROM accounts WHERE id = ${accountId} AND status = 'SUSPENDED') AS suspended`
    })
    const deleteAll = SqlSchema.findAll({
      Request: Schema.String,
      Result: Schema.Struct({ userId: Schema.String }),
      execute: (userId) => sql`DELETE FROM console_sessions WHERE user_id = ${userId} RETURNING user_id`
    })
    // Sessions that ended unseen are removed as new ones begin (the table stays small).
    const deleteEnded = SqlSchema.void({
      Request: Schema.Struct({ at: Schema.Date, idleSince: Schema.Date }),
      execute: ({ at, idleSince }) => sql`DELETE FROM console_sessions WHERE expires_at <= ${at} OR last_seen_at <= ${idleSince}`
    })
    const insertSession = SqlSchema.void({
      Request: Schema.Struct({ digest: Schema.Uint8Array, userId: Schema.String, at: Schema.Date, expiresAt: Schema.Date }),
      execute: ({ at, digest, expiresAt, userId }) =>
        sql`
          INSERT INTO console_sessions (digest, user_id, created_at, last_seen_at, expires_at)
          VALUES (${digest}, ${userId}, ${at}, ${at}, ${expiresAt})`
    })
    const deleteSession = SqlSchema.void({
      Request: Schema.Uint8Array,
      execute: (digest) => sql`DELETE FROM console_sessions WHERE digest = ${digest}`
    })
    const touchSession = SqlSchema.void({
      Request: Schema.Struct({ digest: Schema.Uint8Array, at: Schema.Date }),
      execute: ({ at, digest }) => sql`UPDATE console_sessions SET last_seen_at = ${at} WHERE digest = ${digest}`
    })
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
    const idleEnd = (lastSeen: Date, expires: Date) => new Date(Math.min(expires.getTime(), lastSeen.getTime() + config.idleMillis))

    return ConsoleSessions.of({
      create: Effect.fn("ConsoleSessions.create")(function*(user) {
        const at = yield* now
        const token = newToken()
        const expiresAt = new Date(at.getTime() + config.absoluteMillis)
        yield* rowDefects(deleteEnded({ at, idleSince: new Date(at.getTime() - config.idleMillis) }))
        yield* rowDefects(insertSession({ digest: tokenDigest(token), userId: user.id, at, expiresAt }))
        const accountSuspended = user.accountId === null ? false : (yield* rowDefects(isSuspended(user.accountId))).suspended
        return { token, session: { user, createdAt: at, expiresAt, idleExpiresAt: idleEnd(at, expiresAt), accountSuspended } }
      }),

      resolve: Effect.fn("ConsoleSessions.resolve")(function*(token) {
        if (!isToken(token)) return yield* new NotSignedIn()
        const digest = tokenDigest(token)
        const row = Option.getOrUndefined(yield* rowDefects(findSession(digest)))
        // The index finds the row by digest; the comparison that decides is constant-time.
        if (row === undefined || !digestsEqual(row.digest, digest)) return yield* new NotSignedIn()
        const at = yield* now
        const expired = at >= row.expiresAt ? "absolute" : at.getTime() - row.lastSeenAt.getTime() >= config.idleMillis ? "idle" : undefined
        if (expired !== undefined) {
          yield* rowDefects(deleteSession(digest))
          return yield* new SessionExpired({ reason: expired })
        }
        let lastSeen = row.lastSeenAt
        if (at.getTime() - lastSeen.getTime() >= TOUCH_EVERY_MS) {
          yield* rowDefects(touchSession({ digest, at }))
          lastSeen = at
        }
        return {
          user: withoutPassword(row),
          createdAt: row.sessionCreatedAt,
          expiresAt: row.expiresAt,
          idleExpiresAt: idleEnd(lastSeen, row.expiresAt),
          accountSuspended: row.accountStatus === "SUSPENDED"
        }
      }),

      end: Effect.fn("ConsoleSessions.end")((token) => isToken(token) ? rowDefects(deleteSession(tokenDigest(token))) : Effect.void),

      endAll: Effect.fn("ConsoleSessions.endAll")((userId) => Effect.map(rowDefects(deleteAll(userId)), (rows) => rows.length))
    })
  }))
}
