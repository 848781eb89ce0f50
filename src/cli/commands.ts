/**
 * The `anchord` command line (SPEC 8): start, dev, migrate, accounts, keys, fabric-devpeer, verify.
 * Entry: src/cli/main.ts (which runs `verify` without loading this module and the node behind it).
 */
import * as Path from "node:path"
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Console, Effect, Layer, Option, Runtime } from "effect"
import { HttpServer, HttpServerError } from "effect/http"
import { Argument, Command, Flag } from "effect/cli"
import { Accounts } from "../auth/Accounts.ts"
import { ConsoleAuth } from "../console/ConsoleAuth.ts"
import { ConsoleCoreLayer } from "../console/layer.ts"
import { linkPath } from "../console/Links.ts"
import { ConsoleUsers } from "../console/Users.ts"
import { PlanNames } from "../auth/plans.ts"
import { AppConfig } from "../config.ts"
import { listenerUrl, publicUrlRefusal, servesTls } from "../http/publicUrl.ts"
import { tlsStartRefusal } from "../http/tls.ts"
import { DatabaseLive } from "../app/database.ts"
import { DevChainLayer, devChainInfo } from "../dev/evmChain.ts"
import { devFabricProfilePath, FabricDevPeer } from "../dev/FabricDevPeer.ts"
import { FabricDevNetworkLayer } from "../dev/fabricNetwork.ts"
import { LoggingLayer } from "../logging.ts"
import { armShutdownWatchdog, shutdownSignal } from "./shutdownWatchdog.ts"
import { deployCommand, grantAnchorerCommand } from "./deployCommand.ts"
import { CoreLayer, makeNodeLayer, NodeLayer, withConfig } from "../app/layers.ts"
import { MetricsDevDefault, MetricsListener } from "../app/metrics.ts"
import { verifyCommand } from "../verify/command.ts"
import { VERSION } from "../version.ts"
import { devOperatorLink, embeddedDatabaseUrl, ensureDevAccount, printBanner } from "../dev/devNode.ts"
import { TsaConfig, TsaDevDefault } from "../tsa/config.ts"
import { ReceiptDevDefault } from "../receipts/key.ts"
import { AllowPrivateDefault, describeAllowlist, WebhookEgress } from "../webhooks/urlPolicy.ts"
import { formatResults, isFatal, runChecks } from "../doctor/doctor.ts"

/** The API's URL once the server listens. */
const listeningUrl = Effect.gen(function*() {
  const config = yield* AppConfig
  const server = yield* HttpServer.HttpServer
  const port = server.address._tag === "UnixPathAddress" ? config.port : server.address.port
  return Option.getOrElse(config.baseUrl, () => listenerUrl(config.host, port, servesTls(config)))
})

const announceStart = Layer.effectDiscard(Effect.gen(function*() {
  yield* Effect.logInfo("anchord listening", { url: yield* listeningUrl, version: VERSION })
  const { shutdownTimeoutMillis } = yield* AppConfig
  // Built last, released first: the line an operator sees the moment a stop begins (issue 24:
  // `anchord start` used to exit on SIGTERM without a word).
  yield* Effect.addFinalizer(() => Effect.logInfo("anchord stopping", { signal: shutdownSignal.current ?? "none", atMostMillis: shutdownTimeoutMillis }))
}))

/** Dev mode: the test key and the local chains, printed in one block once everything is up. */
const announceDev = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* AppConfig
  const baseUrl = yield* listeningUrl
  const info = yield* ensureDevAccount
  const peer = yield* FabricDevPeer
  const chain = yield* devChainInfo
  yield* Effect.logInfo("anchord listening", { url: baseUrl, version: VERSION })
  yield* printBanner({
    baseUrl,
    ...info,
    dataDir: Path.resolve(config.dataDir),
    database: Option.isSome(config.databaseUrl) ? undefined : embeddedDatabaseUrl(config.dataDir),
    chain,
    fabric: { ...peer, profile: devFabricProfilePath(config.dataDir) },
    signInLink: yield* devOperatorLink(baseUrl),
    webhookTargets: describeAllowlist((yield* WebhookEgress).allowlist),
    metrics: Option.getOrUndefined((yield* MetricsListener).url),
    tsaCaFile: Option.getOrUndefined((yield* TsaConfig).devCaFile)
  })
}))

const runNode = (dev: boolean) =>
  Effect.gen(function*() {
    const config = yield* AppConfig
    // `anchord start`'s TLS files are among doctor's fatal checks below (one message for both); dev checks them here.
    const refusal = dev ? tlsStartRefusal(Option.getOrUndefined(config.tls), new Date()) : publicUrlRefusal(config)
    if (refusal !== undefined) {
      return yield* Effect.andThen(Console.error(`error: ${refusal}`), Effect.sync(() => {
        process.exitCode = 1
      }))
    }
    // `anchord doctor`'s fatal checks first (docs/doctor.md): a node that would fail later, or run
    // unsafely, says why now with the same lines, and does not start.
    if (!dev) {
      const fatalLines = (yield* runChecks({ mode: "start" })).filter((r) => r.status === "fatal")
      if (isFatal(fatalLines)) {
        return yield* Effect.andThen(
          Console.error(`error: anchord doctor found ${fatalLines.length} fatal problem(s):\n${formatResults(fatalLines)}`),
          Effect.sync(() => {
            process.exitCode = 1
          })
        )
      }
    }
    yield* Effect.sync(() => {
      armShutdownWatchdog(config.shutdownTimeoutMillis)
      // Ahead of the runtime's own listener, which starts the stop: the "stopping" line names the signal.
      for (const signal of ["SIGTERM", "SIGINT"] as const) {
        process.prependOnceListener(signal, () => {
          shutdownSignal.current ??= signal
        })
      }
    })
    if (!dev) {
      return yield* Layer.launch(announceStart.pipe(Layer.provideMerge(NodeLayer))).pipe(
        // After every layer is released: the last line.
        Effect.onInterrupt(() => Effect.logInfo("anchord stopped")),
        Effect.catchIf(isServeError, listenRefused)
      )
    }
    // dev: a local EVM chain with the contract deployed unless EVM_NETWORKS is set (src/evm/devChain.ts),
    // and the Fabric gateway dev peer under the data directory, anchored on as `fabric-dev` unless
    // FABRIC_NETWORKS is set (src/fabric/devNetwork.ts). One peer layer, shared (layers are memoized by reference).
    const devPeer = FabricDevPeer.layerDev(config.dataDir)
    return yield* Layer.launch(announceDev.pipe(
      Layer.provideMerge(Layer.merge(makeNodeLayer(DevChainLayer, FabricDevNetworkLayer.pipe(Layer.provide(devPeer))), devPeer)),
      // Webhooks to the developer's own machine (WEBHOOK_ALLOW_PRIVATE, when set, says otherwise).
      Layer.provide(Layer.succeed(AllowPrivateDefault, "loopback")),
      // /metrics at 127.0.0.1:9464 unless METRICS_PORT says otherwise (src/app/metrics.ts).
      Layer.provide(Layer.succeed(MetricsDevDefault, true)),
      // A dev TSA root and certificate under the data directory unless TSA_CERT_FILE is set (src/tsa/config.ts).
      Layer.provide(Layer.succeed(TsaDevDefault, true)),
      // A dev receipt key under the data directory unless RECEIPT_KEY_FILE is set (src/receipts/key.ts).
      Layer.provide(Layer.succeed(ReceiptDevDefault, true))
    )).pipe(
      // After every layer is released (database stopped, chain state saved): the last line.
      Effect.onInterrupt(() => Console.log(`anchord dev stopped; state kept in ${Path.resolve(config.dataDir)}`)),
      Effect.catchIf(isServeError, listenRefused)
    )
  }).pipe(Effect.provide(LoggingLayer))

const isServeError = (e: unknown): e is HttpServerError.ServeError => e instanceof HttpServerError.ServeError

/** A port already taken (or not ours to bind) is the operator's to fix: one line naming it, exit 1, no stack. */
const listenRefused = (e: HttpServerError.ServeError) => {
  const cause = e.cause as NodeJS.ErrnoException | undefined
  const hint = cause?.code === "EADDRINUSE" ? " (another process listens there: stop it, or set PORT / METRICS_PORT)" : ""
  return Effect.andThen(Console.error(`error: anchord cannot listen: ${cause?.message ?? String(e)}${hint}`), Effect.sync(() => {
    process.exitCode = 1
  }))
}

const start = Command.make("start", {}, () => runNode(false).pipe(Effect.provide(AppConfig.layer))).pipe(
  Command.withDescription("Run the node (production): everything from environment variables")
)

const dev = Command.make("dev", {}, () => runNode(true).pipe(Effect.provide(AppConfig.layer))).pipe(
  Command.withDescription("Run a local node: embedded PostgreSQL, local chains, a test account and key")
)

const doctor = Command.make("doctor", {
  json: Flag.Boolean("json").pipe(Flag.withDefault(false), Flag.withDescription("Print JSON: [{check, status, message, fix}]")),
  webhookTestUrl: Flag.String("webhook-test-url").pipe(Flag.optional, Flag.withDescription("also POST an unsigned test to this receiver")),
  batches: Flag.Int("batches").pipe(Flag.withDefault(100), Flag.withDescription("batches each EVM signer's balance should pay for"))
}, (o) =>
  Effect.gen(function*() {
    const results = yield* runChecks({ mode: "doctor", webhookTestUrl: Option.getOrUndefined(o.webhookTestUrl), batches: o.batches })
    yield* Console.log(o.json ? JSON.stringify(results, null, 2) : formatResults(results))
    if (isFatal(results)) {
      yield* Effect.sync(() => {
        process.exitCode = 1
      })
    }
  }).pipe(
    Effect.catch((error) =>
      Effect.andThen(Console.error(`error: ${error.message}`), Effect.sync(() => {
        process.exitCode = 1
      }))
    ),
    Effect.provide(AppConfig.layer)
  )).pipe(Command.withDescription("Check a production configuration (database, chains, TLS, webhooks, Redis, clocks): exit 1 on a fatal problem"))

const migrate = Command.make("migrate", {}, () =>
  Effect.gen(function*() {
    yield* Console.log("migrations applied")
  }).pipe(Effect.provide(withConfig(DatabaseLive)))).pipe(Command.withDescription("Apply database migrations"))

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

const accountsSuspend = Command.make("suspend", { accountId: Argument.String("account-id"), json }, (o) =>
  withCore(Effect.gen(function*() {
    const account = yield* (yield* Accounts).suspend(o.accountId)
    yield* print(o.json, account, `${account.id} is SUSPENDED (its keys no longer authenticate)`)
  }))).pipe(Command.withDescription("Suspend an account: its API keys stop working, its data stays"))

const accountsPlan = Command.make("plan", {
  accountId: Argument.String("account-id"),
  plan: Argument.Literals("plan", PlanNames),
  ratePerSecond: Flag.Int("rate-per-second").pipe(Flag.optional, Flag.withDescription("ENTERPRISE only")),
  json
}, (o) =>
  withCore(Effect.gen(function*() {
    const account = yield* (yield* Accounts).setPlan(o.accountId, o.plan, Option.getOrUndefined(o.ratePerSecond))
    yield* print(o.json, account, `${account.id} is on ${account.plan}`)
  }))).pipe(Command.withDescription("Change an account's plan"))

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
  Command.withSubcommands([accountsCreate, accountsActivate, accountsSuspend, accountsPlan, accountsList])
)
const keys = Command.make("keys").pipe(
  Command.withDescription("Manage API keys"),
  Command.withSubcommands([keysCreate, keysList, keysRevoke])
)

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

/** Links point at PUBLIC_URL (set it to the address people use), else at http(s)://HOST:PORT. */
const linkUrl = (kind: "invitation" | "sign-in", token: string) =>
  Effect.map(AppConfig, (config) =>
    `${
      Option.getOrElse(config.baseUrl, () => listenerUrl(config.host, config.port, servesTls(config))).replace(/\/+$/, "")
    }${linkPath(kind, token)}`)

const printLink = (asJson: boolean, kind: "invitation" | "sign-in", link: { readonly token: string; readonly expiresAt: Date }, what: string) =>
  Effect.flatMap(linkUrl(kind, link.token), (url) =>
    print(asJson, { url, expiresAt: link.expiresAt.toISOString() },
      `${url}\n(${what}; one-time, valid until ${link.expiresAt.toISOString()}: hand it over privately)`))

const usersInvite = Command.make("invite", {
  accountId: Argument.String("account-id"),
  email: Flag.String("email"),
  role: Flag.Literals("role", ["admin", "viewer"]).pipe(Flag.withDefault("viewer" as const)),
  json
}, (o) =>
  withConsole(Effect.gen(function*() {
    const link = yield* (yield* ConsoleAuth).createLink({ kind: "invitation", email: o.email,
      target: { operator: false, accountId: o.accountId, role: o.role } })
    yield* printLink(o.json, "invitation", link, `invitation of ${o.email} as ${o.role} of ${o.accountId}`)
  }))).pipe(Command.withDescription("Invite a member of an account to the console (prints a one-time link)"))

const usersInviteOperator = Command.make("invite-operator", { email: Flag.String("email"), json }, (o) =>
  withConsole(Effect.gen(function*() {
    const link = yield* (yield* ConsoleAuth).createLink({ kind: "invitation", email: o.email, target: { operator: true } })
    yield* printLink(o.json, "invitation", link, `invitation of ${o.email} as an operator`)
  }))).pipe(Command.withDescription("Invite an operator (every account) to the console (prints a one-time link)"))

const usersSignInLink = Command.make("sign-in-link", { email: Argument.String("email"), json }, (o) =>
  withConsole(Effect.gen(function*() {
    const user = yield* (yield* ConsoleUsers).byEmail(o.email)
    if (user === undefined) return yield* Effect.fail({ message: `no console user ${o.email}` })
    const link = yield* (yield* ConsoleAuth).createLink({
      kind: "sign-in",
      email: o.email,
      target: user.operator ? { operator: true } : { operator: false, accountId: user.accountId!, role: user.role! }
    })
    yield* printLink(o.json, "sign-in", link, `sign-in link of ${o.email}`)
  }))).pipe(Command.withDescription("A one-time sign-in link for a console user (e.g. who forgot their password, or the dev operator)"))

const usersList = Command.make("list", { accountId: Argument.String("account-id").pipe(Argument.optional), json }, (o) =>
  withConsole(Effect.gen(function*() {
    const users = yield* ConsoleUsers
    const list = Option.isSome(o.accountId) ? yield* users.members(o.accountId.value) : [...yield* users.operators]
    const view = list.map(({ passwordHash: _, ...u }) => u)
    yield* print(o.json, view, view.map((u) => `${u.id}  ${u.email}  ${u.operator ? "operator" : `${u.role} of ${u.accountId}`}`).join("\n") || "(no users)")
  }))).pipe(Command.withDescription("List an account's members, or the operators"))

const users = Command.make("users").pipe(
  Command.withDescription("Manage console users (operators and account members)"),
  Command.withSubcommands([usersInvite, usersInviteOperator, usersSignInLink, usersList])
)

const fabricDevpeer = Command.make("fabric-devpeer", {
  port: Flag.Int("port").pipe(Flag.withDefault(7051), Flag.withDescription("0 picks a free port")),
  host: Flag.String("host").pipe(Flag.withDefault("127.0.0.1")),
  channel: Flag.String("channel").pipe(Flag.withDefault("anchord")),
  chaincode: Flag.String("chaincode").pipe(Flag.withDefault("anchord")),
  mspId: Flag.String("msp-id").pipe(Flag.withDefault("AnchordDevMSP")),
  dataDir: Flag.String("data-dir").pipe(Flag.optional, Flag.withDescription("default: ANCHORD_DATA_DIR/fabric-devpeer"))
}, (o) =>
  Effect.gen(function*() {
    const config = yield* AppConfig
    const dataDir = Option.getOrElse(o.dataDir, () => `${config.dataDir}/fabric-devpeer`)
    const peer = yield* FabricDevPeer
    yield* Console.log(JSON.stringify({
      address: peer.address,
      channel: peer.channel,
      chaincode: peer.chaincode,
      mspId: peer.mspId,
      certPath: peer.clientIdentity.certPath,
      keyPath: peer.clientIdentity.keyPath,
      dataDir
    }, null, 2))
    return yield* Effect.never
  }).pipe(
    Effect.provide(Layer.unwrap(Effect.map(AppConfig, (config) =>
      FabricDevPeer.layer({
        host: o.host,
        port: o.port,
        channel: o.channel,
        chaincode: o.chaincode,
        mspId: o.mspId,
        dataDir: Option.getOrElse(o.dataDir, () => `${config.dataDir}/fabric-devpeer`),
        log: (line) => console.error(`[fabric-devpeer] ${line}`)
      })))),
    Effect.provide(AppConfig.layer)
  )).pipe(Command.withDescription("Run the Fabric gateway dev peer alone (a development peer, not a Fabric network)"))

export const cli = Command.make("anchord").pipe(
  Command.withDescription("anchord: a self-hostable record anchoring node"),
  Command.withSubcommands([start, dev, doctor, migrate, accounts, keys, users, fabricDevpeer, deployCommand, grantAnchorerCommand, verifyCommand])
)

cli.pipe(
  Command.run({ version: VERSION }),
  Effect.provide(NodeServices.layer),
  // A refused operator command has printed its reason and set process.exitCode: keep that code.
  NodeRuntime.runMain({
    teardown: (exit, onExit) => Runtime.defaultTeardown(exit, (code) => onExit(code === 0 && process.exitCode ? Number(process.exitCode) : code))
  })
)
