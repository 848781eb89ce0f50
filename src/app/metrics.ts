/**
 * Metrics (docs/metrics.md): the node's registry, the /metrics listener and the sampler.
 *
 * - Each node has its own `Metric.MetricRegistry` (several nodes in one process, as in tests, do not
 *   mix their figures); the metrics themselves are in src/metrics/metrics.ts.
 * - The listener (METRICS_PORT, METRICS_HOST default 127.0.0.1) is a server of its own: it answers
 *   GET /metrics with PrometheusMetrics' rendering of the registry and 404 to anything else, with no
 *   key, no rate limit and no body limit of the API (it reads no body). Off when METRICS_PORT is unset.
 * - The sampler: one fiber per node, while the listener is on, sets the gauges that need a query
 *   (queue depth and oldest age, open batches, confirmation lag, webhook backlog, database connections)
 *   every METRICS_SAMPLE_INTERVAL_MS, and those read from memory (chain head, leadership, breakers).
 *   Each query is bounded (index-only steps, counts capped at 1,000,000, a 5 s timeout); none runs
 *   while the database breaker is open; a scrape only renders what the last sample found. The figures
 *   from the database are the same on every node (use max() across instances), the others are this node's.
 */
import * as Http from "node:http"
import { Context, Effect, Layer, Metric, Option, Schedule, Schema } from "effect"
import { HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import { SqlClient, SqlSchema } from "effect/sql"
import { NodeHttpServer } from "@effect/platform-node"
import { NetworkHealth } from "../anchoring/NetworkHealth.ts"
import { inStatus } from "../anchoring/recordState.ts"
import { AppConfig } from "../config.ts"
import { POOL_MAX_CONNECTIONS } from "../db/Database.ts"
import { DatabaseGuard } from "../db/guard.ts"
import { listenerUrl } from "../http/publicUrl.ts"
import { countBatchFailed, initialize, metricsHandle, sampled } from "../metrics/metrics.ts"
import { VERSION } from "../version.ts"

/** This node's metrics registry: provided under the whole node, so every service and fiber updates it. */
export const MetricRegistryLayer = Layer.sync(Metric.MetricRegistry, () => new Map())

/** `anchord dev` (`npm start`): metrics on at 9464 unless METRICS_PORT says otherwise. */
export const MetricsDevDefault = Context.Reference<boolean>("anchord/app/MetricsDevDefault", { defaultValue: () => false })

/** Where /metrics is served, once the listener is up (none: off). */
export class MetricsListener extends Context.Service<MetricsListener, {
  readonly url: Option.Option<string>
}>()("anchord/app/MetricsListener") {}

const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
const notFound = HttpServerResponse.text("Not found: this listener serves GET /metrics only\n", { status: 404 })

/** The listener's whole app: /metrics, nothing else. */
const metricsApp = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const path = request.url.split("?", 1)[0]
  if (path !== "/metrics") return notFound
  if (request.method !== "GET" && request.method !== "HEAD") {
    return HttpServerResponse.text("Method not allowed\n", { status: 405, headers: { allow: "GET, HEAD" } })
  }
  return HttpServerResponse.text(yield* PrometheusMetrics.format(), { contentType: CONTENT_TYPE, headers: { "cache-control": "no-store" } })
})

const QUERY_TIMEOUT = "5 seconds"
const CAP = 1_000_000

// The rows the sampler reads. A row that does not match is a failed sample like any other (logged, counted).
const QueueRow = Schema.Struct({ depth: Schema.Number, oldest: Schema.NullOr(Schema.Number) })
const OpenBatchesRow = Schema.Struct({ state: Schema.String, count: Schema.Number, minBlock: Schema.NullOr(Schema.String) })
const BacklogRow = Schema.Struct({ pending: Schema.Number, overdue: Schema.NullOr(Schema.Number) })
const ConnectionsRow = Schema.Struct({ state: Schema.String, count: Schema.Number })

/** Sets the sampled gauges once (see the module comment for what each costs). */
const sampleOnce = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const guard = yield* DatabaseGuard
  const health = yield* NetworkHealth
  const ctx = yield* metricsHandle
  const set = (m: ReturnType<(typeof sampled)[keyof typeof sampled]>, value: number) => m.updateUnsafe(value, ctx)
  const networks = yield* health.snapshot

  // From memory: breakers, leadership, heads.
  set(sampled.breakerOpen("database", () => ({ dependency: "database" })), guard.isUp() ? 0 : 1)
  for (const n of networks) {
    const labels = () => ({ network: n.networkId, chain: n.chainType })
    // Present at 0 from the start: an alert's increase() needs the series before the first failure.
    countBatchFailed(ctx, n.networkId, 0)
    set(sampled.breakerOpen(`network ${n.networkId}`, () => ({ dependency: `${n.chainType}:${n.networkId}` })), n.rpc === "down" ? 1 : 0)
    set(sampled.leader(n.networkId, labels), n.leader ? 1 : 0)
    if (n.head !== undefined) set(sampled.chainHead(n.networkId, labels), Number(n.head))
  }
  if (!guard.isUp()) return

  // The records still QUEUED (src/anchoring/recordState.ts: a range of records_queue from the oldest
  // queue cursor): a capped count, and the first by id (ids order by time to the second: its age is
  // the oldest's, near enough).
  const findQueue = SqlSchema.findOne({
    Request: Schema.String,
    Result: QueueRow,
    execute: (networkId) =>
      sql`
      SELECT (SELECT count(*)::int FROM (SELECT 1 FROM records r
          WHERE r.network_id = ${networkId} AND ${inStatus(sql, "QUEUED")} LIMIT ${CAP}) q) AS depth,
        (SELECT extract(epoch FROM now() - r.created_at)::float8 FROM records r
          WHERE r.network_id = ${networkId} AND ${inStatus(sql, "QUEUED")} ORDER BY r.id LIMIT 1) AS oldest`
  })
  // The partial index anchor_batches_open: only batches not yet confirmed.
  const findOpenBatches = SqlSchema.findAll({
    Request: Schema.String,
    Result: OpenBatchesRow,
    execute: (networkId) =>
      sql`
      SELECT state, count(*)::int AS count, min(block_number)::text AS min_block FROM anchor_batches
      WHERE network_id = ${networkId} AND state IN ('PENDING', 'SENT', 'MINED') GROUP BY state`
  })
  // The partial index webhook_deliveries_due (next_attempt_at) WHERE state = 'PENDING'.
  const findBacklog = SqlSchema.findOne({
    Request: Schema.Void,
    Result: BacklogRow,
    execute: () =>
      sql`
    SELECT (SELECT count(*)::int FROM (SELECT 1 FROM webhook_deliveries WHERE state = 'PENDING' LIMIT ${CAP}) q) AS pending,
      (SELECT extract(epoch FROM now() - min(next_attempt_at))::float8 FROM webhook_deliveries WHERE state = 'PENDING') AS overdue`
  })
  // pg_stat_activity: one row per server process, a small view.
  const findConnections = SqlSchema.findAll({
    Request: Schema.Void,
    Result: ConnectionsRow,
    execute: () =>
      sql`
    SELECT CASE WHEN state IN ('active', 'idle') THEN state WHEN state LIKE 'idle in transaction%' THEN 'idle_in_transaction' ELSE 'other' END AS state,
      count(*)::int AS count
    FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'anchord' GROUP BY 1`
  })

  const bounded = <A, E, R>(what: string, query: Effect.Effect<A, E, R>) =>
    query.pipe(
      Effect.timeout(QUERY_TIMEOUT),
      Effect.tapCause((cause) =>
        Effect.andThen(
          Effect.sync(() => sampled.sampleFailures(what, () => ({ query: what })).updateUnsafe(1, ctx)),
          Effect.logDebug("metrics sample failed", { query: what, cause })
        )
      ),
      Effect.option
    )

  for (const n of networks) {
    const labels = () => ({ network: n.networkId, chain: n.chainType })
    const queue = yield* bounded("queue", findQueue(n.networkId))
    if (Option.isSome(queue)) {
      set(sampled.queueDepth(n.networkId, labels), queue.value.depth)
      set(sampled.queueOldestAge(n.networkId, labels), Math.max(0, queue.value.oldest ?? 0))
    }
    const open = yield* bounded("batches", findOpenBatches(n.networkId))
    if (Option.isSome(open)) {
      for (const state of ["PENDING", "SENT", "MINED"]) {
        const row = open.value.find((r) => r.state === state)
        set(sampled.batchesOpen(`${n.networkId} ${state}`, () => ({ network: n.networkId, chain: n.chainType, state })), row?.count ?? 0)
      }
      const minBlock = open.value.find((r) => r.state === "MINED")?.minBlock
      const lag = minBlock == null || n.head === undefined ? 0 : Math.max(0, Number(n.head - BigInt(minBlock)))
      set(sampled.confirmationLag(n.networkId, labels), lag)
    }
  }

  const backlog = yield* bounded("webhooks", findBacklog())
  if (Option.isSome(backlog)) {
    set(sampled.webhookBacklog("", () => ({})), backlog.value.pending)
    set(sampled.webhookOverdue("", () => ({})), Math.max(0, backlog.value.overdue ?? 0))
  }

  const connections = yield* bounded("connections", findConnections())
  if (Option.isSome(connections)) {
    for (const state of ["active", "idle", "idle_in_transaction", "other"]) {
      set(sampled.dbConnections(state, () => ({ state })), connections.value.find((r) => r.state === state)?.count ?? 0)
    }
  }
})

/** The listener and the sampler when METRICS_PORT is set (`dev`: 9464 unless set; a busy port only warns). */
export const MetricsLayer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* AppConfig
  const dev = yield* MetricsDevDefault
  const port = Option.getOrElse(config.metricsPort, () => dev ? 9464 : undefined)
  if (port === undefined) return Layer.succeed(MetricsListener, { url: Option.none() })
  const serve = Layer.effect(MetricsListener, Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    yield* server.serve(metricsApp)
    const ctx = yield* metricsHandle
    sampled.dbPoolMax("", () => ({})).updateUnsafe(POOL_MAX_CONNECTIONS, ctx)
    sampled.buildInfo(VERSION, () => ({ version: VERSION })).updateUnsafe(1, ctx)
    initialize(ctx)
    yield* sampleOnce.pipe(
      Effect.catchCause((cause) => Effect.logWarning("metrics sample failed", cause)),
      Effect.repeat(Schedule.spaced(`${config.metricsSampleIntervalMillis} millis`)),
      Effect.forkScoped
    )
    const address = server.address
    const bound = address._tag === "UnixPathAddress" ? port : address.port
    return { url: Option.some(`${listenerUrl(config.metricsHost, bound)}/metrics`) }
  })).pipe(Layer.provide(NodeHttpServer.layer(() => Http.createServer(), { port, host: config.metricsHost })))
  if (!dev || Option.isSome(config.metricsPort)) return serve
  // `npm start` on a machine where 9464 is taken (another dev node): run without metrics, say so.
  return serve.pipe(Layer.catchCause((cause) =>
    Layer.effect(MetricsListener, Effect.as(
      Effect.logWarning(`metrics listener not started (${config.metricsHost}:${port}: ${String(cause).split("\n", 1)[0]}); set METRICS_PORT to another port`),
      { url: Option.none() }
    ))
  ))
}))
