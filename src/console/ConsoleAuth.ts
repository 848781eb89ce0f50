/**
 * Signing in to the console (SPEC 9): email + password (throttled: ./SignInThrottle.ts), one-time
 * sign-in links, invitations. Each success starts a session (./Sessions.ts). API keys never sign anyone
 * in here: nothing in this file reads one. Emails are taken through `normalizeEmail` (./Users.ts).
 *
 * Password hashing (scrypt, ~0.1 s of a core and 32 MiB each) is not database work: it runs at most
 * HASH_CONCURRENCY at a time (libuv's pool has 4 threads, which DNS lookups and file reads share), a
 * sign-in waits at most HASH_WAIT_MS for its turn and is then told the node is busy (503 with its own
 * message, its throttle reservation taken back), never that the database is unavailable. The database
 * steps around it keep REQUEST_DEADLINE_MS each (DatabaseGuard.bounded); the endpoints' own deadline
 * (src/api/console.ts) is longer than their sum.
 */
import { Context, Effect, Layer, Option, Semaphore } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlEffect } from "../db/rows.ts"
import { Accounts } from "../auth/Accounts.ts"
import type { AccountNotFound } from "../auth/errors.ts"
import { DatabaseGuard, type DatabaseUnavailable } from "../db/guard.ts"
import { ConsoleNotFound, EmailTaken, InvalidConsoleInput, InvalidCredentials, InvalidLink, NotAllowed, SignInBusy, SignInThrottled } from "./errors.ts"
import { ConsoleLinks, type LinkKind, type LinkRow } from "./Links.ts"
import { hashPassword, passwordProblem, verifyPassword } from "./passwords.ts"
import { ConsoleSessions, type Session } from "./Sessions.ts"
import { SignInThrottle } from "./SignInThrottle.ts"
import { isToken, newToken } from "./tokens.ts"
import { type ConsoleUserInfo, ConsoleUsers, normalizeEmail, type Role, withoutPassword } from "./Users.ts"

/** Password hashes computed at once (the others wait their turn). */
export const HASH_CONCURRENCY = 2
/** How long a sign-in or an acceptance waits for its turn to hash before it is told the node is busy. */
export const HASH_WAIT_MS = 25_000

export interface SignedIn {
  /** The session token: goes into the cookie, nowhere else. */
  readonly token: string
  readonly session: Session
  /** A password sign-in's device token: goes into the device cookie (the browser is known to the throttle). */
  readonly device?: string | undefined
}

export type InviteTarget =
  | { readonly operator: true }
  | { readonly operator: false; readonly accountId: string; readonly role: Role }

const EMAIL = /^[^\s@]+@[^\s@]+$/

export class ConsoleAuth extends Context.Service<ConsoleAuth, {
  readonly signIn: (
    input: { readonly email: string; readonly password: string; readonly address: string; readonly device?: string | undefined }
  ) => SqlEffect<SignedIn, InvalidCredentials | SignInThrottled | SignInBusy | DatabaseUnavailable>
  readonly redeemSignInLink: (token: string) => SqlEffect<SignedIn, InvalidLink>
  readonly inspectLink: (token: string) => SqlEffect<LinkRow, InvalidLink>
  readonly acceptInvitation: (
    input: { readonly token: string; readonly password: string }
  ) => SqlEffect<SignedIn, InvalidLink | EmailTaken | InvalidConsoleInput | SignInBusy | DatabaseUnavailable>
  /**
   * A one-time link for `email`: an invitation (no user yet), or a sign-in link (the user exists). `by`:
   * who asks (undefined: the operator's CLI); members may invite only into their own account, as admins.
   * An admin inviting an email that has a user in another account (or is an operator's) gets the same
   * answer as for a fresh email: whether an address is known to the node is not theirs to learn. The
   * invitee, accepting, is told the email has a user (409); operators and an admin inviting one of
   * their own members are told at once.
   */
  readonly createLink: (input: {
    readonly kind: LinkKind
    readonly email: string
    readonly target: InviteTarget
    readonly by?: ConsoleUserInfo | undefined
  }) => SqlEffect<{ readonly token: string; readonly expiresAt: Date }, EmailTaken | InvalidConsoleInput | NotAllowed | ConsoleNotFound | AccountNotFound>
}>()("anchord/console/ConsoleAuth") {
  static readonly layer = Layer.effect(ConsoleAuth, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const users = yield* ConsoleUsers
    const sessions = yield* ConsoleSessions
    const links = yield* ConsoleLinks
    const throttle = yield* SignInThrottle
    const accounts = yield* Accounts
    const guard = yield* DatabaseGuard
    const slots = yield* Semaphore.make(HASH_CONCURRENCY)

    const start = (user: ConsoleUserInfo) => sessions.create(user)
    /** A database step: REQUEST_DEADLINE_MS, as every request's. */
    const db = <A, E, R>(effect: Effect.Effect<A, E, R>) => guard.bounded(effect)
    /** Hashing: one of HASH_CONCURRENCY turns, waited for at most HASH_WAIT_MS; the hash itself is not cut off. */
    const hashing = <A>(work: () => Promise<A>) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(restore(Effect.timeoutOption(slots.take(1), HASH_WAIT_MS)), (turn) =>
          Option.isNone(turn)
            ? Effect.fail(new SignInBusy({ retryAfterSeconds: 2 }))
            : Effect.ensuring(Effect.promise(work), slots.release(1)))
      )

    return ConsoleAuth.of({
      signIn: Effect.fn("ConsoleAuth.signIn")(function*({ email: entered, password, address, device: sent }) {
        const email = normalizeEmail(entered)
        // Anything but a token is no device (the browser gets a new one when it signs in).
        const device = sent !== undefined && isToken(sent) ? sent : undefined
        const keys = { email, address, device }
        // Counted before the password is looked at: past a limit, no guess is checked at all.
        const reservation = yield* db(throttle.reserve(keys))
        const user = yield* db(users.byEmail(email))
        const ok = yield* hashing(() => verifyPassword(password, user?.passwordHash)).pipe(
          Effect.tapError(() => db(throttle.release(keys, reservation)))
        )
        if (!ok || user === undefined) return yield* new InvalidCredentials({ attemptsLeft: reservation.attemptsLeft })
        const known = { ...keys, device: device ?? newToken() }
        yield* db(throttle.succeeded(known, reservation))
        return { ...yield* db(start(withoutPassword(user))), device: known.device }
      }),

      redeemSignInLink: Effect.fn("ConsoleAuth.redeemSignInLink")((token) =>
        sql.withTransaction(Effect.gen(function*() {
          const link = yield* links.consume(token, "sign-in")
          const user = yield* users.byEmail(link.email)
          if (user === undefined) return yield* new InvalidLink()
          return yield* start(withoutPassword(user))
        }))
      ),

      inspectLink: (token) => links.inspect(token),

      acceptInvitation: Effect.fn("ConsoleAuth.acceptInvitation")(function*({ token, password }) {
        const problem = passwordProblem(password)
        if (problem !== undefined) return yield* new InvalidConsoleInput({ reason: problem })
        // Checked first so a used link does not cost a password hash; consumed below, atomically.
        yield* db(links.inspect(token))
        const passwordHash = yield* hashing(() => hashPassword(password))
        return yield* db(sql.withTransaction(Effect.gen(function*() {
          const link = yield* links.consume(token, "invitation")
          const user = yield* users.create(
            link.operator
              ? { email: link.email, passwordHash, operator: true }
              : { email: link.email, passwordHash, operator: false, accountId: link.accountId!, role: link.role! }
          )
          return yield* start(withoutPassword(user))
        })))
      }),

      createLink: Effect.fn("ConsoleAuth.createLink")(function*({ kind, email, target, by }) {
        const address = normalizeEmail(email)
        if (!EMAIL.test(address) || address.length > 254) return yield* new InvalidConsoleInput({ reason: "email: not an email address" })
        if (by !== undefined && !by.operator) {
          if (target.operator || target.accountId !== by.accountId || by.role !== "admin" || kind !== "invitation") {
            return yield* new NotAllowed({ reason: "Only an admin of this account (or an operator) can invite members to it" })
          }
        }
        if (!target.operator) yield* accounts.get(target.accountId)
        const existing = yield* users.byEmail(address)
        if (kind === "invitation" && existing !== undefined) {
          const theirsToSee = by === undefined || by.operator || existing.accountId === by.accountId
          if (theirsToSee) return yield* new EmailTaken({ email: address })
        }
        if (kind === "sign-in" && existing === undefined) return yield* new ConsoleNotFound({ what: `console user ${address}` })
        return yield* links.create({ kind, email: address, createdBy: by?.id, ...target })
      })
    })
  }))
}
