/**
 * Console users (`console_users`, migration 0009): operators, who see and manage every account, and
 * account members with role `admin` (may change things) or `viewer` (reads; sees no secret). A user
 * belongs to one account; emails are unique once normalized (`normalizeEmail`: stored normalized and
 * compared as stored, SQL applies no case rule of its own). Passwords are scrypt hashes (./passwords.ts),
 * never returned by the views.
 */
import * as Crypto from "node:crypto"
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import { decodeFirst, decodeRows } from "../db/rows.ts"
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

type Sql<A, E = never> = Effect.Effect<A, E | SqlError.SqlError>

/**
 * The one spelling of an email: trimmed, Unicode NFKC, lower-cased once (JavaScript's full Unicode
 * mapping), NFKC again (lower-casing can leave a composable sequence). Every path goes through it:
 * sign-in, the throttle's keys, invitations, their acceptance, the operator's CLI, the users table
 * (migration 0014 rewrote older rows). SQL compares the stored form with `=`: PostgreSQL's lower()
 * follows other rules (it maps `İ` to `i`, JavaScript to `i̇`), and two rules would let two spellings
 * reach one user past a throttle keyed by the other.
 */
export const normalizeEmail = (email: string) => email.trim().normalize("NFKC").toLowerCase().normalize("NFKC")

export class ConsoleUsers extends Context.Service<ConsoleUsers, {
  readonly byEmail: (email: string) => Sql<UserRow | undefined>
  readonly get: (id: string) => Sql<UserRow | undefined>
  readonly create: (user: NewUser) => Sql<UserRow, EmailTaken>
  /** The operator with this email, created without a password when missing (the dev operator). */
  readonly ensureOperator: (email: string) => Sql<UserRow, EmailTaken>
  readonly members: (accountId: string) => Sql<ReadonlyArray<UserRow>>
  readonly operators: Sql<ReadonlyArray<UserRow>>
  /** Removes a member of the account (their sessions end with them); whether there was one. */
  readonly removeMember: (accountId: string, userId: string) => Sql<boolean>
  readonly setPassword: (userId: string, passwordHash: string) => Sql<void>
}>()("anchord/console/ConsoleUsers") {
  static readonly layer = Layer.effect(ConsoleUsers, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = decodeRows(UserRow)
    const first = decodeFirst(UserRow)
    const columns = sql`id, email, password_hash, operator, account_id, role, created_at`
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    const byEmail = Effect.fn("ConsoleUsers.byEmail")((email: string) =>
      sql`SELECT ${columns} FROM console_users WHERE email = ${normalizeEmail(email)}`.pipe(Effect.flatMap(first))
    )

    const create = Effect.fn("ConsoleUsers.create")(function*(user: NewUser) {
      const email = normalizeEmail(user.email)
      const inserted = yield* sql`
        INSERT INTO console_users (id, email, password_hash, operator, account_id, role, created_at)
        VALUES (${`usr_${Crypto.randomBytes(8).toString("hex")}`}, ${email}, ${user.passwordHash}, ${user.operator},
                ${user.operator ? null : user.accountId}, ${user.operator ? null : user.role}, ${yield* now})
        RETURNING ${columns}`.pipe(
        Effect.flatMap(first),
        Effect.catchReason("SqlError", "UniqueViolation", () => Effect.fail(new EmailTaken({ email })))
      )
      return inserted!
    })

    return ConsoleUsers.of({
      byEmail,
      get: Effect.fn("ConsoleUsers.get")((id) => sql`SELECT ${columns} FROM console_users WHERE id = ${id}`.pipe(Effect.flatMap(first))),
      create,
      ensureOperator: Effect.fn("ConsoleUsers.ensureOperator")(function*(email) {
        const found = yield* byEmail(email)
        if (found !== undefined) return found.operator ? found : yield* new EmailTaken({ email })
        return yield* create({ email, passwordHash: null, operator: true })
      }),
      members: Effect.fn("ConsoleUsers.members")((accountId) =>
        sql`SELECT ${columns} FROM console_users WHERE account_id = ${accountId} ORDER BY created_at`.pipe(Effect.flatMap(rows))
      ),
      operators: sql`SELECT ${columns} FROM console_users WHERE operator ORDER BY created_at`.pipe(
        Effect.flatMap(rows),
        Effect.withSpan("ConsoleUsers.operators")
      ),
      removeMember: Effect.fn("ConsoleUsers.removeMember")((accountId, userId) =>
        // By the primary key behind a fence, whatever the statistics (not by the account's index; issue 25).
        Effect.map(sql`
          DELETE FROM console_users WHERE id = (
            SELECT u.id FROM (SELECT id, account_id FROM console_users WHERE id = ${userId} OFFSET 0) u WHERE u.account_id = ${accountId})
          RETURNING id`, (r) => r.length > 0)
      ),
      setPassword: Effect.fn("ConsoleUsers.setPassword")((userId, passwordHash) =>
        Effect.asVoid(sql`UPDATE console_users SET password_hash = ${passwordHash} WHERE id = ${userId}`)
      )
    })
  }))
}
