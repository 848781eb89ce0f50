/** Operators only (`consoleOperators`, src/api/consoleAreas.ts): every account, creating accounts, plans, suspension, networks. */
import { Clock, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { leaderLockKey } from "../../anchoring/Leadership.ts"
import { ConfiguredNetworks } from "../../anchoring/Networks.ts"
import { NetworkHealth } from "../../anchoring/NetworkHealth.ts"
import { Api } from "../../api/Api.ts"
import { atEdge } from "../../db/errors.ts"
import { ConsoleStats } from "../ConsoleStats.ts"
import { consoleAccess } from "./access.ts"
import { accountView, iso, networkStatus, ok } from "./views.ts"

export const ConsoleOperatorsHttpLayer = HttpApiBuilder.group(Api, "consoleOperators", (handlers) =>
  Effect.gen(function*() {
    const { accounts, getAccount, operatorOnly } = yield* consoleAccess
    const health = yield* NetworkHealth
    const stats = yield* ConsoleStats
    const environmentOf = new Map((yield* ConfiguredNetworks).map((n) => [n.networkId, n.environment]))
    const now = Clock.currentTimeMillis

    return handlers
      .handle("listAccounts", () =>
        Effect.gen(function*() {
          yield* operatorOnly
          return ok({ accounts: (yield* accounts.list).map(accountView) })
        }).pipe(atEdge))
      .handle("createAccount", ({ payload }) =>
        Effect.gen(function*() {
          yield* operatorOnly
          let account = yield* accounts.createAccount({
            name: payload.name.trim(),
            email: payload.email?.trim() || undefined,
            plan: payload.plan,
            ratePerSecond: payload.plan === "ENTERPRISE" ? payload.ratePerSecond : undefined,
            defaultChain: payload.defaultChain
          })
          if (payload.activate === true) account = yield* getAccount(account.id).pipe(Effect.andThen(accounts.activate(account.id)), Effect.orDie)
          return ok(accountView(account))
        }).pipe(atEdge))
      .handle("activateAccount", ({ params }) =>
        Effect.gen(function*() {
          yield* operatorOnly
          yield* getAccount(params.accountId)
          return ok(accountView(yield* accounts.activate(params.accountId).pipe(Effect.orDie)))
        }).pipe(atEdge))
      .handle("suspendAccount", ({ params }) =>
        Effect.gen(function*() {
          yield* operatorOnly
          yield* getAccount(params.accountId)
          return ok(accountView(yield* accounts.suspend(params.accountId).pipe(Effect.orDie)))
        }).pipe(atEdge))
      .handle("changePlan", ({ params, payload }) =>
        Effect.gen(function*() {
          yield* operatorOnly
          yield* getAccount(params.accountId)
          return ok(accountView(yield* accounts.setPlan(params.accountId, payload.plan, payload.ratePerSecond).pipe(Effect.orDie)))
        }).pipe(atEdge))
      .handle("networks", () =>
        Effect.gen(function*() {
          yield* operatorOnly
          const at = yield* now
          const states = yield* health.snapshot
          const views = yield* Effect.forEach(states, (s) =>
            Effect.gen(function*() {
              const backlog = yield* stats.backlog(s.networkId)
              const signer = yield* stats.signer(s.networkId)
              // A follower asks the lock table who leads; a failed lookup is "unknown", not an error page.
              const holder = s.leader ? undefined : yield* stats.leader(leaderLockKey(s.chainType, s.networkId)).pipe(
                Effect.map((h) => h ?? null),
                Effect.orElseSucceed(() => "unknown" as const)
              )
              return {
                networkId: s.networkId,
                chainType: s.chainType,
                environment: environmentOf.get(s.networkId) ?? "test",
                leader: s.leader,
                ledBy: s.leader
                  ? "this-node" as const
                  : holder === "unknown"
                  ? "unknown" as const
                  : holder === null
                  ? "no-node" as const
                  : "another-node" as const,
                leaderAddress: typeof holder === "object" && holder !== null ? holder.clientAddress : null,
                leaderSince: typeof holder === "object" && holder !== null ? holder.since.toISOString() : null,
                rpc: s.rpc,
                status: networkStatus(s),
                head: s.head === undefined ? null : s.head.toString(),
                lastError: s.lastError ?? null,
                lastChangeAt: new Date(s.lastChangeAt).toISOString(),
                queued: backlog.queued,
                unconfirmedBatches: backlog.unconfirmedBatches,
                confirmationLagSeconds: backlog.oldestUnconfirmedSentAt === null
                  ? null
                  : Math.max(0, Math.round((at - backlog.oldestUnconfirmedSentAt.getTime()) / 1000)),
                lastConfirmedAt: iso(backlog.lastConfirmedAt),
                signer: signer ?? null
              }
            }), { concurrency: 4 })
          return ok({ networks: views })
        }).pipe(atEdge))
  }))
