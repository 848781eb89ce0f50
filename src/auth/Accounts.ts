/**
 * Accounts, plans and API keys (SPEC 2): the operator's side (CLI) and the request side
 * (`authenticate`, with a short in-memory cache so the hot path does not query per request).
 */
import * as Crypto from "node:crypto"
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config.ts"
import { type Environment, apiKeyDigest, digestsEqual, displayKey, generateApiKey, parseApiKey } from "./apiKeys.ts"
import { AccountNotActive, AccountNotFound, ApiKeyNotFound, type AuthFailureReason } from "./errors.ts"
import { ENTERPRISE_DEFAULT_PER_SECOND, type PlanName, Plans } from "./plans.ts"
import { newWebhookSecret } from "../webhooks/standard.ts"

export interface Account {
  readonly id: string
  readonly name: string
  readonly email: string | null
  readonly plan: PlanName
  readonly status: "PENDING" | "ACTIVE" | "SUSPENDED"
  readonly ratePerSecond: number | null
  readonly defaultChain: "evm" | "fabric" | "hybrid"
  readonly createdAt: Date
  readonly activatedAt: Date | null
}

export interface ApiKeyInfo {
  readonly id: string
  readonly accountId: string
  readonly environment: Environment
  readonly display: string
  readonly name: string | null
  readonly createdAt: Date
  readonly expiresAt: Date | null
  readonly revokedAt: Date | null
}

/** Who is calling: resolved from a valid bearer key. */
export interface Principal {
  readonly accountId: string
  readonly keyId: string
  readonly environment: Environment
  readonly plan: PlanName
  readonly perSecond: number
  /** null = unlimited */
  readonly monthlyQuota: number | null
  readonly defaultChain: "evm" | "fabric" | "hybrid"
}

export type AuthResult =
  | { readonly _tag: "Ok"; readonly principal: Principal }
  | { readonly _tag: "Rejected"; readonly reason: AuthFailureReason }

const newId = (prefix: string) => `${prefix}_${Crypto.randomBytes(8).toString("hex")}`

export class Accounts extends Context.Service<Accounts, {
  readonly createAccount: (input: {
    readonly name: string
    readonly email?: string | undefined
    readonly plan: PlanName
    readonly ratePerSecond?: number | undefined
    readonly defaultChain?: "evm" | "fabric" | "hybrid" | undefined
  }) => Effect.Effect<Account>
  readonly activate: (accountId: string) => Effect.Effect<Account, AccountNotFound>
  readonly get: (accountId: string) => Effect.Effect<Account, AccountNotFound>
  readonly list: Effect.Effect<ReadonlyArray<Account>>
  readonly createKey: (input: {
    readonly accountId: string
    readonly environment: Environment
    readonly name?: string | undefined
    readonly expiresAt?: Date | undefined
  }) => Effect.Effect<{ readonly key: string; readonly info: ApiKeyInfo }, AccountNotFound | AccountNotActive>
  /** Registers a key the caller generated (the dev node keeps its own key across restarts). */
  readonly importKey: (input: {
    readonly accountId: string
    readonly key: string
    readonly name?: string | undefined
  }) => Effect.Effect<ApiKeyInfo, AccountNotFound | AccountNotActive>
  readonly listKeys: (accountId?: string) => Effect.Effect<ReadonlyArray<ApiKeyInfo>>
  readonly revokeKey: (keyId: string) => Effect.Effect<ApiKeyInfo, ApiKeyNotFound>
  /** Resolves `Authorization: Bearer <token>`; never logs or echoes the token. */
  readonly authenticate: (token: string | undefined) => Effect.Effect<AuthResult>
}>()("anchord/auth/Accounts") {
  static readonly layer = Layer.effect(
    Accounts,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const config = yield* AppConfig
      // Key expiry and the auth cache on the node's Clock, read without an effect step (every request).
      const clock = yield* Clock.Clock
      const cache = new Map<string, { readonly result: AuthResult; readonly expires: number }>()

      const accountColumns = sql`id, name, email, plan, status, rate_per_second, default_chain, created_at, activated_at`
      const keyColumns = sql`id, account_id, environment, display, name, created_at, expires_at, revoked_at`

      const get = (accountId: string) =>
        sql<Account>`SELECT ${accountColumns} FROM accounts WHERE id = ${accountId}`.pipe(
          Effect.orDie,
          Effect.flatMap((rows) => rows.length === 0 ? Effect.fail(new AccountNotFound({ accountId })) : Effect.succeed(rows[0]))
        )

      const requireActive = (accountId: string) =>
        Effect.flatMap(get(accountId), (account) =>
          account.status === "ACTIVE" ? Effect.succeed(account) : Effect.fail(new AccountNotActive({ accountId })))

      const insertKey = (accountId: string, environment: Environment, key: string, name?: string, expiresAt?: Date) =>
        sql<ApiKeyInfo>`
          INSERT INTO api_keys (id, account_id, environment, digest, display, name, expires_at)
          VALUES (${newId("key")}, ${accountId}, ${environment}, ${apiKeyDigest(key)}, ${displayKey(key)},
                  ${name ?? null}, ${expiresAt ?? null})
          RETURNING ${keyColumns}`.pipe(Effect.orDie, Effect.map((rows) => rows[0]))

      const lookup = (token: string) =>
        Effect.gen(function*() {
          const parsed = parseApiKey(token)
          if (!parsed) return { _tag: "Rejected", reason: "malformed" } as const
          const digest = apiKeyDigest(token)
          const rows = yield* sql<{
            digest: Uint8Array
            keyId: string
            environment: Environment
            expiresAt: Date | null
            revokedAt: Date | null
            accountId: string
            plan: PlanName
            status: string
            ratePerSecond: number | null
            defaultChain: "evm" | "fabric" | "hybrid"
          }>`
            SELECT k.digest, k.id AS key_id, k.environment, k.expires_at, k.revoked_at,
                   a.id AS account_id, a.plan, a.status, a.rate_per_second, a.default_chain
            FROM api_keys k JOIN accounts a ON a.id = k.account_id
            WHERE k.digest = ${digest}`
          const row = rows[0]
          // The index finds the row by digest; the comparison that decides is constant-time.
          if (!row || !digestsEqual(row.digest, digest)) return { _tag: "Rejected", reason: "unknown" } as const
          if (row.revokedAt !== null) return { _tag: "Rejected", reason: "revoked" } as const
          if (row.expiresAt !== null && row.expiresAt.getTime() <= clock.currentTimeMillisUnsafe()) {
            return { _tag: "Rejected", reason: "expired" } as const
          }
          if (row.status !== "ACTIVE") return { _tag: "Rejected", reason: "account_inactive" } as const
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
          return { _tag: "Ok", principal } as const
        })

      return Accounts.of({
        createAccount: (input) =>
          sql<Account>`
            INSERT INTO accounts (id, name, email, plan, rate_per_second, default_chain, webhook_secret)
            VALUES (${newId("acct")}, ${input.name}, ${input.email ?? null}, ${input.plan},
                    ${input.ratePerSecond ?? null}, ${input.defaultChain ?? "evm"}, ${newWebhookSecret()})
            RETURNING ${accountColumns}`.pipe(Effect.orDie, Effect.map((rows) => rows[0])),
        activate: (accountId) =>
          sql<Account>`
            UPDATE accounts SET status = 'ACTIVE', activated_at = COALESCE(activated_at, now())
            WHERE id = ${accountId} RETURNING ${accountColumns}`.pipe(
            Effect.orDie,
            Effect.flatMap((rows) => rows.length === 0 ? Effect.fail(new AccountNotFound({ accountId })) : Effect.succeed(rows[0])),
            Effect.tap(() => Effect.sync(() => cache.clear()))
          ),
        get,
        list: sql<Account>`SELECT ${accountColumns} FROM accounts ORDER BY created_at`.pipe(Effect.orDie),
        createKey: (input) =>
          Effect.gen(function*() {
            yield* requireActive(input.accountId)
            const key = generateApiKey(input.environment)
            const info = yield* insertKey(input.accountId, input.environment, key, input.name, input.expiresAt)
            return { key, info }
          }),
        importKey: (input) =>
          Effect.gen(function*() {
            yield* requireActive(input.accountId)
            const parsed = parseApiKey(input.key)
            if (!parsed) return yield* Effect.die(new Error("importKey: not an API key"))
            return yield* insertKey(input.accountId, parsed.environment, input.key, input.name)
          }),
        listKeys: (accountId) =>
          (accountId === undefined
            ? sql<ApiKeyInfo>`SELECT ${keyColumns} FROM api_keys ORDER BY created_at`
            : sql<ApiKeyInfo>`SELECT ${keyColumns} FROM api_keys WHERE account_id = ${accountId} ORDER BY created_at`)
            .pipe(Effect.orDie),
        revokeKey: (keyId) =>
          sql<ApiKeyInfo>`
            UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = ${keyId}
            RETURNING ${keyColumns}`.pipe(
            Effect.orDie,
            Effect.flatMap((rows) => rows.length === 0 ? Effect.fail(new ApiKeyNotFound({ keyId })) : Effect.succeed(rows[0])),
            Effect.tap(() => Effect.sync(() => cache.clear()))
          ),
        authenticate: (token) => {
          if (token === undefined || token === "") return Effect.succeed({ _tag: "Rejected", reason: "missing" })
          if (!parseApiKey(token)) return Effect.succeed({ _tag: "Rejected", reason: "malformed" })
          const now = clock.currentTimeMillisUnsafe()
          const cacheKey = Crypto.hash("sha256", token, "base64")
          const hit = cache.get(cacheKey)
          if (hit && hit.expires > now) return Effect.succeed(hit.result)
          return Effect.tap(Effect.orDie(lookup(token)), (result) =>
            Effect.sync(() => {
              if (cache.size > 10_000) cache.clear()
              cache.set(cacheKey, { result, expires: now + config.authCacheMillis })
            }))
        }
      })
    })
  )
}
