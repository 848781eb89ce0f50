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
import { delayAfter, FREE_FAILURES_PER_EMAIL, MAX_FAILURES_PER_ADDRESS, MAX_FAILURES_PER_PAIR, SignInThrottle,
  WINDOW_MS } from "../../src/console/SignInThrottle.ts"
import { ConsoleUsers, normalizeEmail } from "../../src/console/Users.ts"
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
    idleMillis: IDLE,
    absoluteMillis: ABSOLUTE,
    secureCookie: "auto",
    invitationMillis: 7 * 86_400_000,
    signInLinkMillis: 3_600_000
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
  type Throttled = { _tag: string; scope: string; retryAfterSeconds: number; message: string }

  it.effect(`${MAX_FAILURES_PER_PAIR} wrong passwords pause that email from that address for 15 minutes; the owner signs in from their own address meanwhile`, () =>
    withServices(Effect.gen(function*() {
      yield* startClockNearNow
      const auth = yield* ConsoleAuth
      const user = yield* member("the right passphrase")
      const attempt = (password: string, address: string) => Effect.exit(auth.signIn({ email: user.email, password, address }))
      const OWN = "192.0.2.10", ATTACKER = "198.51.100.66", ELSEWHERE = "203.0.113.5"
      // The owner signed in from their usual address before.
      assert.isTrue(Exit.isSuccess(yield* attempt("the right passphrase", OWN)))
      const lefts: Array<number> = []
      for (let i = 0; i < MAX_FAILURES_PER_PAIR; i++) {
        const e = failureOf(yield* attempt("wrong", ATTACKER)) as { _tag: string; attemptsLeft: number; message: string }
        assert.strictEqual(e._tag, "InvalidCredentials")
        lefts.push(e.attemptsLeft)
        yield* TestClock.adjust(1_000)
      }
      assert.deepStrictEqual(lefts, [4, 3, 2, 1, 0])
      // The attacker's address is paused for this email: even the right password is not checked from it.
      const paused = failureOf(yield* attempt("the right passphrase", ATTACKER)) as Throttled
      assert.deepStrictEqual([paused._tag, paused.scope, paused.retryAfterSeconds], ["SignInThrottled", "pair", (WINDOW_MS - 1_000) / 1000])
      assert.strictEqual(paused.message, "Too many failed sign-in attempts for this email from your network address. Try again in 15 minutes.")
      // The owner, from their own address: signed in at once (no 15-minute lock of the email).
      assert.isTrue(Exit.isSuccess(yield* attempt("the right passphrase", OWN)))
      // From an address the email never signed in from: a short wait (the email slows down), then in.
      const slowed = failureOf(yield* attempt("the right passphrase", ELSEWHERE)) as Throttled
      assert.deepStrictEqual([slowed.scope, slowed.retryAfterSeconds], ["email", 4])
      assert.strictEqual(slowed.message, "Too many failed sign-in attempts for this email: sign-in slows down. Try again in 4 seconds.")
      yield* TestClock.adjust(4_000)
      assert.isTrue(Exit.isSuccess(yield* attempt("the right passphrase", ELSEWHERE)))
      // The attacker's pause ends 15 minutes after its last failure.
      yield* TestClock.adjust(WINDOW_MS - 5_000 - 1)
      assert.strictEqual((failureOf(yield* attempt("the right passphrase", ATTACKER)) as Throttled).scope, "pair")
      yield* TestClock.adjust(1)
      assert.isTrue(Exit.isSuccess(yield* attempt("the right passphrase", ATTACKER)))
    })))

  it.effect("per email, from many addresses: 5 failures free, then waits that grow (5 s, 10 s, 20 s ... 5 min), never a lock", () =>
    withServices(Effect.gen(function*() {
      yield* startClockNearNow
      const auth = yield* ConsoleAuth
      const user = yield* member("the right passphrase")
      let n = 0
      const guess = () => Effect.exit(auth.signIn({ email: user.email, password: "wrong", address: `198.51.100.${++n}` }))
      for (let i = 0; i < FREE_FAILURES_PER_EMAIL; i++) assert.strictEqual((failureOf(yield* guess()) as { _tag: string })._tag, "InvalidCredentials")
      const waits: Array<number> = []
      for (let i = 0; i < 9; i++) {
        const e = failureOf(yield* guess()) as Throttled
        assert.strictEqual(e.scope, "email")
        waits.push(e.retryAfterSeconds)
        yield* TestClock.adjust(e.retryAfterSeconds * 1000 - 1)
        assert.strictEqual((failureOf(yield* guess()) as { _tag: string })._tag, "SignInThrottled")
        yield* TestClock.adjust(1)
        assert.strictEqual((failureOf(yield* guess()) as { _tag: string })._tag, "InvalidCredentials")
      }
      assert.deepStrictEqual(waits, [5, 10, 20, 40, 80, 160, 300, 300, 300])
      assert.deepStrictEqual(waits, [5, 6, 7, 8, 9, 10, 11, 12, 13].map((f) => delayAfter(f) / 1000))
      // 15 quiet minutes and the email starts again.
      yield* TestClock.adjust(WINDOW_MS)
      assert.isTrue(Exit.isSuccess(yield* Effect.exit(auth.signIn({ email: user.email, password: "the right passphrase", address: "198.51.100.250" }))))
    })))

  it.effect(`10 concurrent wrong guesses from 10 addresses: ${FREE_FAILURES_PER_EMAIL} passwords checked, the others refused unchecked`, () =>
    withServices(Effect.gen(function*() {
      yield* startClockNearNow
      const auth = yield* ConsoleAuth
      const user = yield* member("the right passphrase")
      const exits = yield* Effect.forEach(Array.from({ length: 10 }, (_, i) => `203.0.113.${i + 1}`), (address) =>
        Effect.exit(auth.signIn({ email: user.email, password: "wrong", address })), { concurrency: "unbounded" })
      const tags = exits.map((e) => (failureOf(e) as { _tag: string })._tag)
      assert.strictEqual(tags.filter((t) => t === "InvalidCredentials").length, FREE_FAILURES_PER_EMAIL, tags.join())
      assert.strictEqual(tags.filter((t) => t === "SignInThrottled").length, 10 - FREE_FAILURES_PER_EMAIL, tags.join())
    })))

  it.effect("one email, one spelling: while victim1 is paused, vİctim1 with the right password does not sign in as victim1; ｖictim1 is victim1, paused alike", () =>
    withServices(Effect.gen(function*() {
      yield* startClockNearNow
      const auth = yield* ConsoleAuth
      const account = yield* (yield* Accounts).createAccount({ name: "unicode", plan: "FREE" })
      const passwordHash = yield* Effect.promise(() => hashPassword("the right passphrase"))
      const victim = `victim${++n}@example.com`
      yield* (yield* ConsoleUsers).create({ email: victim, passwordHash, operator: false, accountId: account.id, role: "admin" })
      const ATTACKER = "198.51.100.99"
      for (let i = 0; i < MAX_FAILURES_PER_PAIR; i++) yield* Effect.exit(auth.signIn({ email: victim, password: "wrong", address: ATTACKER }))
      const dotted = victim.replace("i", "İ")
      const viaDotted = yield* Effect.exit(auth.signIn({ email: dotted, password: "the right passphrase", address: ATTACKER }))
      assert.isFalse(Exit.isSuccess(viaDotted), "vİctim signed in as victim")
      assert.strictEqual((failureOf(viaDotted) as { _tag: string })._tag, "InvalidCredentials")
      assert.notStrictEqual(normalizeEmail(dotted), victim)
      // A spelling that is the same address (NFKC, case): the same user, the same pause.
      const fullwidth = `  ${victim.replace("v", "ｖ").toUpperCase()} `
      assert.strictEqual(normalizeEmail(fullwidth), victim)
      const viaFullwidth = failureOf(yield* Effect.exit(auth.signIn({ email: fullwidth, password: "the right passphrase", address: ATTACKER }))) as Throttled
      assert.deepStrictEqual([viaFullwidth._tag, viaFullwidth.scope], ["SignInThrottled", "pair"])
      // Stored in that one spelling, and looked up without lower() in SQL.
      const rows = yield* (yield* SqlClient.SqlClient)<{ email: string }>`SELECT email FROM console_users WHERE account_id = ${account.id}`
      assert.deepStrictEqual(rows.map((r) => r.email), [victim])
      assert.strictEqual(yield* (yield* ConsoleUsers).byEmail(dotted), undefined)
    })))

  it.effect("counters with nothing left to say are swept (at most once a minute); a known address stays known for 30 days", () =>
    withServices(Effect.gen(function*() {
      yield* startClockNearNow
      const auth = yield* ConsoleAuth
      const sql = yield* SqlClient.SqlClient
      const user = yield* member("the right passphrase")
      const keysOf = (e: string) => sql<{ key: string }>`SELECT key FROM console_sign_in_counters WHERE key LIKE ${`%${e}`} ORDER BY key`
      yield* Effect.exit(auth.signIn({ email: user.email, password: "the right passphrase", address: "192.0.2.77" }))
      const stranger = email("stranger")
      yield* Effect.exit(auth.signIn({ email: stranger, password: "wrong", address: "192.0.2.78" }))
      assert.strictEqual((yield* keysOf(stranger)).length, 2)
      yield* TestClock.adjust(WINDOW_MS + 60_000)
      yield* Effect.exit(auth.signIn({ email: email("someone"), password: "wrong", address: "192.0.2.79" }))
      assert.deepStrictEqual(yield* keysOf(stranger), [])
      // The owner's pair and browser are kept: its address and its device are known.
      const kept = (yield* keysOf(user.email)).map((r) => r.key)
      assert.deepStrictEqual(kept.map((k) => k.split(":")[0]), ["device", "pair"])
      assert.strictEqual(kept[1], `pair:192.0.2.77 ${user.email}`)
    })))

  it.effect("an attacker who guesses from many addresses each time the slow-down ends cannot keep the owner's own browser out of a new address",
    () =>
      withServices(Effect.gen(function*() {
        yield* startClockNearNow
        const auth = yield* ConsoleAuth
        const user = yield* member("the right passphrase")
        const other = yield* member("the attacker's passphrase")
        // The owner signed in at home once: their browser holds a device token. The attacker's own
        // browser holds one too, for their own account.
        const home = yield* auth.signIn({ email: user.email, password: "the right passphrase", address: "192.0.2.10" })
        const attackers = yield* auth.signIn({ email: other.email, password: "the attacker's passphrase", address: "198.51.100.1" })
        assert.isDefined(home.device)
        let a = 0
        const attacker = (device?: string) =>
          Effect.exit(auth.signIn({ email: user.email, password: "wrong", address: `198.51.${100 + (a >> 8)}.${a++ % 256}`, device }))
        const owner = (address: string, device?: string) => Effect.exit(auth.signIn({ email: user.email, password: "the right passphrase", address, device }))
        const tag = (exit: Exit.Exit<unknown, unknown>) => Exit.isSuccess(exit) ? "in" : (failureOf(exit) as { _tag: string })._tag
        // The attack: refused attempts (uncounted) from many addresses, a real guess the moment each slow-down ends.
        const outcomes = { newBrowser: [] as Array<string>, ownBrowser: [] as Array<string> }
        let checked = 0
        let hotel = 0
        for (let second = 0; second < 20 * 60; second++) {
          const e = failureOf(yield* attacker()) as { _tag: string; retryAfterSeconds?: number }
          if (e._tag === "InvalidCredentials") checked++
          // The owner, travelling, tries every 20 s from a hotel: from a browser that never signed in, and from their own.
          if (second % 20 === 10) {
            // Each time from an address it never used (one where it signed in would be known).
            outcomes.newBrowser.push(tag(yield* owner(`203.0.113.${++hotel}`)))
            outcomes.ownBrowser.push(tag(yield* owner(`203.0.113.${++hotel}`, home.device)))
          }
          yield* TestClock.adjust(1_000)
        }
        // The attack holds a browser that never signed in back (that is the slow-down doing its work) ...
        assert.isTrue(outcomes.newBrowser.every((t) => t === "SignInThrottled"), outcomes.newBrowser.join())
        // ... and never the owner's own browser, wherever it is.
        assert.deepStrictEqual([...new Set(outcomes.ownBrowser)], ["in"], outcomes.ownBrowser.join())
        // The attacker still checks only what the slow-down lets through (5 free, then 5 s, 10 s ... 300 s).
        assert.isAtMost(checked, FREE_FAILURES_PER_EMAIL + 12)
        // A device token is worth nothing for another email (the attacker's own), nor made up.
        for (const device of [attackers.device, "A".repeat(43), "not a token"]) assert.strictEqual(tag(yield* owner("192.0.2.251", device)), "SignInThrottled")
        // A stolen cookie is worth a pair's failures, not an exemption: 5 wrong passwords and that browser is slowed too.
        const theft = yield* Effect.forEach(Array.from({ length: MAX_FAILURES_PER_PAIR + 1 }), () => attacker(home.device))
        assert.deepStrictEqual(theft.map(tag), [...Array(MAX_FAILURES_PER_PAIR).fill("InvalidCredentials"), "SignInThrottled"])
        assert.strictEqual(tag(yield* owner("192.0.2.252", home.device)), "SignInThrottled")
        // Where it signed in before, the owner is still at home.
        assert.strictEqual(tag(yield* owner("192.0.2.10")), "in")
      })), 300_000)

  it.effect(`one address: ${MAX_FAILURES_PER_ADDRESS} failures over any emails pause sign-in from it`, () =>
    withServices(Effect.gen(function*() {
      yield* startClockNearNow
      const auth = yield* ConsoleAuth
      const address = "203.0.113.9"
      for (let i = 0; i < MAX_FAILURES_PER_ADDRESS; i++) {
        const e = failureOf(yield* Effect.exit(auth.signIn({ email: email("guess"), password: "x", address })))
        assert.strictEqual((e as { _tag: string })._tag, "InvalidCredentials")
      }
      const user = yield* member("the right passphrase")
      const blocked = failureOf(yield* Effect.exit(auth.signIn({ email: user.email, password: "the right passphrase", address }))) as Throttled
      assert.strictEqual(blocked.scope, "address")
      assert.match(blocked.message, /^Too many failed sign-in attempts from your network address\. Try again in 15 minutes\.$/)
      // Another address is not concerned.
      assert.isTrue(Exit.isSuccess(yield* Effect.exit(auth.signIn({ email: user.email, password: "the right passphrase", address: "192.0.2.200" }))))
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
        kind: "invitation",
        email: email("x"),
        target: { operator: false, accountId: viewer.accountId!, role: "viewer" },
        by: viewer
      })))
      assert.strictEqual((byViewer as { errorCode: string }).errorCode, "FORBIDDEN")
      const elsewhere = failureOf(yield* Effect.exit(auth.createLink({
        kind: "invitation",
        email: email("x"),
        target: { operator: false, accountId: viewer.accountId!, role: "admin" },
        by: admin
      })))
      assert.strictEqual((elsewhere as { errorCode: string }).errorCode, "FORBIDDEN")
      const operator = failureOf(yield* Effect.exit(auth.createLink({ kind: "invitation", email: email("x"), target: { operator: true }, by: admin })))
      assert.strictEqual((operator as { errorCode: string }).errorCode, "FORBIDDEN")
    })))

  it.effect("an invitation is void once its maker is removed, stops being an admin, or the account is suspended; admins list and revoke the pending ones", () =>
    withServices(Effect.gen(function*() {
      yield* startClockNearNow
      const auth = yield* ConsoleAuth
      const links = yield* ConsoleLinks
      const users = yield* ConsoleUsers
      const accounts = yield* Accounts
      const sql = yield* SqlClient.SqlClient
      const invalid = (exit: Exit.Exit<unknown, unknown>) => (failureOf(exit) as { _tag: string } | undefined)?._tag
      const invite = (by: typeof admin, role: "admin" | "viewer" = "admin") =>
        auth.createLink({ kind: "invitation", email: email("backdoor"), target: { operator: false, accountId: by.accountId!, role }, by })

      // Removed: the admin invites, the operator removes them; the invitation gives no session and is not listed.
      const admin = yield* member("a fine passphrase", "admin")
      const backdoor = yield* invite(admin)
      assert.strictEqual((yield* links.pendingInvitations(admin.accountId!)).length, 1)
      assert.isDefined(yield* users.removeMember(admin.accountId!, admin.id))
      assert.strictEqual(invalid(yield* Effect.exit(auth.acceptInvitation({ token: backdoor.token, password: "a long enough passphrase" }))), "InvalidLink")
      assert.strictEqual(invalid(yield* Effect.exit(auth.inspectLink(backdoor.token))), "InvalidLink")
      assert.deepStrictEqual(yield* links.pendingInvitations(admin.accountId!), [])

      // Role changed to viewer: void.
      const demoted = yield* member("a fine passphrase", "admin")
      const fromDemoted = yield* invite(demoted)
      yield* sql`UPDATE console_users SET role = 'viewer' WHERE id = ${demoted.id}`
      assert.strictEqual(invalid(yield* Effect.exit(auth.acceptInvitation({ token: fromDemoted.token, password: "a long enough passphrase" }))), "InvalidLink")

      // Suspended account: a member's invitation is void for good; an operator's waits for the account to be active again.
      const suspended = yield* member("a fine passphrase", "admin")
      const fromMember = yield* invite(suspended)
      const fromOperator = yield* auth.createLink({ kind: "invitation", email: email("ops-made"),
        target: { operator: false, accountId: suspended.accountId!, role: "viewer" } })
      yield* accounts.suspend(suspended.accountId!)
      for (const l of [fromMember, fromOperator]) {
        assert.strictEqual(invalid(yield* Effect.exit(auth.acceptInvitation({ token: l.token, password: "a long enough passphrase" }))), "InvalidLink")
      }
      assert.deepStrictEqual(yield* links.pendingInvitations(suspended.accountId!), [])
      yield* accounts.activate(suspended.accountId!)
      assert.strictEqual(invalid(yield* Effect.exit(auth.acceptInvitation({ token: fromMember.token, password: "a long enough passphrase" }))), "InvalidLink")
      assert.strictEqual((yield* auth.acceptInvitation({ token: fromOperator.token, password: "a long enough passphrase" })).session.user.role, "viewer")

      // Listed and revoked by id (the token is never stored nor shown).
      const keeper = yield* member("a fine passphrase", "admin")
      const a = yield* invite(keeper, "viewer")
      yield* TestClock.adjust(1_000)
      yield* invite(keeper, "admin")
      const pending = yield* links.pendingInvitations(keeper.accountId!)
      assert.deepStrictEqual(pending.map((l) => [l.role, l.createdBy]), [["admin", keeper.id], ["viewer", keeper.id]])
      assert.isFalse(yield* links.revokeInvitation("acct_other", pending[1]!.id))
      assert.isTrue(yield* links.revokeInvitation(keeper.accountId!, pending[1]!.id))
      assert.strictEqual(invalid(yield* Effect.exit(auth.acceptInvitation({ token: a.token, password: "a long enough passphrase" }))), "InvalidLink")
      assert.strictEqual((yield* links.pendingInvitations(keeper.accountId!)).length, 1)
    })))

  it.effect("an admin inviting an email that has a user in another account gets the answer of a fresh invitation; only the invitee learns the email is taken", () =>
    withServices(Effect.gen(function*() {
      const auth = yield* ConsoleAuth
      const elsewhere = yield* member("a fine passphrase", "viewer")
      const admin = yield* member("a fine passphrase", "admin")
      const link = yield* auth.createLink({
        kind: "invitation",
        email: elsewhere.email.toUpperCase(),
        target: { operator: false, accountId: admin.accountId!, role: "viewer" },
        by: admin
      })
      assert.match(link.token, /^[A-Za-z0-9_-]{43}$/)
      const accepted = failureOf(yield* Effect.exit(auth.acceptInvitation({ token: link.token, password: "a long enough passphrase" })))
      assert.strictEqual((accepted as { errorCode: string }).errorCode, "EMAIL_TAKEN")
      // One of the admin's own members: said at once (the admin sees the members list anyway).
      const own = yield* member("a fine passphrase", "viewer")
      const ownAdmin = yield* (yield* ConsoleUsers).create({ email: email("own-admin"), passwordHash: null, operator: false, accountId: own.accountId!,
        role: "admin" })
      const taken = failureOf(yield* Effect.exit(auth.createLink({
        kind: "invitation",
        email: own.email,
        target: { operator: false, accountId: own.accountId!, role: "viewer" },
        by: ownAdmin
      })))
      assert.strictEqual((taken as { errorCode: string }).errorCode, "EMAIL_TAKEN")
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
