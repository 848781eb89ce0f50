/**
 * Signing in to the console (SPEC 9): email + password (throttled: ./SignInThrottle.ts), one-time
 * sign-in links, invitations. Each success starts a session (./Sessions.ts). API keys never sign anyone
 * in here: nothing in this file reads one.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { Accounts } from "../auth/Accounts.ts"
import type { AccountNotFound } from "../auth/errors.ts"
import { ConsoleNotFound, EmailTaken, InvalidConsoleInput, InvalidCredentials, InvalidLink, NotAllowed, SignInThrottled } from "./errors.ts"
import { ConsoleLinks, type LinkKind, type LinkRow } from "./Links.ts"
import { hashPassword, passwordProblem, verifyPassword } from "./passwords.ts"
import { ConsoleSessions, type Session } from "./Sessions.ts"
import { SignInThrottle } from "./SignInThrottle.ts"
import { type ConsoleUserInfo, ConsoleUsers, type Role, withoutPassword } from "./Users.ts"

export interface SignedIn {
  /** The session token: goes into the cookie, nowhere else. */
  readonly token: string
  readonly session: Session
}

export type InviteTarget =
  | { readonly operator: true }
  | { readonly operator: false; readonly accountId: string; readonly role: Role }

type Sql<A, E = never> = Effect.Effect<A, E | SqlError.SqlError>

const EMAIL = /^[^\s@]+@[^\s@]+$/

export class ConsoleAuth extends Context.Service<ConsoleAuth, {
  readonly signIn: (input: { readonly email: string; readonly password: string; readonly address: string }) =>
    Sql<SignedIn, InvalidCredentials | SignInThrottled>
  readonly redeemSignInLink: (token: string) => Sql<SignedIn, InvalidLink>
  readonly inspectLink: (token: string) => Sql<LinkRow, InvalidLink>
  readonly acceptInvitation: (input: { readonly token: string; readonly password: string }) =>
    Sql<SignedIn, InvalidLink | EmailTaken | InvalidConsoleInput>
  /**
   * A one-time link for `email`: an invitation (no user yet), or a sign-in link (the user exists). `by`:
   * who asks (undefined: the operator's CLI); members may invite only into their own account, as admins.
   */
  readonly createLink: (input: {
    readonly kind: LinkKind
    readonly email: string
    readonly target: InviteTarget
    readonly by?: ConsoleUserInfo | undefined
  }) => Sql<{ readonly token: string; readonly expiresAt: Date }, EmailTaken | InvalidConsoleInput | NotAllowed | ConsoleNotFound | AccountNotFound>
}>()("anchord/console/ConsoleAuth") {
  static readonly layer = Layer.effect(ConsoleAuth, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const users = yield* ConsoleUsers
    const sessions = yield* ConsoleSessions
    const links = yield* ConsoleLinks
    const throttle = yield* SignInThrottle
    const accounts = yield* Accounts

    const start = (user: ConsoleUserInfo) => sessions.create(user)

    return ConsoleAuth.of({
      signIn: Effect.fn("ConsoleAuth.signIn")(function*({ email, password, address }) {
        const keys = { email, address }
        // Throttled before the password is looked at: past the limit, no guess is checked at all.
        yield* throttle.check(keys)
        const user = yield* users.byEmail(email)
        const ok = yield* Effect.promise(() => verifyPassword(password, user?.passwordHash))
        if (!ok || user === undefined) {
          const attemptsLeft = yield* throttle.failed(keys)
          return yield* new InvalidCredentials({ attemptsLeft })
        }
        yield* throttle.succeeded(keys)
        return yield* start(withoutPassword(user))
      }),

      redeemSignInLink: Effect.fn("ConsoleAuth.redeemSignInLink")((token) =>
        sql.withTransaction(Effect.gen(function*() {
          const link = yield* links.consume(token, "sign-in")
          const user = yield* users.byEmail(link.email)
          if (user === undefined) return yield* new InvalidLink()
          return yield* start(withoutPassword(user))
        }))),

      inspectLink: (token) => links.inspect(token),

      acceptInvitation: Effect.fn("ConsoleAuth.acceptInvitation")(function*({ token, password }) {
        const problem = passwordProblem(password)
        if (problem !== undefined) return yield* new InvalidConsoleInput({ reason: problem })
        // Checked first so a used link does not cost a password hash; consumed below, atomically.
        yield* links.inspect(token)
        const passwordHash = yield* Effect.promise(() => hashPassword(password))
        return yield* sql.withTransaction(Effect.gen(function*() {
          const link = yield* links.consume(token, "invitation")
          const user = yield* users.create(
            link.operator
              ? { email: link.email, passwordHash, operator: true }
              : { email: link.email, passwordHash, operator: false, accountId: link.accountId!, role: link.role! }
          )
          return yield* start(withoutPassword(user))
        }))
      }),

      createLink: Effect.fn("ConsoleAuth.createLink")(function*({ kind, email, target, by }) {
        const address = email.trim()
        if (!EMAIL.test(address) || address.length > 254) return yield* new InvalidConsoleInput({ reason: "email: not an email address" })
        if (by !== undefined && !by.operator) {
          if (target.operator || target.accountId !== by.accountId || by.role !== "admin" || kind !== "invitation") {
            return yield* new NotAllowed({ reason: "Only an admin of this account (or an operator) can invite members to it" })
          }
        }
        if (!target.operator) yield* accounts.get(target.accountId)
        const existing = yield* users.byEmail(address)
        if (kind === "invitation" && existing !== undefined) return yield* new EmailTaken({ email: address })
        if (kind === "sign-in" && existing === undefined) return yield* new ConsoleNotFound({ what: `console user ${address}` })
        return yield* links.create({ kind, email: address, createdBy: by?.id, ...target })
      })
    })
  }))
}
