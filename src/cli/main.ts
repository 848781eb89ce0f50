#!/usr/bin/env node
/** The `anchord` command line (SPEC 8): start, dev, migrate, accounts, keys. */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Console, Effect, Layer, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { Accounts } from "../auth/Accounts.ts"
import { PlanNames } from "../auth/plans.ts"
import { AppConfig } from "../config.ts"
import { DatabaseLive } from "../db/Database.ts"
import { CoreLayer, NodeLayer, withConfig } from "../main.ts"
import { VERSION } from "../version.ts"
import { ensureDevAccount, printBanner } from "./dev.ts"

const runNode = (dev: boolean) =>
  Effect.gen(function*() {
    const config = yield* AppConfig
    const baseUrl = Option.getOrElse(config.baseUrl, () => `http://${config.host}:${config.port}`)
    if (dev) {
      const info = yield* ensureDevAccount.pipe(Effect.provide(CoreLayer))
      yield* printBanner({ baseUrl, ...info })
    }
    yield* Effect.logInfo("anchord listening", { url: baseUrl, version: VERSION })
    return yield* Layer.launch(NodeLayer)
  })

const start = Command.make("start", {}, () => runNode(false).pipe(Effect.provide(AppConfig.layer))).pipe(
  Command.withDescription("Run the node (production): everything from environment variables")
)

const dev = Command.make("dev", {}, () => runNode(true).pipe(Effect.provide(AppConfig.layer))).pipe(
  Command.withDescription("Run a local node: embedded PostgreSQL, local chains, a test account and key")
)

const migrate = Command.make("migrate", {}, () =>
  Effect.gen(function*() {
    yield* Console.log("migrations applied")
  }).pipe(Effect.provide(withConfig(DatabaseLive)))).pipe(Command.withDescription("Apply database migrations"))

const withCore = <A, E>(effect: Effect.Effect<A, E, Accounts>) => effect.pipe(Effect.provide(withConfig(CoreLayer)))
const json = Flag.Boolean("json").pipe(Flag.withDefault(false), Flag.withDescription("Print JSON"))
const print = (asJson: boolean, value: unknown, text: string) => Console.log(asJson ? JSON.stringify(value, null, 2) : text)

const accountsCreate = Command.make("create", {
  name: Argument.String("name"),
  email: Flag.String("email").pipe(Flag.optional),
  plan: Flag.Literals("plan", PlanNames).pipe(Flag.withDefault("FREE" as const)),
  ratePerSecond: Flag.Int("rate-per-second").pipe(Flag.optional, Flag.withDescription("ENTERPRISE only")),
  chain: Flag.Literals("default-chain", ["evm", "fabric", "hybrid"]).pipe(Flag.withDefault("evm" as const)),
  activate: Flag.Boolean("activate").pipe(Flag.withDefault(false)),
  json
}, (o) =>
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
  })))

const accountsActivate = Command.make("activate", { accountId: Argument.String("account-id"), json }, (o) =>
  withCore(Effect.gen(function*() {
    const account = yield* (yield* Accounts).activate(o.accountId)
    yield* print(o.json, account, `${account.id} is ACTIVE`)
  })))

const accountsList = Command.make("list", { json }, (o) =>
  withCore(Effect.gen(function*() {
    const list = yield* (yield* Accounts).list
    yield* print(o.json, list, list.map((a) => `${a.id}  ${a.plan.padEnd(10)}  ${a.status.padEnd(8)}  ${a.name}`).join("\n") || "(no accounts)")
  })))

const keysCreate = Command.make("create", {
  accountId: Argument.String("account-id"),
  environment: Flag.Literals("env", ["test", "live"]).pipe(Flag.withDefault("test" as const)),
  name: Flag.String("name").pipe(Flag.optional),
  expiresInDays: Flag.Int("expires-in-days").pipe(Flag.optional),
  json
}, (o) =>
  withCore(Effect.gen(function*() {
    const { key, info } = yield* (yield* Accounts).createKey({
      accountId: o.accountId,
      environment: o.environment,
      name: Option.getOrUndefined(o.name),
      expiresAt: Option.getOrUndefined(Option.map(o.expiresInDays, (d) => new Date(Date.now() + d * 86_400_000)))
    })
    yield* print(o.json, { key, ...info }, `${key}\n(shown once: store it now)  id=${info.id}`)
  })))

const keysList = Command.make("list", { accountId: Argument.String("account-id").pipe(Argument.optional), json }, (o) =>
  withCore(Effect.gen(function*() {
    const keys = yield* (yield* Accounts).listKeys(Option.getOrUndefined(o.accountId))
    yield* print(
      o.json,
      keys,
      keys.map((k) =>
        `${k.id}  ${k.display}  ${k.environment}  ${k.revokedAt ? "revoked" : k.expiresAt && k.expiresAt < new Date() ? "expired" : "active"}  ${k.accountId}`
      ).join("\n") || "(no keys)"
    )
  })))

const keysRevoke = Command.make("revoke", { keyId: Argument.String("key-id"), json }, (o) =>
  withCore(Effect.gen(function*() {
    const info = yield* (yield* Accounts).revokeKey(o.keyId)
    yield* print(o.json, info, `${info.id} revoked`)
  })))

const accounts = Command.make("accounts").pipe(
  Command.withDescription("Manage accounts"),
  Command.withSubcommands([accountsCreate, accountsActivate, accountsList])
)
const keys = Command.make("keys").pipe(
  Command.withDescription("Manage API keys"),
  Command.withSubcommands([keysCreate, keysList, keysRevoke])
)

export const cli = Command.make("anchord").pipe(
  Command.withDescription("anchord: a self-hostable record anchoring node"),
  Command.withSubcommands([start, dev, migrate, accounts, keys])
)

cli.pipe(
  Command.run({ version: VERSION }),
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain
)
