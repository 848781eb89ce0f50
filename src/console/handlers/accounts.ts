/** One account and its API keys (`consoleAccounts`, src/api/consoleAreas.ts): its members read, its admins change. */
import { Clock, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ConfiguredNetworks } from "../../anchoring/Networks.ts"
import { NetworkHealth } from "../../anchoring/NetworkHealth.ts"
import { Api } from "../../api/Api.ts"
import { ENTERPRISE_DEFAULT_PER_SECOND, monthStart, nextMonthStart, Plans } from "../../auth/plans.ts"
import { atEdge } from "../../db/errors.ts"
import { RecordStore } from "../../records/RecordStore.ts"
import { DeliveryLog } from "../../webhooks/DeliveryLog.ts"
import { ConsoleStats } from "../ConsoleStats.ts"
import { AccountInactive, ConsoleNotFound } from "../errors.ts"
import { consoleAccess, hidesSecrets, owner } from "./access.ts"
import { accountView, dayStart, keyView, networkStatus, ok, redactUrl } from "./views.ts"

export const ConsoleAccountsHttpLayer = HttpApiBuilder.group(Api, "consoleAccounts", (handlers) =>
  Effect.gen(function*() {
    const { accounts, access } = yield* consoleAccess
    const records = yield* RecordStore
    const deliveryLog = yield* DeliveryLog
    const health = yield* NetworkHealth
    const stats = yield* ConsoleStats
    const environmentOf = new Map((yield* ConfiguredNetworks).map((n) => [n.networkId, n.environment]))
    const now = Clock.currentTimeMillis

    return handlers
      .handle("account", ({ params }) => Effect.map(access(params.accountId, "read"), (a) => ok(accountView(a))).pipe(atEdge))
      .handle("overview", ({ params, query }) =>
        Effect.gen(function*() {
          const account = yield* access(params.accountId, "read")
          const hide = yield* hidesSecrets
          const at = new Date(yield* now)
          const month = monthStart(at)
          const used = yield* records.usage(account.id, month)
          const by = owner(account.id, query.environment)
          const failedRecords = yield* records.list(by, { limit: 5, status: "FAILED", includeDeleted: false })
          const failedDeliveries = yield* deliveryLog.list(by, { limit: 5, state: "FAILED" })
          const states = yield* health.snapshot
          return ok({
            account: accountView(account),
            environment: query.environment,
            usage: {
              month: month.slice(0, 7),
              used,
              quota: Plans[account.plan].monthlyQuota,
              resetsAt: nextMonthStart(at).toISOString(),
              perSecond: account.plan === "ENTERPRISE" ? (account.ratePerSecond ?? ENTERPRISE_DEFAULT_PER_SECOND) : Plans[account.plan].perSecond,
              daily: yield* stats.daily(account.id, dayStart(month))
            },
            records: (yield* stats.byStatus(account.id, query.environment)) as Record<"QUEUED" | "BATCHING" | "ANCHORED" | "FAILED" | "DELETED", number>,
            networks: states.filter((s) => environmentOf.get(s.networkId) === query.environment).map((s) => ({
              networkId: s.networkId,
              chainType: s.chainType,
              environment: query.environment,
              status: networkStatus(s),
              head: s.head === undefined ? null : s.head.toString(),
              lastError: s.lastError ?? null
            })),
            recentFailures: {
              records: failedRecords.map((r) => ({ recordId: r.id, hash: r.hash, networkId: r.networkId, updatedAt: r.updatedAt.toISOString() })),
              deliveries: failedDeliveries.map((d) => ({
                id: d.id,
                event: d.kind,
                url: hide ? redactUrl(d.url) : d.url,
                lastStatusCode: d.lastStatusCode,
                lastError: d.lastError,
                createdAt: d.createdAt.toISOString()
              }))
            }
          })
        }).pipe(atEdge))
      .handle("listKeys", ({ params }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "read")
          const at = yield* now
          const keys = yield* accounts.listKeys(params.accountId)
          return ok({ keys: [...keys].reverse().map((k) => keyView(k, at)) })
        }).pipe(atEdge))
      .handle("createKey", ({ params, payload }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "change")
          const at = yield* now
          const { key, info } = yield* accounts.createKey({
            accountId: params.accountId,
            environment: payload.environment,
            name: payload.name.trim(),
            expiresAt: payload.expiresInDays === undefined ? undefined : new Date(at + payload.expiresInDays * 86_400_000)
          }).pipe(
            Effect.catchTags({
              AccountNotFound: () => Effect.fail(new ConsoleNotFound({ what: `account ${params.accountId}` })),
              AccountNotActive: () => Effect.fail(new AccountInactive({ accountId: params.accountId }))
            })
          )
          return ok({ key, info: keyView(info, at) })
        }).pipe(atEdge))
      .handle("revokeKey", ({ params }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "change")
          const notFound = new ConsoleNotFound({ what: `API key ${params.keyId}` })
          const key = yield* accounts.getKey(params.keyId).pipe(Effect.catchTag("ApiKeyNotFound", () => Effect.fail(notFound)))
          if (key.accountId !== params.accountId) return yield* notFound
          const revoked = yield* accounts.revokeKey(params.keyId).pipe(Effect.catchTag("ApiKeyNotFound", () => Effect.fail(notFound)))
          return ok(keyView(revoked, yield* now))
        }).pipe(atEdge))
  }))
