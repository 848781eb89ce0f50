/**
 * The node's metrics (docs/metrics.md), on Effect's own `Metric` module; /metrics renders them with
 * `effect/observability` PrometheusMetrics (src/app/metrics.ts). Names follow Prometheus conventions:
 * prefix `anchord_`, base units (`_seconds`, `_wei`), counters end in `_total`.
 *
 * Every series of a labelled metric is its own Metric value, made once per label set and cached here:
 * an update is then a Map lookup and a number added (no attribute merging, no new Context), which is
 * what the ingest hot path can afford. Label values come from closed sets (chain types, environments,
 * configured networks, route templates, status codes), never from client input.
 *
 * Updates take the Context that holds the node's `Metric.MetricRegistry` (each node its own registry:
 * src/app/metrics.ts), either a fiber's or one captured when a service is built.
 */
import { type Context, Effect, Metric } from "effect"

/** The Context that holds the node's `Metric.MetricRegistry`, as every update here takes it. */
export type MetricsHandle = Context.Context<never>

/** The current fiber's Context as a metrics handle: captured once by a service, updates then need no effect step. */
export const metricsHandle: Effect.Effect<MetricsHandle> = Effect.context<never>()

type Ctx = MetricsHandle

const cache = <M>(make: (labels: Readonly<Record<string, string>>) => M) => {
  const series = new Map<string, M>()
  return (key: string, labels: () => Readonly<Record<string, string>>): M => {
    let m = series.get(key)
    if (m === undefined) {
      m = make(labels())
      series.set(key, m)
    }
    return m
  }
}

const counter = (name: string, description: string) => cache((attributes) => Metric.counter(name, { description, attributes, incremental: true }))
const gauge = (name: string, description: string) => cache((attributes) => Metric.gauge(name, { description, attributes }))
const histogram = (name: string, description: string, boundaries: ReadonlyArray<number>) => {
  const bounds = Metric.boundariesFromIterable(boundaries)
  return cache((attributes) => Metric.histogram(name, { description, attributes, boundaries: bounds }))
}

// ---- HTTP (src/app/gateway.ts: every request of the API listener, the ingest fast path included)

const httpDuration = histogram(
  "anchord_http_request_duration_seconds",
  "Time from a request's arrival at the router to its response (body sending excluded), by method, route template and status; _count is the number of requests",
  [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
)
export const observeHttp = (ctx: Ctx, method: string, route: string, status: number, seconds: number) =>
  httpDuration(`${method} ${route} ${status}`, () => ({ method, route, status: String(status) })).updateUnsafe(seconds, ctx)

// ---- Ingest (src/records/creation.ts)

const accepted = counter("anchord_records_accepted_total", "Records accepted (committed, 202/207) by chain type and environment")
export const countAccepted = (ctx: Ctx, chain: string, environment: string, n: number) =>
  accepted(`${chain} ${environment}`, () => ({ chain, environment })).updateUnsafe(n, ctx)

// ---- Anchoring (src/anchoring/Batcher.ts, src/anchoring/BatchStore.ts, src/evm/watcher.ts)

const batchSize = histogram("anchord_batch_size_records", "Records per batch cut, by network", [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000])
export const observeBatchSize = (ctx: Ctx, network: string, records: number) => batchSize(network, () => ({ network })).updateUnsafe(records, ctx)

const anchorLatency = histogram(
  "anchord_record_anchor_latency_seconds",
  "Time from a record's acceptance (POST) to ANCHORED, by the network whose confirmation completed it; _count is records anchored",
  [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400]
)
export const observeAnchored = (ctx: Ctx, network: string, seconds: number) => anchorLatency(network, () => ({ network })).updateUnsafe(seconds, ctx)

const batchesFailed = counter(
  "anchord_batches_failed_total",
  "Batches given up (state FAILED) after maxAttempts, by network: their records are FAILED (anchor.failed sent)"
)
export const countBatchFailed = (ctx: Ctx, network: string, n = 1) => batchesFailed(network, () => ({ network })).updateUnsafe(n, ctx)

const signerBalance = gauge("anchord_evm_signer_balance_wei", "Balance of the network's signer (the anchorer account), in wei, read by the leading node")
export const setSignerBalance = (ctx: Ctx, network: string, wei: bigint) => signerBalance(network, () => ({ network })).updateUnsafe(Number(wei), ctx)

// ---- TLS (src/http/tls.ts)

const tlsExpiry = gauge(
  "anchord_tls_certificate_expiry_timestamp_seconds",
  "When the certificate the API serves (TLS_CERT_FILE) expires, as Unix time; set at start and at each reload; absent without TLS"
)
export const setTlsCertificateExpiry = (ctx: Ctx, notAfter: Date) => tlsExpiry("", () => ({})).updateUnsafe(notAfter.getTime() / 1000, ctx)

// ---- Webhooks (src/webhooks/Dispatcher.ts)

/** `success` (2xx), `http_error` (another status), `connection_error` (no answer: refused, timeout, egress policy). */
export type AttemptOutcome = "success" | "http_error" | "connection_error"
const attempts = counter("anchord_webhook_attempts_total", "Webhook delivery attempts by outcome (success, http_error, connection_error)")
const attemptDuration = histogram(
  "anchord_webhook_attempt_duration_seconds",
  "Duration of webhook delivery attempts (request sent to answer or failure), by outcome",
  [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
)
const exhausted = counter("anchord_webhook_deliveries_failed_total", "Webhook deliveries that used their last attempt without success (state FAILED)")
export const observeAttempt = (ctx: Ctx, outcome: AttemptOutcome, seconds: number, lastAttemptFailed: boolean) => {
  attempts(outcome, () => ({ outcome })).updateUnsafe(1, ctx)
  attemptDuration(outcome, () => ({ outcome })).updateUnsafe(seconds, ctx)
  if (lastAttemptFailed) exhausted("", () => ({})).updateUnsafe(1, ctx)
}

const batchEvents = histogram("anchord_webhook_batch_size_events", "Events per batched webhook request (receivers in batch mode), by outcome", [
  1,
  2,
  5,
  10,
  25,
  50,
  100,
  250,
  500,
  1000
])
const batchDuration = histogram(
  "anchord_webhook_batch_duration_seconds",
  "Duration of batched webhook requests (request sent to answer or failure), by outcome",
  [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
)
export const observeBatch = (ctx: Ctx, outcome: AttemptOutcome, events: number, seconds: number) => {
  batchEvents(outcome, () => ({ outcome })).updateUnsafe(events, ctx)
  batchDuration(outcome, () => ({ outcome })).updateUnsafe(seconds, ctx)
}

const rateLimit = gauge(
  "anchord_webhook_rate_limit_events_per_second",
  "Deliveries per second this node may start while its anchoring pipelines are behind (0: no limit; docs/webhooks.md, Anchoring first)"
)
export const setDeliveryRateLimit = (ctx: Ctx, eventsPerSecond: number) => rateLimit("", () => ({})).updateUnsafe(Math.round(eventsPerSecond), ctx)

// ---- Sampled state (src/app/metrics.ts: one fiber per node, every METRICS_SAMPLE_INTERVAL_MS)

export const sampled = {
  queueDepth: gauge("anchord_queue_depth", "Records QUEUED for the network (counted up to 1,000,000)"),
  queueOldestAge: gauge("anchord_queue_oldest_age_seconds", "Age of the oldest QUEUED record of the network (0: queue empty)"),
  batchesOpen: gauge("anchord_batches_open", "Batches of the network not yet confirmed, by state (PENDING, SENT, MINED)"),
  chainHead: gauge("anchord_chain_head_block", "The network's latest block seen by this node's watcher (EVM head, Fabric block)"),
  confirmationLag: gauge(
    "anchord_chain_confirmation_lag_blocks",
    "Blocks between the head and the oldest mined batch still waiting for its confirmations (0: none waiting)"
  ),
  leader: gauge("anchord_network_leader", "1 while this node leads the network's pipeline (holds its lock)"),
  breakerOpen: gauge(
    "anchord_circuit_breaker_open",
    "1 while a dependency is considered down: the database (its breaker answers 503) or a network's endpoint"
  ),
  webhookBacklog: gauge("anchord_webhook_backlog", "Webhook deliveries PENDING (due or waiting for a retry; counted up to 1,000,000)"),
  webhookOverdue: gauge("anchord_webhook_backlog_overdue_seconds", "How long the most overdue PENDING delivery has been due (0: none overdue)"),
  dbConnections: gauge(
    "anchord_db_connections",
    "Connections of anchord (application_name) to this database by state (active, idle, idle_in_transaction, other), all nodes, as PostgreSQL sees them"
  ),
  dbPoolMax: gauge("anchord_db_pool_max_connections", "Size limit of this node's database connection pool"),
  sampleFailures: counter("anchord_metrics_sample_failures_total",
    "Samples of database-backed gauges that failed or timed out (the gauges keep their last value)"),
  buildInfo: gauge("anchord_build_info", "Always 1; the node's version as a label")
}

/** Series that alerts read, present at 0 from the start (an absent series and a zero rate look different to Prometheus). */
export const initialize = (ctx: Ctx) => {
  for (const outcome of ["success", "http_error", "connection_error"] as const) attempts(outcome, () => ({ outcome })).updateUnsafe(0, ctx)
  exhausted("", () => ({})).updateUnsafe(0, ctx)
  rateLimit("", () => ({})).updateUnsafe(0, ctx)
  for (const query of ["queue", "batches", "webhooks", "connections"]) sampled.sampleFailures(query, () => ({ query })).updateUnsafe(0, ctx)
}
