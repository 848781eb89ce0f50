/**
 * Accounts and API keys (src/auth/Accounts.ts) and the quota headers' usage (src/auth/UsageCache.ts)
 * in memory, behind the same service tags and interfaces. What a key authenticates as, and why one is
 * refused, follow the SQL store's lookup; the auth cache and the last-use writes have nothing to save here.
 */
import * as Crypto from "node:crypto"
import { Clock, Effect, Layer } from "effect"
import type { Principal } from "../../../src/api/auth.ts"
import { type Account, Accounts, type ApiKeyInfo } from "../../../src/auth/Accounts.ts"
import { apiKeyDigest, digestsEqual, displayKey, generateApiKey, parseApiKey } from "../../../src/auth/apiKeys.ts"
import { AccountInactive, AccountNotActive, AccountNotFound, ApiKeyNotFound, AuthRefused, ExpiredKey, MalformedKey, MissingKey, RevokedKey,
  UnknownKey } from "../../../src/auth/errors.ts"
import { currentMonth, ENTERPRISE_DEFAULT_PER_SECOND, Plans } from "../../../src/auth/plans.ts"
import { UsageCache } from "../../../src/auth/UsageCache.ts"
import { type KeyRow, MemoryTables, settingsKey } from "./tables.ts"
import { newSecret } from "./webhooks.ts"

const newId = (prefix: string) => `${prefix}_${Crypto.randomBytes(8).toString("hex")}`

const info = ({ digest: _digest, ...row }: KeyRow): ApiKeyInfo => row

export const AccountsMemory = Layer.effect(
  Accounts,
  Effect.gen(function*() {
    const tables = yield* MemoryTables
    const clock = yield* Clock.Clock
    const now = () => new Date(clock.currentTimeMillisUnsafe())

    const get = (accountId: string) => {
      const account = tables.accounts.get(accountId)
      return account === undefined ? Effect.fail(new AccountNotFound({ accountId })) : Effect.succeed(account)
    }
    const change = (accountId: string, f: (account: Account) => Account) =>
      Effect.map(get(accountId), (account) => {
        const changed = f(account)
        tables.accounts.set(accountId, changed)
        return changed
      })
    const requireActive = (accountId: string) =>
      Effect.flatMap(get(accountId), (account) => account.status === "ACTIVE" ? Effect.succeed(account) : Effect.fail(new AccountNotActive({ accountId })))
    const insertKey = (accountId: string, key: string, name?: string, expiresAt?: Date): ApiKeyInfo => {
      const row: KeyRow = {
        id: newId("key"),
        accountId,
        environment: parseApiKey(key)!.environment,
        display: displayKey(key),
        name: name ?? null,
        createdAt: now(),
        expiresAt: expiresAt ?? null,
        revokedAt: null,
        lastUsedAt: null,
        digest: apiKeyDigest(key)
      }
      tables.apiKeys.set(row.id, row)
      return info(row)
    }
    const getKey = (keyId: string) => {
      const row = tables.apiKeys.get(keyId)
      return row === undefined ? Effect.fail(new ApiKeyNotFound({ keyId })) : Effect.succeed(row)
    }

    return Accounts.of({
      createAccount: (input) =>
        Effect.sync(() => {
          const account: Account = {
            id: newId("acct"),
            name: input.name,
            email: input.email ?? null,
            plan: input.plan,
            status: "PENDING",
            ratePerSecond: input.ratePerSecond ?? null,
            defaultChain: input.defaultChain ?? "evm",
            createdAt: now(),
            activatedAt: null
          }
          tables.accounts.set(account.id, account)
          // As the trigger on `accounts` does (migrations 0007, 0013): settings for both environments.
          for (const environment of ["test", "live"] as const) {
            tables.webhookSettings.set(settingsKey(account.id, environment), {
              url: null,
              events: ["anchor.confirmed", "anchor.failed", "record.updated", "record.deleted"],
              payloadFormat: "multichain",
              enabled: false,
              secret: newSecret(),
              previousSecret: null,
              rotatedAt: null,
              deliveryMode: "single",
              batchMaxEvents: 100,
              batchMaxWaitMs: 0
            })
          }
          return account
        }),
      activate: (accountId) => change(accountId, (a) => ({ ...a, status: "ACTIVE", activatedAt: a.activatedAt ?? now() })),
      suspend: (accountId) => change(accountId, (a) => ({ ...a, status: "SUSPENDED" })),
      setPlan: (accountId, plan, ratePerSecond) =>
        change(accountId, (a) => ({
          ...a,
          plan,
          ratePerSecond: plan !== "ENTERPRISE" ? null : ratePerSecond === undefined ? a.ratePerSecond : ratePerSecond
        })),
      get,
      list: Effect.sync(() => [...tables.accounts.values()]),
      createKey: (input) =>
        Effect.map(requireActive(input.accountId), () => {
          const key = generateApiKey(input.environment)
          return { key, info: insertKey(input.accountId, key, input.name, input.expiresAt) }
        }),
      importKey: (input) =>
        Effect.flatMap(requireActive(input.accountId), () =>
          parseApiKey(input.key) ? Effect.succeed(insertKey(input.accountId, input.key, input.name)) : Effect.die(new Error("importKey: not an API key"))),
      listKeys: (accountId) => Effect.sync(() => [...tables.apiKeys.values()].filter((k) => accountId === undefined || k.accountId === accountId).map(info)),
      getKey: (keyId) => Effect.map(getKey(keyId), info),
      revokeKey: (keyId) =>
        Effect.map(getKey(keyId), (row) => {
          const revoked = { ...row, revokedAt: row.revokedAt ?? now() }
          tables.apiKeys.set(keyId, revoked)
          return info(revoked)
        }),
      authenticate: (token) =>
        Effect.suspend(() => {
          const refuse = (reason: AuthRefused["reason"]) => Effect.fail(new AuthRefused({ reason }))
          if (token === undefined || token === "") return refuse(new MissingKey())
          if (!parseApiKey(token)) return refuse(new MalformedKey())
          const digest = apiKeyDigest(token)
          const row = [...tables.apiKeys.values()].find((k) => digestsEqual(k.digest, digest))
          if (row === undefined) return refuse(new UnknownKey())
          if (row.revokedAt !== null) return refuse(new RevokedKey())
          if (row.expiresAt !== null && row.expiresAt.getTime() <= clock.currentTimeMillisUnsafe()) return refuse(new ExpiredKey())
          const account = tables.accounts.get(row.accountId)!
          if (account.status !== "ACTIVE") return refuse(new AccountInactive())
          const principal: Principal = {
            accountId: account.id,
            keyId: row.id,
            environment: row.environment,
            plan: account.plan,
            perSecond: account.plan === "ENTERPRISE" ? (account.ratePerSecond ?? ENTERPRISE_DEFAULT_PER_SECOND) : Plans[account.plan].perSecond,
            monthlyQuota: Plans[account.plan].monthlyQuota,
            defaultChain: account.defaultChain
          }
          return Effect.succeed(principal)
        })
    })
  })
)

/** This month's usage, read from the usage table every time (the SQL one caches it for a second). */
export const UsageCacheMemory = Layer.effect(
  UsageCache,
  Effect.gen(function*() {
    const tables = yield* MemoryTables
    const clock = yield* Clock.Clock
    const key = (accountId: string) => `${accountId} ${currentMonth(clock.currentTimeMillisUnsafe()).month}`
    return UsageCache.of({
      get: (accountId) => Effect.sync(() => tables.usage.get(key(accountId)) ?? 0),
      // The writer has already counted the records in the table.
      observe: () => undefined
    })
  })
)
