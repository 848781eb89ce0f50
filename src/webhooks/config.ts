/**
 * Dispatcher settings (environment variables, documented in docs/webhooks.md). Tests compress the
 * retry ladder with WEBHOOK_RETRY_SCALE and shorten the 10 s timeout with WEBHOOK_TIMEOUT_MS.
 */
import * as Crypto from "node:crypto"
import * as Os from "node:os"
import { Config, Context, Effect, Layer } from "effect"

export interface DispatcherSettings {
  /** Run the dispatcher in this process (API-only nodes may turn it off). */
  readonly enabled: boolean
  /** Multiplies every retry delay (1 = the seed's 1 min, 5 min, 30 min, 2 h, 24 h). */
  readonly retryScale: number
  /** Per attempt: connect + request + response, after which the attempt counts as failed. */
  readonly timeoutMillis: number
  /** How long a claim is held; a crashed node's claims become due again after it. */
  readonly leaseMillis: number
  /** Polling fallback when no NOTIFY arrives (lost listener connection, clock-due retries). */
  readonly pollMillis: number
  /** Attempts in flight at once in this process. */
  readonly concurrency: number
  /** Attempts in flight to one receiver (host:port) across all nodes, roughly (a claim may overshoot by a batch). */
  readonly perHostConcurrency: number
  /** Deliveries claimed per query. */
  readonly claimBatch: number
  /** Identifies this process in claims and in the attempt log. */
  readonly nodeId: string
  /** Finished deliveries (SUCCEEDED / FAILED) and their attempt logs are deleted this long after their last change; 0 keeps them. */
  readonly retentionMillis: number
  /** How often the retention sweep runs. */
  readonly retentionSweepMillis: number
  /** WEBHOOK_CA_FILE: PEM certificates trusted for HTTPS receivers on top of the system roots (a private CA). */
  readonly caFile: string | undefined
}

export class WebhookConfig extends Context.Service<WebhookConfig, DispatcherSettings>()("anchord/webhooks/WebhookConfig") {
  static readonly config = Config.all({
    enabled: Config.Boolean("WEBHOOK_DISPATCHER").pipe(Config.withDefault(true)),
    retryScale: Config.Number("WEBHOOK_RETRY_SCALE").pipe(Config.withDefault(1)),
    timeoutMillis: Config.Int("WEBHOOK_TIMEOUT_MS").pipe(Config.withDefault(10_000)),
    leaseMillis: Config.option(Config.Int("WEBHOOK_LEASE_MS")),
    pollMillis: Config.Int("WEBHOOK_POLL_MS").pipe(Config.withDefault(1_000)),
    concurrency: Config.Int("WEBHOOK_CONCURRENCY").pipe(Config.withDefault(256)),
    claimBatch: Config.Int("WEBHOOK_CLAIM_BATCH").pipe(Config.withDefault(200)),
    perHostConcurrency: Config.Int("WEBHOOK_PER_HOST").pipe(Config.withDefault(128)),
    nodeId: Config.option(Config.String("WEBHOOK_NODE_ID")),
    retentionDays: Config.Number("WEBHOOK_RETENTION_DAYS").pipe(Config.withDefault(30)),
    retentionSweepMillis: Config.Int("WEBHOOK_RETENTION_SWEEP_MS").pipe(Config.withDefault(3_600_000)),
    caFile: Config.option(Config.String("WEBHOOK_CA_FILE"))
  })

  static readonly layer = Layer.effect(
    WebhookConfig,
    Effect.map(WebhookConfig.config, (c) =>
      WebhookConfig.of({
        enabled: c.enabled,
        retryScale: c.retryScale,
        timeoutMillis: c.timeoutMillis,
        // A lease shorter than an attempt would let a second node send while the first still waits.
        leaseMillis: Math.max(
          c.leaseMillis._tag === "Some" ? c.leaseMillis.value : 60_000,
          c.timeoutMillis + 2_000
        ),
        pollMillis: c.pollMillis,
        concurrency: Math.max(1, c.concurrency),
        claimBatch: Math.max(1, c.claimBatch),
        perHostConcurrency: Math.max(1, c.perHostConcurrency),
        nodeId: c.nodeId._tag === "Some"
          ? c.nodeId.value
          : `${Os.hostname()}:${process.pid}:${Crypto.randomBytes(3).toString("hex")}`,
        retentionMillis: Math.max(0, c.retentionDays) * 86_400_000,
        retentionSweepMillis: Math.max(1_000, c.retentionSweepMillis),
        caFile: c.caFile._tag === "Some" ? c.caFile.value : undefined
      }))
  )
}
