/**
 * /metrics (docs/metrics.md): a node with METRICS_PORT on (port 0), an anvil network, a second network
 * whose endpoint refuses (its records stay QUEUED) and a webhook receiver; each figure is read with a
 * real exposition-format parser (parse-prometheus-text-format) before and after the work that moves it.
 * Also: the shipped alerting rules (ops/prometheus/anchord-alerts.yml) reference only metrics a scrape has.
 *   npx vitest run test/metrics/metrics.test.ts
 */
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { Option } from "effect"
import { load } from "js-yaml"
import parsePrometheusTextFormat from "parse-prometheus-text-format"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeNodeLayer } from "../../src/app/layers.ts"
import { MetricsListener } from "../../src/app/metrics.ts"
import { EvmNetworks } from "../../src/evm/config.ts"
import { startAnvil, type Anvil } from "../evm/anvil.ts"
import { allAnchored, deploy, network, waitFor } from "../evm/support.ts"
import { call, startNode, type TestNode } from "../support/node.ts"
import { type Receiver, startReceiver } from "../webhooks/support.ts"

interface Family {
  name: string
  type: string
  metrics: Array<{ value?: string; labels?: Record<string, string>; count?: string; sum?: string; buckets?: Record<string, string> }>
}

interface Scrape {
  /** The exposition parsed as it is: families, types, and every counter's and gauge's series. */
  readonly families: Array<Family>
  /**
   * The same text without its histogram TYPE lines, so `_count` / `_sum` series keep their labels (the
   * parser folds a histogram family's series into one unlabelled entry: fine for one series, not for several).
   */
  readonly samples: Array<Family>
}

const scrape = async (url: string): Promise<Scrape> => {
  const r = await fetch(url)
  expect(r.status).toBe(200)
  expect(r.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/)
  const text = await r.text()
  return {
    families: parsePrometheusTextFormat(text) as Array<Family>,
    samples: parsePrometheusTextFormat(text.replace(/^# TYPE (\S+) histogram$/gm, "")) as Array<Family>
  }
}

const matches = (labels: Record<string, string> | undefined, want: Record<string, string>) => Object.entries(want).every(([k, v]) => labels?.[k] === v)

const sample = (s: Scrape, name: string, labels: Record<string, string>) => {
  for (const f of s.samples) {
    if (f.name !== name) continue
    const series = f.metrics.find((m) => matches(m.labels, labels))
    if (series !== undefined) return Number(series.value)
  }
  return 0
}

/** A counter's or gauge's value, a histogram's count (0 when the series is absent). */
const value = (s: Scrape, name: string, labels: Record<string, string> = {}) =>
  sample(s, s.families.find((f) => f.name === name)?.type === "HISTOGRAM" ? `${name}_count` : name, labels)
const histogramSum = (s: Scrape, name: string, labels: Record<string, string>) => sample(s, `${name}_sum`, labels)

describe("/metrics", () => {
  let anvil: Anvil
  let node: TestNode
  let receiver: Receiver
  let metricsUrl: string
  let testKey: string
  let liveKey: string
  const anchoring = "metrics-anvil"
  const stuck = "metrics-unreachable"

  beforeAll(async () => {
    receiver = await startReceiver((r) => r.path === "/fail" ? 500 : 200)
    anvil = await startAnvil()
    const privateKey = await anvil.fundedKey()
    const d = await deploy(anvil.rpcUrl, privateKey)
    node = await startNode({
      config: { metricsPort: Option.some(0), metricsSampleIntervalMillis: 100, anonymousRatePerSecond: 2 },
      layer: makeNodeLayer(EvmNetworks.layerWith([
        network({
          networkId: anchoring,
          rpcUrl: anvil.rpcUrl,
          chainId: d.chainId,
          contractAddress: d.address,
          confirmations: 1,
          environment: "test",
          batchMaxSize: 50,
          batchWindowMs: 300,
          pollIntervalMs: 200
        }, privateKey),
        // Loopback port 9 (discard): refused, so this network's records stay QUEUED.
        network({
          networkId: stuck,
          rpcUrl: "http://127.0.0.1:9",
          chainId: d.chainId,
          contractAddress: d.address,
          confirmations: 1,
          environment: "live",
          batchMaxSize: 50,
          batchWindowMs: 300,
          pollIntervalMs: 200
        }, privateKey)
      ]))
    })
    metricsUrl = Option.getOrThrow((await node.runtime.runPromise(MetricsListener)).url)
    const account = await node.createAccount()
    testKey = (await node.createKey(account, "test")).key
    liveKey = (await node.createKey(account, "live")).key
  }, 60_000)
  afterAll(async () => {
    await node?.stop()
    await anvil?.stop()
    await receiver?.close()
  })

  it("the listener serves GET /metrics only, with no key and no rate limit", async () => {
    expect(metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/)
    const base = metricsUrl.replace(/\/metrics$/, "")
    for (const path of ["/", "/v1/health", "/metrics/x", "/v1/anchor"]) expect((await fetch(`${base}${path}`)).status).toBe(404)
    expect((await fetch(metricsUrl, { method: "POST" })).status).toBe(405)
    // The API allows 2 requests a second without a key here; the listener is outside its limits.
    const statuses = await Promise.all(Array.from({ length: 20 }, () => fetch(metricsUrl).then((r) => r.status)))
    expect(statuses.every((s) => s === 200)).toBe(true)
    // And /metrics is not on the API's listener.
    expect((await call(node.baseUrl, "GET", "/metrics")).status).toBe(404)
  })

  it("POSTs move the accepted counter by chain and environment and the request histogram by route template and status", async () => {
    const before = await scrape(metricsUrl)
    const ids: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const r = await call(node.baseUrl, "POST", "/v1/anchor", { key: testKey, body: { data: { i } } })
      expect(r.status).toBe(202)
      ids.push(r.json.data.recordId)
    }
    expect((await call(node.baseUrl, "GET", `/v1/records/${ids[0]}`, { key: testKey })).status).toBe(200)
    expect((await call(node.baseUrl, "GET", "/v1/no-such-route", { key: testKey })).status).toBe(404)
    const after = await scrape(metricsUrl)
    const accepted = { chain: "evm", environment: "test" }
    expect(value(after, "anchord_records_accepted_total", accepted) - value(before, "anchord_records_accepted_total", accepted)).toBe(3)
    const posted = { method: "POST", route: "/v1/anchor", status: "202" }
    expect(value(after, "anchord_http_request_duration_seconds", posted) - value(before, "anchord_http_request_duration_seconds", posted)).toBe(3)
    expect(value(after, "anchord_http_request_duration_seconds", { method: "GET", route: "/v1/records/:recordId", status: "200" })).toBeGreaterThanOrEqual(1)
    expect(value(after, "anchord_http_request_duration_seconds", { method: "GET", route: "unmatched", status: "404" })).toBeGreaterThanOrEqual(1)
    // The record id is never a label (route templates only).
    expect(JSON.stringify(after)).not.toContain(ids[0])
  })

  it("records no network can reach show as queue depth and age; its endpoint as an open breaker", async () => {
    for (let i = 0; i < 4; i++) {
      expect((await call(node.baseUrl, "POST", "/v1/anchor", { key: liveKey, body: { data: { stuck: i } } })).status).toBe(202)
    }
    const families = await waitFor("queue depth 4 and an age", async () => {
      const f = await scrape(metricsUrl)
      return value(f, "anchord_queue_depth", { network: stuck }) === 4 && value(f, "anchord_queue_oldest_age_seconds", { network: stuck }) > 0 && f
    }, 15_000)
    expect(value(families, "anchord_records_accepted_total", { chain: "evm", environment: "live" })).toBe(4)
    await waitFor("the unreachable endpoint's breaker open",
      async () => value(await scrape(metricsUrl), "anchord_circuit_breaker_open", { dependency: `evm:${stuck}` }) === 1, 15_000)
    expect(value(families, "anchord_circuit_breaker_open", { dependency: "database" })).toBe(0)
    // No batch given up yet: the series is there at 0 (an alert's increase() needs it before the first).
    const failed = families.families.find((f) => f.name === "anchord_batches_failed_total")?.metrics.find((m) => m.labels?.network === stuck)
    expect(failed?.value).toBe("0")
  })

  it("an anchored batch moves the batch size and POST→ANCHORED histograms; head and signer balance are reported", async () => {
    const before = await scrape(metricsUrl)
    const ids: Array<string> = []
    for (let i = 0; i < 5; i++) {
      const r = await call(node.baseUrl, "POST", "/v1/anchor", { key: testKey, body: { data: { batch: i } } })
      ids.push(r.json.data.recordId)
    }
    await waitFor("records ANCHORED", allAnchored(node.databaseUrl, ids), 30_000)
    const after = await waitFor("the anchored records counted", async () => {
      const f = await scrape(metricsUrl)
      return value(f, "anchord_record_anchor_latency_seconds", { network: anchoring }) -
              value(before, "anchord_record_anchor_latency_seconds", { network: anchoring }) >= 5 && f
    }, 15_000)
    const size = { network: anchoring }
    expect(histogramSum(after, "anchord_batch_size_records", size) - histogramSum(before, "anchord_batch_size_records", size)).toBeGreaterThanOrEqual(5)
    expect(value(after, "anchord_batch_size_records", size)).toBeGreaterThan(value(before, "anchord_batch_size_records", size))
    const latency = histogramSum(after, "anchord_record_anchor_latency_seconds", size) - histogramSum(before, "anchord_record_anchor_latency_seconds", size)
    expect(latency).toBeGreaterThan(0)
    expect(latency).toBeLessThan(5 * 60)
    expect(value(after, "anchord_chain_head_block", { network: anchoring })).toBeGreaterThan(0)
    expect(value(after, "anchord_network_leader", { network: anchoring })).toBe(1)
    expect(value(after, "anchord_evm_signer_balance_wei", { network: anchoring })).toBeGreaterThan(1e18)
    expect(value(after, "anchord_batches_open", { network: anchoring, state: "MINED" })).toBeGreaterThanOrEqual(0)
    expect(value(after, "anchord_db_pool_max_connections")).toBe(20)
    expect(value(after, "anchord_db_connections", { state: "idle" }) + value(after, "anchord_db_connections", { state: "active" })).toBeGreaterThan(0)
  }, 60_000)

  it("webhook deliveries move the attempts by outcome and the duration histogram", async () => {
    const before = await scrape(metricsUrl)
    for (const path of ["/ok", "/fail"]) {
      const r = await call(node.baseUrl, "POST", "/v1/anchor", { key: testKey, body: { data: { path }, webhookUrl: `${receiver.url}${path}` } })
      expect(r.status).toBe(202)
    }
    const after = await waitFor("a success and an http_error counted", async () => {
      const f = await scrape(metricsUrl)
      const moved = (outcome: string) => value(f, "anchord_webhook_attempts_total", { outcome }) - value(before, "anchord_webhook_attempts_total", { outcome })
      return moved("success") >= 1 && moved("http_error") >= 1 && f
    }, 30_000)
    expect(value(after, "anchord_webhook_attempt_duration_seconds", { outcome: "success" })).toBeGreaterThanOrEqual(1)
    expect(value(after, "anchord_webhook_attempt_duration_seconds", { outcome: "http_error" })).toBeGreaterThanOrEqual(1)
    // The failed delivery waits for its retry: the backlog shows it.
    await waitFor("the backlog", async () => value(await scrape(metricsUrl), "anchord_webhook_backlog") >= 1, 15_000)
  }, 60_000)

  it("the shipped alerting rules are well formed and use only metrics a scrape has", async () => {
    const rules = load(readFileSync(resolve(import.meta.dirname, "../../ops/prometheus/anchord-alerts.yml"), "utf8")) as {
      groups: Array<{ name: string; rules: Array<Record<string, unknown>> }>
    }
    const names = new Set((await scrape(metricsUrl)).families.map((f) => f.name))
    const alerts = rules.groups.flatMap((g) => {
      expect(typeof g.name).toBe("string")
      expect(g.rules.length).toBeGreaterThan(0)
      return g.rules
    })
    expect(alerts.length).toBeGreaterThanOrEqual(8)
    const seen = new Set<string>()
    for (const rule of alerts) {
      expect(Object.keys(rule).every((k) => ["alert", "expr", "for", "labels", "annotations", "keep_firing_for"].includes(k))).toBe(true)
      expect(rule.alert).toMatch(/^[A-Za-z_][A-Za-z0-9_]*$/)
      expect(seen.has(rule.alert as string)).toBe(false)
      seen.add(rule.alert as string)
      expect(typeof rule.expr).toBe("string")
      if (rule.for !== undefined) expect(rule.for).toMatch(/^\d+[smhd]$/)
      expect(["critical", "warning", "info"]).toContain((rule.labels as Record<string, string>).severity)
      expect(typeof (rule.annotations as Record<string, string>).summary).toBe("string")
      const referenced = [...(rule.expr as string).matchAll(/\banchord_[a-z0-9_]+/g)].map((m) => m[0].replace(/_(bucket|count|sum)$/, ""))
      // AnchordNodeDown reads Prometheus' own `up` series of the scrape job.
      if (rule.alert === "AnchordNodeDown") expect(rule.expr).toMatch(/^up\{job="anchord"\} == 0$/)
      else expect(referenced.length).toBeGreaterThan(0)
      // Only on a node serving TLS: read in test/http/tls.test.ts.
      for (const name of referenced.filter((n) => n !== "anchord_tls_certificate_expiry_timestamp_seconds")) {
        expect(names, `${rule.alert} uses ${name}`).toContain(name)
      }
    }
    for (const wanted of ["AnchordQueueAgeGrowing", "AnchordAnchoringStalled", "AnchordConfirmationLag", "AnchordSignerBalanceLow", "AnchordWebhookBacklog",
      "AnchordWebhookFailureRate", "AnchordHigh5xxRate", "AnchordDatabaseCircuitOpen", "AnchordDatabasePoolSaturated", "AnchordNodeDown",
      "AnchordBatchesFailed", "AnchordTlsCertificateExpiring"])
    {
      expect(seen).toContain(wanted)
    }
  })
})

describe("/metrics off by default", () => {
  it("no listener without METRICS_PORT", async () => {
    const node = await startNode()
    try {
      expect(Option.isNone((await node.runtime.runPromise(MetricsListener)).url)).toBe(true)
    } finally {
      await node.stop()
    }
  }, 30_000)
})
