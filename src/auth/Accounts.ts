/**
 * Accounts, plans and API keys (SPEC 2): the operator's side (CLI) and the request side
 * (`authenticate`, with a short in-memory cache so the hot path does not query per request).
 */
import * as Crypto from "node:crypto"
import { Clock, Context, Effect, Exit, Layer, Option, Schedule, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { AppConfig } from "../config.ts"
import type { Principal } from "../api/auth.ts"
import { ChainType, Environment } from "../api/recordSchemas.ts"
import { isConnectionFailure } from "../db/errors.ts"
import { DatabaseGuard, DatabaseUnavailable } from "../db/guard.ts"
import { rowDefects, type SqlEffect } from "../db/rows.ts"
import { apiKeyDigest, digestsEqual, displayKey, generateApiKey, parseApiKey } from "./apiKeys.ts"
import { AccountInactive, AccountNotActive, AccountNotFound, ApiKeyNotFound, AuthRefused, type AuthRefusal, ExpiredKey, MalformedKey, MissingKey, RevokedKey,
  UnknownKey } from "./errors.ts"
import { ENTERPRISE_DEFAULT_PER_SECOND, PlanName, Plans } from "./plans.ts"

/** An `accounts` row (decoded where it is read). */
export const AccountRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  email: Schema.NullOr(Schema.String),
  plan: PlanName,
  status: Schema.Literals(["PENDING", "ACTIVE", "SUSPENDED"]),
  ratePerSecond: Schema.NullOr(Schema.Number),
  defaultChain: ChainType,
  createdAt: Schema.Date,
  activatedAt: Schema.NullOr(Schema.Date)
})
export type Account = typeof AccountRow.Type

export type { Principal }

/** An `api_keys` row as lists show it (never the digest). */
export const ApiKeyRow = Schema.Struct({
  id: Schema.String,
  accountId: Schema.String,
  environment: Environment,
  display: Schema.String,
  name: Schema.NullOr(Schema.String),
  createdAt: Schema.Date,
  expiresAt: Schema.NullOr(Schema.Date),
  revokedAt: Schema.NullOr(Schema.Date),
  /** When a request last authenticated with the key (to the minute: see LAST_USED_EVERY_MS). */
  lastUsedAt: Schema.NullOr(Schema.Date)
})
export type ApiKeyInfo = typeof ApiKeyRow.Type

/** A token's verdict as cached: its principal, or why it is refused. */
type Verdict = Exit.Exit<Principal, AuthRefused>

const accepted = (principal: Principal): Verdict => Exit.succeed(principal)
const refused = (reason: AuthRefusal): Verdict => Exit.fail(new AuthRefused({ reason }))
// Decided without the database, for every request without a usable key: built once.
const MISSING = refused(new MissingKey())
const MALFORMED = refused(new MalformedKey())

/** A key found by its digest, with its account: what `authenticate` decides on. */
const KeyAuthRow = Schema.Struct({
  digest: Schema.Uint8Array,
  keyId: Schema.String,
  environment: Environment,
  expiresAt: Schema.NullOr(Schema.Date),
  revokedAt: Schema.NullOr(Schema.Date),
  accountId: Schema.String,
  plan: PlanName,
  status: Schema.String,
  ratePerSecond: Schema.NullOr(Schema.Number),
  defaultChain: ChainType
})

/**
 * `last_used_at` is written at most this often per key, in batches off the request path: a key's use is
 * noted in memory as it authenticates (a map lookup), and a background fiber writes what was noted.
 */
export const LAST_USED_EVERY_MS = 60_000
const LAST_USED_FLUSH = "5 seconds"

const newId = (prefix: string) => `${prefix}_${Crypto.randomBytes(8).toString("hex")}`

export class Accounts extends Context.Service<Accounts, {
  readonly createAccount: (input: {
    readonly name: string
    readonly email?: string | undefined
    readonly plan: PlanName
    readonly ratePerSecond?: number | undefined
    readonly defaultChain?: ChainType | undefined
  }) => SqlEffect<Account>
  readonly activate: (accountId: string) => SqlEffect<Account, AccountNotFound>
  /** Suspended: its keys stop authenticating (at once on this node, within AUTH_CACHE_MS on others). */
  readonly suspend: (accountId: string) => SqlEffect<Account, AccountNotFound>
  readonly setPlan: (accountId: string, plan: PlanName, ratePerSecond?: number | null) => SqlEffect<Account, AccountNotFound>
  readonly get: (accountId: string) => SqlEffect<Account, AccountNotFound>
  readonly list: SqlEffect<ReadonlyArray<Account>>
  readonly createKey: (input: {
    readonly accountId: string
    readonly environment: Environment
    readonly name?: string | undefined
    readonly expiresAt?: Date | undefined
  }) => SqlEffect<{ readonly key: string; readonly info: ApiKeyInfo }, AccountNotFound | AccountNotActive>
  /** Registers a key the caller generated (the dev node keeps its own key across restarts). */
  readonly importKey: (input: {
    readonly accountId: string
    readonly key: string
    readonly name?: string | undefined
  }) => SqlEffect<ApiKeyInfo, AccountNotFound | AccountNotActive>
  readonly listKeys: (accountId?: string) => SqlEffect<ReadonlyArray<ApiKeyInfo>>
  readonly getKey: (keyId: string) => SqlEffect<ApiKeyInfo, ApiKeyNotFound>
  readonly revokeKey: (keyId: string) => SqlEffect<ApiKeyInfo, ApiKeyNotFound>
  /**
   * Resolves `Authorization: Bearer <token>`; never logs or echoes the token. A verdict known without
   * waiting (a cached key) comes back as an Exit, so the caller can use it without an effect step.
   */
  readonly authenticate: (token: string | undefined) => SqlEffect<Principal, AuthRefused | DatabaseUnavailable>
}>()("anchord/auth/Accounts") {
  static readonly layer = Layer.effect(
    Accounts,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      // Key expiry and the auth cache on the node's Clock, read without an effect step (every request).
      const clock = yield* Clock.Clock
      const clockDate = () => new Date(clock.currentTimeMillisUnsafe())
      const guard = yield* DatabaseGuard
      const cache = new Map<string, { readonly verdict: Verdict; readonly expires: number; readonly verifiedAt: number }>()

      const accountColumns = sql`id, name, email, plan, status, rate_per_second, default_chain, created_at, activated_at`
      const keyColumns = sql`id, account_id, environment, display, name, created_at, expires_at, revoked_at, last_used_at`
      const findAccount = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: AccountRow,
        execute: (accountId) => sql`SELECT ${accountColumns} FROM accounts WHERE id = ${accountId}`
      })
      const findAccounts = SqlSchema.findAll({
        Request: Schema.Void,
        Result: AccountRow,
        execute: () => sql`SELECT ${accountColumns} FROM accounts ORDER BY created_at`
      })
      const insertAccount = SqlSchema.findOne({
        Request: Schema.Struct({
          id: Schema.String,
          name: Schema.String,
          email: Schema.NullOr(Schema.String),
          plan: PlanName,
          ratePerSecond: Schema.NullOr(Schema.Number),
          defaultChain: ChainType,
          createdAt: Schema.Date
        }),
        Result: AccountRow,
        execute: (a) =>
          sql`
            INSERT INTO accounts (id, name, email, plan, rate_per_second, default_chain, created_at)
            VALUES (${a.id}, ${a.name}, ${a.email}, ${a.plan}, ${a.ratePerSecond}, ${a.defaultChain}, ${a.createdAt})
            RETURNING ${accountColumns}`
      })
      const updateStatus = SqlSchema.findOneOption({
        Request: Schema.Struct({ accountId: Schema.String, status: Schema.Literals(["ACTIVE", "SUSPENDED"]), at: Schema.Date }),
        Result: AccountRow,
        execute: ({ accountId, at, status }) =>
          sql`
            UPDATE accounts SET status = ${status},
              activated_at = ${status === "ACTIVE" ? sql`COALESCE(activated_at, ${at})` : sql`activated_at`}
            WHERE id = ${accountId} RETURNING ${accountColumns}`
      })
      const updatePlan = SqlSchema.findOneOption({
        Request: Schema.Struct({ accountId: Schema.String, plan: PlanName, ratePerSecond: Schema.optional(Schema.NullOr(Schema.Number)) }),
        Result: AccountRow,
        execute: ({ accountId, plan, ratePerSecond }) =>
          sql`
            UPDATE accounts SET plan = ${plan},
              -- a custom per-second limit is ENTERPRISE's only; undefined keeps the one it has
              rate_per_second = ${plan !== "ENTERPRISE" ? sql`NULL` : ratePerSecond === undefined ? sql`rate_per_second` : sql`${ratePerSecond}`}
            WHERE id = ${accountId} RETURNING ${accountColumns}`
      })
      const insertKeyRow = SqlSchema.findOne({
        Request: Schema.Struct({
          id: Schema.String,
          accountId: Schema.String,
          environment: Environment,
          digest: Schema.Uint8Array,
          display: Schema.String,
          name: Schema.NullOr(Schema.String),
          expiresAt: Schema.NullOr(Schema.Date),
          createdAt: Schema.Date
        }),
        Result: ApiKeyRow,
        execute: (k) =>
          sql`
          INSERT INTO api_keys (id, account_id, environment, digest, display, name, expires_at, created_at)
          VALUES (${k.id}, ${k.accountId}, ${k.environment}, ${k.digest}, ${k.display}, ${k.name}, ${k.expiresAt}, ${k.createdAt})
          RETURNING ${keyColumns}`
      })
      const findKeys = SqlSchema.findAll({
        Request: Schema.UndefinedOr(Schema.String),
        Result: ApiKeyRow,
        execute: (accountId) =>
          accountId === undefined
            ? sql`SELECT ${keyColumns} FROM api_keys ORDER BY created_at`
            : sql`SELECT ${keyColumns} FROM api_keys WHERE account_id = ${accountId} ORDER BY created_at`
      })
      const findKey = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: ApiKeyRow,
        execute: (keyId) => sql`SELECT ${keyColumns} FROM api_keys WHERE id = ${keyId}`
      })
      const revokeKeyRow = SqlSchema.findOneOption({
        Request: Schema.Struct({ keyId: Schema.String, at: Schema.Date }),
        Result: ApiKeyRow,
        execute: ({ at, keyId }) =>
          sql`
            UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ${at}) WHERE id = ${keyId}
            RETURNING ${keyColumns}`
      })
      const findKeyByDigest = SqlSchema.findOneOption({
        Request: Schema.Uint8Array,
        Result: KeyAuthRow,
        execute: (digest) =>
          sql`
            SELECT k.digest, k.id AS key_id, k.environment, k.expires_at, k.revoked_at,
                   a.id AS account_id, a.plan, a.status, a.rate_per_second, a.default_chain
            FROM api_keys k JOIN accounts a ON a.id = k.account_id
            WHERE k.digest = ${digest}`
      })

      const writeLastUsed = SqlSchema.void({
        Request: Schema.Array(Schema.Struct({ id: Schema.String, at: Schema.Date })),
        execute: (uses) =>
          sql`
          UPDATE api_keys k SET last_used_at = GREATEST(COALESCE(k.last_used_at, v.at), v.at)
          FROM jsonb_to_recordset(${JSON.stringify(uses)}::jsonb) AS v(id text, at timestamptz)
          WHERE k.id = v.id`
      })

      const get = Effect.fn("Accounts.get")(function*(accountId: string) {
        const account = yield* rowDefects(findAccount(accountId))
        if (Option.isNone(account)) return yield* new AccountNotFound({ accountId })
        return account.value
      })

      // Keys' last use: noted in memory per request (at most once a minute per key), written by a fiber.
      const noted = new Map<string, number>()
      const pending = new Map<string, number>()
      const noteUse = (keyId: string, now: number) => {
        const last = noted.get(keyId)
        if (last !== undefined && now - last < LAST_USED_EVERY_MS) return
        if (noted.size > 100_000) noted.clear()
        noted.set(keyId, now)
        pending.set(keyId, now)
      }
      const flushLastUsed = (atShutdown: boolean) =>
        Effect.suspend(() => {
          if (pending.size === 0) return Effect.void
          const uses = [...pending].map(([id, at]) => ({ id, at: new Date(at) }))
          pending.clear()
          return rowDefects(writeLastUsed(uses)).pipe(
            // Informational: a failed write is logged and the uses are forgotten (the next ones are written).
            // At shutdown a database already gone is expected, not a warning: Ctrl-C in a terminal signals
            // the whole process group, so `npm start`'s embedded PostgreSQL stops at the same moment as the
            // node; the uses of the last minute are then not recorded.
            Effect.catch((e) =>
              atShutdown && isConnectionFailure(e)
                ? Effect.logDebug("API keys' last use not recorded: the database stopped first", { keys: uses.length })
                : Effect.logWarning("could not record API keys' last use", { keys: uses.length, error: e.message })
            )
          )
        })
      yield* flushLastUsed(false).pipe(Effect.repeat(Schedule.spaced(LAST_USED_FLUSH)), Effect.forkScoped)
      yield* Effect.addFinalizer(() => flushLastUsed(true).pipe(Effect.timeout("2 seconds"), Effect.ignore))

      const setStatus = (accountId: string, status: "ACTIVE" | "SUSPENDED") =>
        Effect.gen(function*() {
          const account = yield* rowDefects(updateStatus({ accountId, status, at: clockDate() }))
          if (Option.isNone(account)) return yield* new AccountNotFound({ accountId })
          cache.clear()
          return account.value
        })

      const requireActive = (accountId: string) =>
        Effect.flatMap(get(accountId), (account) => account.status === "ACTIVE" ? Effect.succeed(account) : Effect.fail(new AccountNotActive({ accountId })))

      const insertKey = (accountId: string, environment: Environment, key: string, name?: string, expiresAt?: Date) =>
        rowDefects(insertKeyRow({
          id: newId("key"),
          accountId,
          environment,
          digest: apiKeyDigest(key),
          display: displayKey(key),
          name: name ?? null,
          expiresAt: expiresAt ?? null,
          createdAt: clockDate()
        }))

      const lookup = (token: string) =>
        Effect.gen(function*() {
          const parsed = parseApiKey(token)
          if (!parsed) return MALFORMED
          const digest = apiKeyDigest(token)
          const row = Option.getOrUndefined(yield* rowDefects(findKeyByDigest(digest)))
          // The index finds the row by digest; the comparison that decides is constant-time.
          if (!row || !digestsEqual(row.digest, digest)) return refused(new UnknownKey())
          if (row.revokedAt !== null) return refused(new RevokedKey())
          if (row.expiresAt !== null && row.expiresAt.getTime() <= clock.currentTimeMillisUnsafe()) return refused(new ExpiredKey())
          if (row.status !== "ACTIVE") return refused(new AccountInactive())
          const plan = Plans[row.plan]
          const principal: Principal = {
            accountId: row.accountId,
            keyId: row.keyId,
            environment: row.environment,
            plan: row.plan,
            perSecond: row.plan === "ENTERPRISE" ? (row.ratePerSecond ?? ENTERPRISE_DEFAULT_PER_SECOND) : plan.perSecond,
            monthlyQuota: plan.monthlyQuota,
            defaultChain: row.defaultChain
          }
          return accepted(principal)
        })

      return Accounts.of({
        createAccount: Effect.fn("Accounts.createAccount")((input) =>
          rowDefects(insertAccount({
            id: newId("acct"),
            name: input.name,
            email: input.email ?? null,
            plan: input.plan,
            ratePerSecond: input.ratePerSecond ?? null,
            defaultChain: input.defaultChain ?? "evm",
            createdAt: clockDate()
          }))
        ),
        activate: Effect.fn("Accounts.activate")((accountId) => setStatus(accountId, "ACTIVE")),
        suspend: Effect.fn("Accounts.suspend")((accountId) => setStatus(accountId, "SUSPENDED")),
        setPlan: Effect.fn("Accounts.setPlan")(function*(accountId, plan, ratePerSecond) {
          const account = yield* rowDefects(updatePlan({ accountId, plan, ratePerSecond }))
          if (Option.isNone(account)) return yield* new AccountNotFound({ accountId })
          cache.clear()
          return account.value
        }),
        get,
        list: rowDefects(findAccounts()).pipe(Effect.withSpan("Accounts.list")),
        createKey: Effect.fn("Accounts.createKey")(function*(input) {
          yield* requireActive(input.accountId)
          const key = generateApiKey(input.environment)
          const info = yield* insertKey(input.accountId, input.environment, key, input.name, input.expiresAt)
          return { key, info }
        }),
        importKey: Effect.fn("Accounts.importKey")(function*(input) {
          yield* requireActive(input.accountId)
          const parsed = parseApiKey(input.key)
          if (!parsed) return yield* Effect.die(new Error("importKey: not an API key"))
          return yield* insertKey(input.accountId, parsed.environment, input.key, input.name)
        }),
        listKeys: Effect.fn("Accounts.listKeys")((accountId) => rowDefects(findKeys(accountId))),
        getKey: Effect.fn("Accounts.getKey")(function*(keyId) {
          const info = yield* rowDefects(findKey(keyId))
          if (Option.isNone(info)) return yield* new ApiKeyNotFound({ keyId })
          return info.value
        }),
        revokeKey: Effect.fn("Accounts.revokeKey")(function*(keyId) {
          const info = yield* rowDefects(revokeKeyRow({ keyId, at: clockDate() }))
          if (Option.isNone(info)) return yield* new ApiKeyNotFound({ keyId })
          cache.clear()
          return info.value
        }),
        authenticate: (token) => {
          if (token === undefined || token === "") return MISSING
          if (!parseApiKey(token)) return MALFORMED
          const now = clock.currentTimeMillisUnsafe()
          const cacheKey = Crypto.hash("sha256", token, "base64")
          const hit = cache.get(cacheKey)
          if (hit && hit.expires > now) {
            if (Exit.isSuccess(hit.verdict)) noteUse(hit.verdict.value.keyId, now)
            return hit.verdict
          }
          // While the database cannot confirm a key, the last verification stands for AUTH_STALE_MS: a key
          // that worked keeps its own limits and headers during a stall instead of being treated as no key.
          const stale = hit !== undefined && now - hit.verifiedAt <= config.authStaleMillis ? hit : undefined
          if (!guard.isUp()) return stale !== undefined ? stale.verdict : guard.refuse
          // With a verification to fall back on, the database gets a short bound: a stall costs this request
          // 250 ms, not the whole deadline (which the handler's own statements need).
          return guard.bounded(lookup(token), stale !== undefined ? 250 : undefined).pipe(
            Effect.tap((verdict) =>
              Effect.sync(() => {
                if (Exit.isSuccess(verdict)) noteUse(verdict.value.keyId, now)
                if (cache.size > 10_000) cache.clear()
                cache.set(cacheKey, { verdict, expires: now + config.authCacheMillis, verifiedAt: now })
              })
            ),
            Effect.catch((e) =>
              stale !== undefined && (e instanceof DatabaseUnavailable || isConnectionFailure(e)) ? Effect.succeed(stale.verdict) : Effect.fail(e)
            ),
            // The verdict itself: the principal, or the refusal.
            Effect.flatMap((verdict) => verdict)
          )
        }
      })
    })
  )
}
