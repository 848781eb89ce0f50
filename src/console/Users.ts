/**
 * Console users (`console_users`): operators, who see and manage every account, and
 * account members with role `admin` (may change things) or `viewer` (reads; sees no secret). A user
 * belongs to one account; emails are unique once normalized (`normalizeEmail`: stored normalized and
 * compared as stored, SQL applies no case rule of its own). Passwords are scrypt hashes (./passwords.ts),
 * never returned by the views.
 */
import * as Crypto from "node:crypto"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { rowDefects, type SqlEffect } from "../db/rows.ts"
import { EmailTaken } from "./errors.ts"

export const Role = Schema.Literals(["admin", "viewer"])
export type Role = typeof Role.Type

export const UserRow = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  passwordHash: Schema.NullOr(Schema.String),
  operator: Schema.Boolean,
  accountId: Schema.NullOr(Schema.String),
  role: Schema.NullOr(Role),
  createdAt: Schema.Date
})
export type UserRow = typeof UserRow.Type

/** A user without the password hash: what sessions carry and views show. */
export type ConsoleUserInfo = Omit<UserRow, "passwordHash">

export const withoutPassword = ({ passwordHash: _, ...user }: UserRow): ConsoleUserInfo => user

export type NewUser =
  | { readonly email: string; readonly passwordHash: string | null; readonly operator: true }
  | { readonly email: string; readonly passwordHash: string | null; readonly operator: false; readonly accountId: string; readonly role: Role }

/**
 * The one spelling of an email: trimmed, Unicode NFKC, lower-cased once (JavaScript's full Unicode
 * mapping), NFKC again (lower-casing can leave a composable sequence). Every path goes through it:
 * sign-in, the throttle's keys, invitations, their acceptance, the operator's CLI, the users table
 * (older rows rewritten to it by a migration). SQL compares the stored form with `=`: PostgreSQL's lower()
 * follows other rules (it maps `İ` to `i`, JavaScript to `i̇`), and two rules would let two spellings
 * reach one user past a throttle keyed by the other.
 */
export const normalizeEmail = (email: string) => email.trim().normalize("NFKC").toLowerCase().normalize("NFKC")

export class ConsoleUsers extends Context.Service<ConsoleUsers, {
  readonly byEmail: (email: string) => SqlEffect<UserRow | undefined>
  readonly get: (id: string) => SqlEffect<UserRow | undefined>
  readonly create: (user: NewUser) => SqlEffect<UserRow, EmailTaken>
  /** The operator with this email, created without a password when missing (the dev operator). */
  readonly ensureOperator: (email: string) => SqlEffect<UserRow, EmailTaken>
  readonly members: (accountId: string) => SqlEffect<ReadonlyArray<UserRow>>
  readonly operators: SqlEffect<ReadonlyArray<UserRow>>
  /** Removes a member of the account (their sessions end with them); whether there was one. */
  /** Removes a member of the account (and their sessions): how many sessions ended, undefined if no such member. */
  readonly removeMember: (accountId: string, userId: string) => SqlEffect<number | undefined>
  readonly setPassword: (userId: string, passwordHash: string) => SqlEffect<void>
}>()("anchord/console/ConsoleUsers") {
  static readonly layer = Layer.effect(ConsoleUsers, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`id, email, password_hash, operator, account_id, role, created_at`
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    const findUser = SqlSchema.findOneOption({
      Request: Schema.Struct({ by: Schema.Literals(["id", "email"]), value: Schema.String }),
      Result: UserRow,
      execute: ({ by, value }) =>
        by === "id"
          ? sql`SELECT ${columns} FROM console_users WHERE id = ${value}`
          : sql`SELECT ${columns} FROM console_users WHERE email = ${value}`
    })
    const insertUser = SqlSchema.findOne({
      // the row as inserted: the same fields
      Request: UserRow,
      Result: UserRow,
      execute: (u) =>
        sql`
        INSERT INTO console_users (id, email, password_hash, operator, account_id, role, created_at)
        VALUES (${u.id}, ${u.email}, ${u.passwordHash}, ${u.operator}, ${u.accountId}, ${u.role}, ${u.createdAt})
        RETURNING ${columns}`
    })
    const findUsers = SqlSchema.findAll({
      Request: Schema.UndefinedOr(Schema.String),
      Result: UserRow,
      execute: (accountId) =>
        accountId === undefined
          ? sql`SELECT ${columns} FROM console_users WHERE operator ORDER BY created_at`
          : sql`SELECT ${columns} FROM console_users WHERE account_id = ${accountId} ORDER BY created_at`
    })
    // By the primary key behind a fence, whatever the statistics (not by the account's index, which a fresh database's plan may pick).
    // The member's sessions go with it (ON DELETE CASCADE): counted in the same statement, from its snapshot.
    const deleteMember = SqlSchema.findOneOption({
      Request: Schema.Struct({ accountId: Schema.String, userId: Schema.String }),
      Result: Schema.Struct({ id: Schema.String, sessionsEnded: Schema.Number }),
      execute: ({ accountId, userId }) =>
        sql`
          WITH target AS (
            SELECT u.id FROM (SELECT id, account_id FROM console_users WHERE id = ${userId} OFFSET 0) u WHERE u.account_id = ${accountId})
          DELETE FROM console_users WHERE id = (SELECT id FROM target)
          RETURNING id, (SELECT count(*)::int FROM console_sessions WHERE user_id = (SELECT id FROM target)) AS sessions_ended`
    })
    const updatePassword = SqlSchema.void({
      Request: Schema.Struct({ userId: Schema.String, passwordHash: Schema.String }),
      execute: ({ passwordHash, userId }) => sql`UPDATE console_users SET password_hash = ${passwordHash} WHERE id = ${userId}`
    })

    const byEmail = Effect.fn("ConsoleUsers.byEmail")((email: string) =>
      findUser({ by: "email", value: normalizeEmail(email) }).pipe(rowDefects, Effect.map(Option.getOrUndefined))
    )

    const create = Effect.fn("ConsoleUsers.create")(function*(user: NewUser) {
      const email = normalizeEmail(user.email)
      return yield* rowDefects(insertUser({
        id: `usr_${Crypto.randomBytes(8).toString("hex")}`,
        email,
        passwordHash: user.passwordHash,
        operator: user.operator,
        accountId: user.operator ? null : user.accountId,
        role: user.operator ? null : user.role,
        createdAt: yield* now
      })).pipe(
        Effect.catchReason("SqlError", "UniqueViolation", () => Effect.fail(new EmailTaken({ email })))
      )
    })

    return ConsoleUsers.of({
      byEmail,
      get: Effect.fn("ConsoleUsers.get")((id) => findUser({ by: "id", value: id }).pipe(rowDefects, Effect.map(Option.getOrUndefined))),
      create,
      ensureOperator: Effect.fn("ConsoleUsers.ensureOperator")(function*(email) {
        const found = yield* byEmail(email)
        if (found !== undefined) return found.operator ? found : yield* new EmailTaken({ email })
        return yield* create({ email, passwordHash: null, operator: true })
      }),
      members: Effect.fn("ConsoleUsers.members")((accountId) => rowDefects(findUsers(accountId))),
      operators: rowDefects(findUsers(undefined)).pipe(Effect.withSpan("ConsoleUsers.operators")),
      removeMember: Effect.fn("ConsoleUsers.removeMember")((accountId, userId) =>
        Effect.map(rowDefects(deleteMember({ accountId, userId })), Option.match({ onNone: () => undefined, onSome: (r) => r.sessionsEnded }))
      ),
      setPassword: Effect.fn("ConsoleUsers.setPassword")((userId, passwordHash) => rowDefects(updatePassword({ userId, passwordHash })))
    })
  }))
}
