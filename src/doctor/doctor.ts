/**
 * `anchord doctor` (docs/doctor.md): every check of a production configuration, run concurrently,
 * each bounded; and the subset `anchord start` runs before it starts (`mode: "start"`).
 */
import { Config, Effect, Option } from "effect"
import { AppConfig } from "../config.ts"
import { embeddedPostgres } from "../dev/EmbeddedPostgres.ts"
import { EvmNetworks } from "../evm/config.ts"
import { FabricNetworks } from "../fabric/config.ts"
import { tsaConfig } from "../tsa/config.ts"
import { tsaFilesReport } from "../tsa/keys.ts"
import { signerFromPem } from "../receipts/key.ts"
import { logKeyFromPem } from "../translog/key.ts"
import * as Fs from "node:fs"
import { anchorableCheck, bounded, type CheckResult, databaseChecks, dataDirCheck, fatal, ok, publicUrlCheck, redisCheck, tlsFilesCheck, warn,
  webhookPolicyCheck } from "./checks.ts"
import { evmChecks, fabricChecks } from "./chains.ts"
import { webhookTargetCheck } from "./webhookTarget.ts"

export interface DoctorOptions {
  /**
   * doctor: everything. start: what can be fatal, without what start does itself anyway (an
   * embedded database is started and migrated by the node) and without the warnings-only checks
   * (balance, clocks, Redis, a test webhook): start stays quick.
   */
  readonly mode: "doctor" | "start"
  readonly webhookTestUrl?: string | undefined
  /** Batches the EVM signer's balance should pay for (warn below). */
  readonly batches?: number
}

const optionalString = (name: string) => Config.option(Config.String(name)).pipe(Effect.map(Option.getOrUndefined))

/** The checks' results in a fixed order (configuration, database, networks, dependencies). */
export const runChecks = Effect.fn("Doctor.run")(function*(options: DoctorOptions) {
  const full = options.mode === "doctor"
  const config = yield* AppConfig
  const allowPrivate = yield* optionalString("WEBHOOK_ALLOW_PRIVATE")
  const certFile = yield* optionalString("TLS_CERT_FILE")
  const keyFile = yield* optionalString("TLS_KEY_FILE")
  const now = Date.now()
  const results: Array<ReadonlyArray<CheckResult>> = []

  // Configuration alone.
  results.push([publicUrlCheck(config), webhookPolicyCheck(allowPrivate), tlsFilesCheck(certFile, keyFile, new Date(now)), dataDirCheck(config)])

  // The networks' configuration: a parse error is the one fatal line (the node would refuse it too).
  const evmParsed = yield* Effect.result(Effect.gen(function*() {
    return yield* EvmNetworks
  }).pipe(Effect.provide(EvmNetworks.layer)))
  const fabricParsed = yield* Effect.result(Effect.gen(function*() {
    return yield* FabricNetworks
  }).pipe(Effect.provide(FabricNetworks.layer)))
  if (evmParsed._tag === "Failure") results.push([fatal("evm", messageOf(evmParsed.failure), "fix EVM_NETWORKS (docs/configuration-evm.md)")])
  if (fabricParsed._tag === "Failure") results.push([fatal("fabric", messageOf(fabricParsed.failure), "fix FABRIC_NETWORKS (docs/configuration-fabric.md)")])
  const evmList = evmParsed._tag === "Success" ? evmParsed.success.networks : []
  const fabricList = fabricParsed._tag === "Success" ? fabricParsed.success.networks : []
  const named = (test: string | undefined, live: string | undefined) => [test === undefined ? [] : ["test"], live === undefined ? [] : ["live"]].flat()
  results.push([anchorableCheck(evmList, fabricList, {
    evm: named(yield* optionalString("EVM_TEST_NETWORK_ID"), yield* optionalString("EVM_LIVE_NETWORK_ID")),
    fabric: named(yield* optionalString("FABRIC_TEST_NETWORK_ID"), yield* optionalString("FABRIC_LIVE_NETWORK_ID"))
  })])

  // The TSA's certificate and key (docs/timestamping.md): tools refuse tokens from a certificate without these.
  const tsa = yield* Effect.result(Effect.map(tsaConfig, (c) => c))
  if (tsa._tag === "Failure") results.push([fatal("tsa", messageOf(tsa.failure), "fix the TSA_* variables (docs/timestamping.md)")])
  else {
    const c = tsa.success
    const report = tsaFilesReport(
      Option.isSome(c.cert) && Option.isSome(c.key) ? { certFile: c.cert.value, keyFile: c.key.value, chainFile: Option.getOrUndefined(c.chain) } : undefined,
      new Date(now)
    )
    results.push([{ check: "tsa", ...report }])
  }

  // The COSE receipt key (docs/proof-format.md): a bad file would stop the node at start.
  const receiptKeyFile = yield* optionalString("RECEIPT_KEY_FILE")
  results.push([receiptKeyCheck(receiptKeyFile)])
  // The transparency logs' checkpoint key (docs/transparency-log.md): a bad file would stop the node at start too.
  results.push([logKeyCheck(yield* optionalString("LOG_KEY_FILE"))])

  const timeout = (ms: number) => Math.max(ms, 1_000) + 2_000
  const work: Array<Effect.Effect<ReadonlyArray<CheckResult>>> = []

  // The database: DATABASE_URL, or (doctor only) the embedded server, started or shared.
  if (Option.isSome(config.databaseUrl) || (full && results[0]![3]!.status === "ok")) {
    const url = config.databaseUrl
    work.push(bounded(
      Option.isSome(url) ? timeout(config.dbConnectTimeoutMillis) * 2 : 60_000,
      Effect.scoped(Effect.gen(function*() {
        const target = Option.isSome(url) ? url.value : (yield* embeddedPostgres({ dataDir: config.dataDir })).url
        return yield* databaseChecks(target, config.dbConnectTimeoutMillis)
      })),
      (m) => fatal("database", `unreachable: ${m}`, "check DATABASE_URL (host, port, credentials, database) and that PostgreSQL runs")
    ))
  }

  for (const network of evmList) {
    work.push(
      bounded(network.rpcTimeoutMs * 4 + 2_000, evmChecks(network, { batches: options.batches ?? 100, maxSkewMillis: 60_000, now: () => Date.now(), full }),
        (m) => warn(`evm:${network.networkId}`, `RPC did not answer: ${m}`, `check rpcUrl of ${network.networkId}`))
    )
  }
  for (const network of fabricList) {
    work.push(
      bounded(network.evaluateTimeoutMs + 2_000, fabricChecks(network, { now: new Date(now), reach: full }), (m) =>
        warn(`fabric:${network.networkId}`, `the chaincode did not answer: ${m}`, `check peerEndpoint ${network.peerEndpoint}`))
    )
  }
  if (full && Option.isSome(config.redisUrl)) {
    work.push(
      bounded(5_000, redisCheck(config.redisUrl.value, 3_000), (m) =>
        fatal("redis", `PING failed: ${m}`, "check REDIS_URL and that Redis runs (the nodes share rate limits through it)"))
    )
  }
  if (full && options.webhookTestUrl !== undefined) {
    work.push(
      bounded(10_000, webhookTargetCheck(options.webhookTestUrl, { allowPrivate, caFile: yield* optionalString("WEBHOOK_CA_FILE"), timeoutMillis: 8_000 }),
        (m) => warn("webhook-target", `no answer: ${m}`, "check the receiver is up and reachable from this machine"))
    )
  }
  results.push(...yield* Effect.all(work, { concurrency: "unbounded" }))
  return results.flat()
})

const messageOf = (e: unknown) => (typeof e === "object" && e !== null && "message" in e ? String(e.message) : String(e))

/** One line per check: `ok   name  message` (and `→ fix`). */
export const formatResults = (results: ReadonlyArray<CheckResult>): string =>
  results.map((r) => {
    const mark = r.status === "ok" ? "ok   " : r.status === "warn" ? "WARN " : "FATAL"
    return `${mark} ${r.check.padEnd(22)} ${r.message}${r.fix === "" ? "" : `\n      ${"".padEnd(22)} fix: ${r.fix}`}`
  }).join("\n")

export const isFatal = (results: ReadonlyArray<CheckResult>) => results.some((r) => r.status === "fatal")

/** RECEIPT_KEY_FILE: unset (receipts off), or a readable ECDSA P-256 private key. */
export const receiptKeyCheck = (file: string | undefined): CheckResult => {
  if (file === undefined) return ok("receipts", "RECEIPT_KEY_FILE unset: no COSE receipts (GET /v1/records/{id}/receipt answers 404)")
  let pem: string
  try {
    pem = Fs.readFileSync(file, "utf8")
  } catch {
    return fatal("receipts", `RECEIPT_KEY_FILE: cannot read ${file}`, "point RECEIPT_KEY_FILE at the receipt key's PKCS#8 PEM (docs/proof-format.md)")
  }
  const signer = signerFromPem(pem, "RECEIPT_KEY_FILE")
  if (typeof signer === "string") return fatal("receipts", signer, "an ECDSA P-256 key, e.g. openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256")
  return ok("receipts", `receipt key ES256, kid ${Buffer.from(signer.kid).toString("hex").slice(0, 16)}…`)
}

/** LOG_KEY_FILE: unset (checkpoints unsigned, not served), or a readable Ed25519 private key. */
export const logKeyCheck = (file: string | undefined): CheckResult => {
  if (file === undefined) return ok("log-key", "LOG_KEY_FILE unset: checkpoints are not signed, /log/<network>/checkpoint answers 404")
  let pem: string
  try {
    pem = Fs.readFileSync(file, "utf8")
  } catch {
    return fatal("log-key", `LOG_KEY_FILE: cannot read ${file}`, "point LOG_KEY_FILE at the log key's PKCS#8 PEM (docs/transparency-log.md)")
  }
  const key = logKeyFromPem(pem, "LOG_KEY_FILE")
  if (typeof key === "string") return fatal("log-key", key, "an Ed25519 key, e.g. openssl genpkey -algorithm ed25519")
  return ok("log-key", "checkpoint key Ed25519")
}
