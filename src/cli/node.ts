/**
 * What `anchord start`, `dev`, `doctor`, `migrate` and `fabric-devpeer` run: the node and its
 * dependencies. Loaded by ./commands.ts only when one of these commands runs (not for `--help`).
 */
import * as Path from "node:path"
import { Console, Effect, Layer, Option } from "effect"
import { HttpServer, HttpServerError } from "effect/http"
import { AppConfig } from "../config.ts"
import { listenerUrl, publicUrlRefusal, servesTls } from "../http/publicUrl.ts"
import { recordRunningUrl } from "../http/runningNode.ts"
import { tlsStartRefusal } from "../http/tls.ts"
import { DatabaseLive } from "../app/database.ts"
import { DevChainLayer, devChainInfo } from "../dev/evmChain.ts"
import { devFabricProfilePath, FabricDevPeer } from "../dev/FabricDevPeer.ts"
import { FabricDevNetworkLayer } from "../dev/fabricNetwork.ts"
import { LoggingLayer } from "../logging.ts"
import { armShutdownWatchdog, shutdownSignal } from "./shutdownWatchdog.ts"
import { makeNodeLayer, NodeLayer, withConfig } from "../app/layers.ts"
import { MetricsDevDefault, MetricsListener } from "../app/metrics.ts"
import { VERSION } from "../version.ts"
import { devOperatorLink, embeddedDatabaseUrl, ensureDevAccount, printBanner } from "../dev/devNode.ts"
import { TsaConfig, TsaDevDefault } from "../tsa/config.ts"
import { ReceiptDevDefault } from "../receipts/key.ts"
import { LogDevDefault, LogKey } from "../translog/key.ts"
import { EvmNetworks } from "../evm/config.ts"
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
  const url = yield* listeningUrl
  const { shutdownTimeoutMillis, dataDir } = yield* AppConfig
  yield* Effect.logInfo("anchord listening", { url, version: VERSION })
  // For the CLI's links beside this node (src/http/runningNode.ts).
  yield* recordRunningUrl(dataDir, url)
  // Built last, released first: the line an operator sees the moment a stop begins, so a SIGTERM never
  // ends the node without a word.
  yield* Effect.addFinalizer(() => Effect.logInfo("anchord stopping", { signal: shutdownSignal.current ?? "none", atMostMillis: shutdownTimeoutMillis }))
}))

/** Dev mode: the test key and the local chains, printed in one block once everything is up. */
const announceDev = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* AppConfig
  const baseUrl = yield* listeningUrl
  const info = yield* ensureDevAccount
  const peer = yield* FabricDevPeer
  const chain = yield* devChainInfo
  const evmNetworks = (yield* EvmNetworks).networks
  yield* recordRunningUrl(config.dataDir, baseUrl)
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
    tsaCaFile: Option.getOrUndefined((yield* TsaConfig).devCaFile),
    logs: Option.match((yield* LogKey).signing, {
      onNone: () => [],
      onSome: (signing) =>
        evmNetworks.map((n) => ({ checkpointUrl: `${baseUrl}/log/${n.networkId}/checkpoint`, verifierKey: signing.verifierKey(n.networkId) }))
    })
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
      Layer.provide(Layer.succeed(ReceiptDevDefault, true)),
      // A dev log key under the data directory unless LOG_KEY_FILE is set, and the logs served to anyone
      // unless LOG_PUBLIC says otherwise (src/translog/key.ts, src/translog/http.ts).
      Layer.provide(Layer.succeed(LogDevDefault, true))
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

export const start = runNode(false).pipe(Effect.provide(AppConfig.layer))

export const dev = runNode(true).pipe(Effect.provide(AppConfig.layer))

export const doctor = (o: { readonly json: boolean; readonly webhookTestUrl: Option.Option<string>; readonly batches: number }) =>
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
  )

export const migrate = Effect.gen(function*() {
  yield* Console.log("migrations applied")
}).pipe(Effect.provide(withConfig(DatabaseLive)))

export interface FabricDevpeerOptions {
  readonly port: number
  readonly host: string
  readonly channel: string
  readonly chaincode: string
  readonly mspId: string
  readonly dataDir: Option.Option<string>
}

export const fabricDevpeer = (o: FabricDevpeerOptions) =>
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
  )
