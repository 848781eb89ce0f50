/**
 * Console sign-in on virtual time against a real PostgreSQL: sessions end at their idle and absolute
 * limits to the millisecond, the sign-in throttle opens again when its window ends, one-time links work
 * once and expire, passwords are scrypt with a salt per hash. (The same in a browser against a node:
 * test/console/console.test.ts.)
 *   npx vitest run test/console/auth.test.ts
 */
import { DatabaseGuard } from "../../src/db/guard.ts"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { beforeAll } from "vitest"
import { Accounts } from "../../src/auth/Accounts.ts"
import { AppConfig } from "../../src/config.ts"
import { ConsoleAuth } from "../../src/console/ConsoleAuth.ts"
import { ConsoleConfig } from "../../src/console/config.ts"
import { ConsoleLinks } from "../../src/console/Links.ts"
import { hashPassword, verifyPassword } from "../../src/console/passwords.ts"
import { ConsoleSessions } from "../../src/console/Sessions.ts"
import { MAX_FAILURES_PER_ADDRESS, MAX_FAILURES_PER_EMAIL, SignInThrottle, WINDOW_MS } from "../../src/console/SignInThrottle.ts"
import { ConsoleUsers } from "../../src/console/Users.ts"
import { csrfTokenOf, sameSecret, tokenDigest } from "../../src/console/tokens.ts"
import { startClockNearNow, withDatabaseServices } from "../support/clock.ts"
import { freshDatabase } from "../support/db.ts"

let url = ""
beforeAll(async () => {
  url = await freshDatabase()
})

const IDLE = 30 * 60_000
const ABSOLUTE = 12 * 3_600_000

const layer = Layer.mergeAll(ConsoleAuth.layer, ConsoleSessions.layer, ConsoleLinks.layer, SignInThrottle.layer).pipe(
  Layer.provideMerge(ConsoleUsers.layer),
  Layer.provideMerge(Layer.mergeAll(ConsoleSessions.layer, ConsoleLinks.layer, SignInThrottle.layer)),
  Layer.provideMerge(Layer.succeed(ConsoleConfig, ConsoleConfig.of({
    idleMillis: IDLE, absoluteMillis: ABSOLUTE, secureCookie: "auto", invitationMillis: 7 * 86_400_000, signInLinkMillis: 3_600_000
  }))),
  Layer.provideMerge(Accounts.layer),
  Layer.provideMerge(DatabaseGuard.layer),
  Layer.provideMerge(AppConfig.layer)
)
const withServices = withDatabaseServices(() => url, layer)

let n = 0
const email = (what: string) => `${what}-${++n}@example.com`

/** A member of a new account, with a password. */
const member = (password: string, role: "admin" | "viewer" = "admin") =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const account = yield* accounts.createAccount({ name: "auth test", plan: "FREE" })
    const passwordHash = yield* Effect.promise(() => hashPassword(password))
    return yield* (yield* ConsoleUsers).create({ email: email("member"), passwordHash, operator: false, accountId: account.id, role })
  })

const failureOf = <A, E>(exit: Exit.Exit<A, E>) => Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined

describe("console sessions (TestClock, real PostgreSQL)", () => {
  it.effect("idle expiry: used within 30 min the session lives on; 30 min unused, it is over (and removed)", () =>
    withServices(Effect.gen(function*() {
      yield* startClockNearNow
      const user = yield* member("a fine passphrase")
      const sessions = yield* ConsoleSessions
      const { token } = yield* sessions.create(user)
      // Only the token's digest is stored.
      const rows = yield* (yield* SqlClient.SqlClient)<{ digest: Uint8Array }>`SELECT digest FROM console_sessions WHERE user_id = ${user.id}`
      assert.deepStrictEqual(Buffer.from(rows[0]!.digest), tokenDigest(token))

      yield* TestClock.adjust(IDLE - 1)
      const alive = yield* sessions.resolve(token)
      assert.strictEqual(alive.user.id, user.id)
      // That use moved the idle end on: 30 min after it.
      yield* TestClock.adjust(IDLE - 1)
      yield* sessions.resolve(token)
      yield* TestClock.adjust(IDLE)
      const expired = failureOf(yield* Effect.exit(sessions.resolve(token)))
      assert.strictEqual((expired as { _tag: string })._tag, "SessionExpired")
      assert.strictEqual((expired as { reason: string }).reason, "idle")
      // Said once; then the session is simply gone.
      assert.strictEqual((failureOf(yield* Effect.exit(sessions.resolve(token))) as { _tag: string })._tag, "NotSignedIn")
    })))

  it.effect("absolute expiry: a session used every 20 minutes still ends 12 hours after sign-in", () =>
    withServices(Effect.gen(function*() {
      yield* startClockNearNow
      const sessions = yield* ConsoleSessions
      const { token, session } = yield* sessions.create(yield* member("a fine passphrase"))
      assert.strictEqual(session.expiresAt.getTime() - session.createdAt.getTime(), ABSOLUTE)
      for (let used = 0; used < ABSOLUTE - 20 * 60_000; used += 20 * 60_000) {
        yield* TestClock.adjust(20 * 60_000)
        yield* sessions.resolve(token)
      }
      yield* TestClock.setTime(session.expiresAt.getTime() - 1)
      yield* sessions.resolve(token)
      yield* TestClock.adjust(1)
      const expired = failureOf(yield* Effect.exit(sessions.resolve(token)))
      assert.strictEqual((expired as { reason: string }).reason, "absolute")
    })))

  it.effect("sign-out everywhere ends every session of the user, and no other user's", () =>
    withServices(Effect.gen(function*() {
      const sessions = yield* ConsoleSessions
      const user = yield* member("a fine passphrase")
      const other = yield* member("another passphrase")
      const a = yield* sessions.create(user)
      const b = yield* sessions.create(user)
      const c = yield* sessions.create(other)
      assert.strictEqual(yield* sessions.endAll(user.id), 2)
      for (const s of [a, b]) assert.strictEqual((failureOf(yield* Effect.exit(sessions.resolve(s.token))) as { _tag: string })._tag, "NotSignedIn")
      assert.strictEqual((yield* sessions.resolve(c.token)).user.id, other.id)
      // Tokens that are not tokens are refused before any lookup.
      assert.strictEqual((failureOf(yield* Effect.exit(sessions.resolve("' OR 1=1 --"))) as { _tag: string })._tag, "NotSignedIn")
    })))
})

describe("sign-in throttle (TestClock, real PostgreSQL)", () => {
  it.effect(`${MAX_FAILURES_PER_EMAIL} wrong passwords pause the email for 15 minutes, the right one included; then it opens again`, () =>
    withServices(Effect.gen(function*() {
      yield* startClockNearNow
      const auth = yield* ConsoleAuth
      const user = yield* member("the right passphrase")
      const attempt = (password: string, address = "192.0.2.1") => Effect.exit(auth.signIn({ email: user.email, password, address }))
      const lefts: Array<number> = []
      for (let i = 0; i < MAX_FAILURES_PER_EMAIL; i++) {
        const e = failureOf(yield* attempt("wrong")) as { _tag: string; attemptsLeft: number; message: string }
        assert.strictEqual(e._tag, "InvalidCredentials")
        lefts.push(e.attemptsLeft)
        yield* TestClock.adjust(1_000)
      }
      assert.deepStrictEqual(lefts, [4, 3, 2, 1, 0])
      // Throttled: even the right password is not checked, from any address.
      const throttled = failureOf(yield* attempt("the right passphrase", "198.51.100.7")) as { _tag: string; scope: string; retryAfterSeconds: number; message: string }
      assert.strictEqual(throttled._tag, "SignInThrottled")
      assert.strictEqual(throttled.scope, "email")
      assert.strictEqual(throttled.retryAfterSeconds, (WINDOW_MS - 5_000) / 1000)
      assert.match(throttled.message, /^Too many failed sign-in attempts for this email\. Try again in 15 minutes\.$/)
      // The window started with the first failure: it ends 15 minutes after it.
      yield* TestClock.adjust(WINDOW_MS - 5_000 - 1)
      assert.strictEqual((failureOf(yield* attempt("the right passphrase")) as { _tag: string })._tag, "SignInThrottled")
      yield* TestClock.adjust(1)
      const ok = yield* attempt("the right passphrase")
      assert.isTrue(Exit.isSuccess(ok))
    })))

  it.effect(`one address: ${MAX_FAILURES_PER_ADDRESS} failures over any emails pause sign-in from it; a success clears only its email's count`, () =>
    withServices(Effect.gen(function*() {
      yield* startClockNearNow
      const auth = yield* ConsoleAuth
      const throttle = yield* SignInThrottle
      const address = "203.0.113.9"
      for (let i = 0; i < MAX_FAILURES_PER_ADDRESS; i++) {
        const e = failureOf(yield* Effect.exit(auth.signIn({ email: email("guess"), password: "x", address })))
        assert.strictEqual((e as { _tag: string })._tag, "InvalidCredentials")
      }
      const user = yield* member("the right passphrase")
      const blocked = failureOf(yield* Effect.exit(auth.signIn({ email: user.email, password: "the right passphrase", address }))) as { _tag: string; scope: string; message: string }
      assert.strictEqual(blocked.scope, "address")
      assert.match(blocked.message, /from your network address/)
      // Another address signs in; its success resets that email's count.
      yield* throttle.failed({ email: user.email, address: "192.0.2.200" })
      assert.isTrue(Exit.isSuccess(yield* Effect.exit(auth.signIn({ email: user.email, password: "the right passphrase", address: "192.0.2.200" }))))
      assert.strictEqual(yield* throttle.failed({ email: user.email, address: "192.0.2.200" }), MAX_FAILURES_PER_EMAIL - 1)
    })))
})

describe("one-time links and passwords", () => {
  it.effect("an invitation works once; it and a sign-in link expire; a used link cannot be inspected", () =>
    withServices(Effect.gen(function*() {
      yield* startClockNearNow
      const auth = yield* ConsoleAuth
      const account = yield* (yield* Accounts).createAccount({ name: "links", plan: "FREE" })
      const invited = email("invited")
      const link = yield* auth.createLink({ kind: "invitation", email: invited, target: { operator: false, accountId: account.id, role: "viewer" } })
      assert.strictEqual((yield* auth.inspectLink(link.token)).role, "viewer")
      const tooShort = failureOf(yield* Effect.exit(auth.acceptInvitation({ token: link.token, password: "short" })))
      assert.strictEqual((tooShort as { errorCode: string }).errorCode, "VALIDATION_ERROR")
      const signedIn = yield* auth.acceptInvitation({ token: link.token, password: "a long enough passphrase" })
      assert.strictEqual(signedIn.session.user.role, "viewer")
      assert.strictEqual(signedIn.session.user.accountId, account.id)
      const again = failureOf(yield* Effect.exit(auth.acceptInvitation({ token: link.token, password: "a long enough passphrase" })))
      assert.strictEqual((again as { _tag: string })._tag, "InvalidLink")
      assert.strictEqual((failureOf(yield* Effect.exit(auth.inspectLink(link.token))) as { _tag: string })._tag, "InvalidLink")
      // Inviting an email that has a user is refused.
      const taken = failureOf(yield* Effect.exit(auth.createLink({ kind: "invitation", email: invited.toUpperCase(), target: { operator: true } })))
      assert.strictEqual((taken as { _tag: string })._tag, "EmailTaken")

      const signIn = yield* auth.createLink({ kind: "sign-in", email: invited, target: { operator: false, accountId: account.id, role: "viewer" } })
      yield* TestClock.adjust(3_600_000)
      assert.strictEqual((failureOf(yield* Effect.exit(auth.redeemSignInLink(signIn.token))) as { _tag: string })._tag, "InvalidLink")
      const fresh = yield* auth.createLink({ kind: "sign-in", email: invited, target: { operator: false, accountId: account.id, role: "viewer" } })
      yield* TestClock.adjust(3_600_000 - 1)
      assert.strictEqual((yield* auth.redeemSignInLink(fresh.token)).session.user.email, invited)
      assert.strictEqual((failureOf(yield* Effect.exit(auth.redeemSignInLink(fresh.token))) as { _tag: string })._tag, "InvalidLink")
    })))

  it.effect("a viewer cannot invite; an admin invites only into their own account", () =>
    withServices(Effect.gen(function*() {
      const auth = yield* ConsoleAuth
      const viewer = yield* member("a fine passphrase", "viewer")
      const admin = yield* member("a fine passphrase", "admin")
      const byViewer = failureOf(yield* Effect.exit(auth.createLink({
        kind: "invitation", email: email("x"), target: { operator: false, accountId: viewer.accountId!, role: "viewer" }, by: viewer
      })))
      assert.strictEqual((byViewer as { errorCode: string }).errorCode, "FORBIDDEN")
      const elsewhere = failureOf(yield* Effect.exit(auth.createLink({
        kind: "invitation", email: email("x"), target: { operator: false, accountId: viewer.accountId!, role: "admin" }, by: admin
      })))
      assert.strictEqual((elsewhere as { errorCode: string }).errorCode, "FORBIDDEN")
      const operator = failureOf(yield* Effect.exit(auth.createLink({ kind: "invitation", email: email("x"), target: { operator: true }, by: admin })))
      assert.strictEqual((operator as { errorCode: string }).errorCode, "FORBIDDEN")
    })))

  it.live("passwords: scrypt, a salt per hash, constant-time checks; an unknown user takes the same path and fails", () =>
    Effect.promise(async () => {
      const a = await hashPassword("correct horse battery staple")
      const b = await hashPassword("correct horse battery staple")
      assert.match(a, /^scrypt\$32768\$8\$1\$[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}$/)
      assert.notStrictEqual(a, b)
      assert.isTrue(await verifyPassword("correct horse battery staple", a))
      assert.isFalse(await verifyPassword("correct horse battery stapl", a))
      assert.isFalse(await verifyPassword("correct horse battery staple", undefined))
      assert.isFalse(await verifyPassword("", null))
      // CSRF tokens: derived from the session token, compared in constant time.
      assert.strictEqual(csrfTokenOf("t1"), csrfTokenOf("t1"))
      assert.notStrictEqual(csrfTokenOf("t1"), csrfTokenOf("t2"))
      assert.isTrue(sameSecret(csrfTokenOf("t1"), csrfTokenOf("t1")))
      assert.isFalse(sameSecret(csrfTokenOf("t1"), "short"))
    }))
})
