/**
 * What `anchord accounts`, `keys` and `users` run against the node's database. Loaded by
 * ./commands.ts only when one of these commands runs (not for `--help`).
 */
import { Console, Effect, Layer, Option } from "effect"
import { Accounts } from "../auth/Accounts.ts"
import type { PlanName } from "../auth/plans.ts"
import { ConsoleAuth } from "../console/ConsoleAuth.ts"
import { ConsoleCoreLayer } from "../console/layer.ts"
import { linkPath } from "../console/Links.ts"
import { ConsoleUsers } from "../console/Users.ts"
import { AppConfig } from "../config.ts"
import { listenerUrl, servesTls } from "../http/publicUrl.ts"
import { runningNodeUrl } from "../http/runningNode.ts"
import { CoreLayer, withConfig } from "../app/layers.ts"

/** Operator commands: a refused operation prints its reason (no stack) and exits 1. */
const withCore = <A, E extends { readonly message: string }>(effect: Effect.Effect<A, E, Accounts>) =>
  effect.pipe(
    Effect.catch((error) =>
      Effect.andThen(Console.error(`error: ${error.message}`), Effect.sync(() => {
        process.exitCode = 1
      }))
    ),
    Effect.provide(withConfig(CoreLayer))
  )
const print = (asJson: boolean, value: unknown, text: string) => Console.log(asJson ? JSON.stringify(value, null, 2) : text)

export const accountsCreate = (o: {
  readonly name: string
  readonly email: Option.Option<string>
  readonly plan: PlanName
  readonly ratePerSecond: Option.Option<number>
  readonly chain: "evm" | "fabric" | "hybrid"
  readonly activate: boolean
  readonly json: boolean
}) =>
  withCore(Effect.gen(function*() {
    const accounts = yield* Accounts
    let account = yield* accounts.createAccount({
      name: o.name,
      email: Option.getOrUndefined(o.email),
      plan: o.plan,
      ratePerSecond: Option.getOrUndefined(o.ratePerSecond),
      defaultChain: o.chain
    })
    if (o.activate) account = yield* accounts.activate(account.id).pipe(Effect.orDie)
    yield* print(o.json, account, `${account.id}  ${account.plan}  ${account.status}  ${account.name}`)
  }))

export const accountsActivate = (o: { readonly accountId: string; readonly json: boolean }) =>
  withCore(Effect.gen(function*() {
    const account = yield* (yield* Accounts).activate(o.accountId)
    yield* print(o.json, account, `${account.id} is ACTIVE`)
  }))

export const accountsSuspend = (o: { readonly accountId: string; readonly json: boolean }) =>
  withCore(Effect.gen(function*() {
    const account = yield* (yield* Accounts).suspend(o.accountId)
    yield* print(o.json, account, `${account.id} is SUSPENDED (its keys no longer authenticate)`)
  }))

export const accountsPlan = (o: {
  readonly accountId: string
  readonly plan: PlanName
  readonly ratePerSecond: Option.Option<number>
  readonly json: boolean
}) =>
  withCore(Effect.gen(function*() {
    const account = yield* (yield* Accounts).setPlan(o.accountId, o.plan, Option.getOrUndefined(o.ratePerSecond))
    yield* print(o.json, account, `${account.id} is on ${account.plan}`)
  }))

export const accountsList = (o: { readonly json: boolean }) =>
  withCore(Effect.gen(function*() {
    const list = yield* (yield* Accounts).list
    yield* print(o.json, list, list.map((a) => `${a.id}  ${a.plan.padEnd(10)}  ${a.status.padEnd(8)}  ${a.name}`).join("\n") || "(no accounts)")
  }))

export const keysCreate = (o: {
  readonly accountId: string
  readonly environment: "test" | "live"
  readonly name: Option.Option<string>
  readonly expiresInDays: Option.Option<number>
  readonly json: boolean
}) =>
  withCore(Effect.gen(function*() {
    const { key, info } = yield* (yield* Accounts).createKey({
      accountId: o.accountId,
      environment: o.environment,
      name: Option.getOrUndefined(o.name),
      expiresAt: Option.getOrUndefined(Option.map(o.expiresInDays, (d) => new Date(Date.now() + d * 86_400_000)))
    })
    yield* print(o.json, { key, ...info }, `${key}\n(shown once: store it now)  id=${info.id}`)
  }))

export const keysList = (o: { readonly accountId: Option.Option<string>; readonly json: boolean }) =>
  withCore(Effect.gen(function*() {
    const keys = yield* (yield* Accounts).listKeys(Option.getOrUndefined(o.accountId))
    yield* print(
      o.json,
      keys,
      keys.map((k) =>
        `${k.id}  ${k.display}  ${k.environment}  ${k.revokedAt ? "revoked" : k.expiresAt && k.expiresAt < new Date() ? "expired" : "active"}  ${k.accountId}`
      ).join("\n") || "(no keys)"
    )
  }))

export const keysRevoke = (o: { readonly keyId: string; readonly json: boolean }) =>
  withCore(Effect.gen(function*() {
    const info = yield* (yield* Accounts).revokeKey(o.keyId)
    yield* print(o.json, info, `${info.id} revoked`)
  }))

/** Console users (SPEC 9): one-time links printed for the operator to hand over. */
const withConsole = <A, E extends { readonly message: string }>(effect: Effect.Effect<A, E, Accounts | ConsoleAuth | ConsoleUsers | AppConfig>) =>
  effect.pipe(
    Effect.catch((error) =>
      Effect.andThen(Console.error(`error: ${error.message}`), Effect.sync(() => {
        process.exitCode = 1
      }))
    ),
    Effect.provide(withConfig(ConsoleCoreLayer.pipe(Layer.provideMerge(CoreLayer))))
  )

/**
 * Links point at PUBLIC_URL (set it to the address people use), else at the node running on this data
 * directory (its address as it listens, e.g. `PORT=8180 npm start`'s), else at http(s)://HOST:PORT.
 */
const linkUrl = (kind: "invitation" | "sign-in", token: string) =>
  Effect.map(AppConfig, (config) =>
    `${
      Option.getOrElse(config.baseUrl, () => runningNodeUrl(config.dataDir) ?? listenerUrl(config.host, config.port, servesTls(config))).replace(/\/+$/, "")
    }${linkPath(kind, token)}`)

const printLink = (asJson: boolean, kind: "invitation" | "sign-in", link: { readonly token: string; readonly expiresAt: Date }, what: string) =>
  Effect.flatMap(linkUrl(kind, link.token), (url) =>
    print(asJson, { url, expiresAt: link.expiresAt.toISOString() },
      `${url}\n(${what}; one-time, valid until ${link.expiresAt.toISOString()}: hand it over privately)`))

export const usersInvite = (o: { readonly accountId: string; readonly email: string; readonly role: "admin" | "viewer"; readonly json: boolean }) =>
  withConsole(Effect.gen(function*() {
    const link = yield* (yield* ConsoleAuth).createLink({ kind: "invitation", email: o.email,
      target: { operator: false, accountId: o.accountId, role: o.role } })
    yield* printLink(o.json, "invitation", link, `invitation of ${o.email} as ${o.role} of ${o.accountId}`)
  }))

export const usersInviteOperator = (o: { readonly email: string; readonly json: boolean }) =>
  withConsole(Effect.gen(function*() {
    const link = yield* (yield* ConsoleAuth).createLink({ kind: "invitation", email: o.email, target: { operator: true } })
    yield* printLink(o.json, "invitation", link, `invitation of ${o.email} as an operator`)
  }))

export const usersSignInLink = (o: { readonly email: string; readonly json: boolean }) =>
  withConsole(Effect.gen(function*() {
    const user = yield* (yield* ConsoleUsers).byEmail(o.email)
    if (user === undefined) return yield* Effect.fail({ message: `no console user ${o.email}` })
    const link = yield* (yield* ConsoleAuth).createLink({
      kind: "sign-in",
      email: o.email,
      target: user.operator ? { operator: true } : { operator: false, accountId: user.accountId!, role: user.role! }
    })
    yield* printLink(o.json, "sign-in", link, `sign-in link of ${o.email}`)
  }))

export const usersList = (o: { readonly accountId: Option.Option<string>; readonly json: boolean }) =>
  withConsole(Effect.gen(function*() {
    const users = yield* ConsoleUsers
    const list = Option.isSome(o.accountId) ? yield* users.members(o.accountId.value) : [...yield* users.operators]
    const view = list.map(({ passwordHash: _, ...u }) => u)
    yield* print(o.json, view, view.map((u) => `${u.id}  ${u.email}  ${u.operator ? "operator" : `${u.role} of ${u.accountId}`}`).join("\n") || "(no users)")
  }))
