/**
 * Traces (docs/observability.md): a node on anvil with OTEL_EXPORTER_OTLP_ENDPOINT pointing at an OTLP/HTTP
 * endpoint of this test's own (loopback), one record posted with a webhook: the spans of its path (ingest,
 * batch, transaction, confirmation, delivery) arrive, decoded from Effect's exporter's protobuf (the
 * default, http/protobuf) or JSON, joinable by their record / batch ids, with the resource from
 * OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES. A ratio sampler of 0 exports nothing; without an
 * endpoint no tracer is installed at all.
 *   npx vitest run test/tracing/traces.test.ts
 */
import * as Http from "node:http"
import { ConfigProvider, Effect, Layer, Option, Tracer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { decide, type SamplerName, TracingLayer } from "../../src/tracing/Tracing.ts"
import { startAnvil, type Anvil } from "../evm/anvil.ts"
import { makeNodeLayer } from "../../src/app/layers.ts"
import { EvmNetworks } from "../../src/evm/config.ts"
import { allAnchored, call, deploy, network, waitFor } from "../evm/support.ts"
import { startNode } from "../support/node.ts"
import { type Receiver, startReceiver } from "../webhooks/support.ts"

// ---- A minimal protobuf reader for the OTLP trace messages (wire format: varints and length-delimited fields).

type Fields = Map<number, Array<Buffer | bigint>>

const readVarint = (buf: Buffer, at: number): [bigint, number] => {
  let value = 0n, shift = 0n, i = at
  for (;;) {
    const b = buf[i++]!
    value |= BigInt(b & 0x7f) << shift
    if ((b & 0x80) === 0) return [value, i]
    shift += 7n
  }
}

const fields = (buf: Buffer): Fields => {
  const out: Fields = new Map()
  let i = 0
  while (i < buf.length) {
    const [tag, next] = readVarint(buf, i)
    i = next
    const field = Number(tag >> 3n), wire = Number(tag & 7n)
    let value: Buffer | bigint
    if (wire === 0) [value, i] = readVarint(buf, i)
    else if (wire === 1) {
      value = buf.subarray(i, i + 8)
      i += 8
    } else if (wire === 5) {
      value = buf.subarray(i, i + 4)
      i += 4
    } else if (wire === 2) {
      const [len, start] = readVarint(buf, i)
      value = buf.subarray(start, start + Number(len))
      i = start + Number(len)
    } else throw new Error(`unexpected wire type ${wire}`)
    out.set(field, [...(out.get(field) ?? []), value])
  }
  return out
}

const all = (f: Fields, n: number) => (f.get(n) ?? []) as Array<Buffer>
const one = (f: Fields, n: number) => all(f, n)[0]

const anyValue = (buf: Buffer): unknown => {
  const f = fields(buf)
  if (f.has(1)) return one(f, 1)!.toString("utf8")
  if (f.has(2)) return (f.get(2)![0] as bigint) !== 0n
  if (f.has(3)) return Number(BigInt.asIntN(64, f.get(3)![0] as bigint))
  if (f.has(4)) return one(f, 4)!.readDoubleLE(0)
  if (f.has(5)) return all(fields(one(f, 5)!), 1).map(anyValue)
  return undefined
}

const keyValues = (list: Array<Buffer>): Record<string, unknown> =>
  Object.fromEntries(list.map((kv) => {
    const f = fields(kv)
    return [one(f, 1)!.toString("utf8"), one(f, 2) === undefined ? undefined : anyValue(one(f, 2)!)]
  }))

interface Span {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string
  readonly name: string
  readonly kind: number
  readonly attributes: Record<string, unknown>
  readonly resource: Record<string, unknown>
}

const decodeProtobuf = (body: Buffer): Array<Span> =>
  all(fields(body), 1).flatMap((rs) => {
    const r = fields(rs)
    const resource = keyValues(one(r, 1) === undefined ? [] : all(fields(one(r, 1)!), 1))
    return all(r, 2).flatMap((ss) =>
      all(fields(ss), 2).map((s): Span => {
        const f = fields(s)
        return {
          traceId: one(f, 1)!.toString("hex"),
          spanId: one(f, 2)!.toString("hex"),
          parentSpanId: one(f, 4)?.toString("hex") ?? "",
          name: one(f, 5)!.toString("utf8"),
          kind: Number(f.get(6)?.[0] ?? 0n),
          attributes: keyValues(all(f, 9)),
          resource
        }
      })
    )
  })

interface JsonKv {
  key: string
  value: { stringValue?: string; intValue?: number | string; boolValue?: boolean; arrayValue?: { values: Array<JsonKv["value"]> } }
}
const jsonValue = (v: JsonKv["value"]): unknown =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : v.boolValue ?? v.arrayValue?.values.map(jsonValue))
const jsonKvs = (list: Array<JsonKv>) => Object.fromEntries(list.map((kv) => [kv.key, jsonValue(kv.value)]))

const decodeJson = (body: Buffer): Array<Span> =>
  (JSON.parse(body.toString("utf8")) as {
    resourceSpans: Array<{ resource: { attributes: Array<JsonKv> }; scopeSpans: Array<{ spans: Array<any> }> }>
  }).resourceSpans.flatMap((rs) =>
    rs.scopeSpans.flatMap((ss) =>
      ss.spans.map((s): Span => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? "",
        name: s.name,
        kind: s.kind,
        attributes: jsonKvs(s.attributes),
        resource: jsonKvs(rs.resource.attributes)
      }))
    )
  )

/** An OTLP/HTTP traces endpoint on loopback: every POST /v1/traces decoded by its content type. */
const startCollector = async () => {
  const spans: Array<Span> = []
  const requests: Array<{ path: string; contentType: string }> = []
  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const contentType = String(req.headers["content-type"] ?? "")
      requests.push({ path: req.url ?? "", contentType })
      const body = Buffer.concat(chunks)
      if (req.method === "POST" && req.url === "/v1/traces") {
        spans.push(...(contentType.includes("json") ? decodeJson(body) : decodeProtobuf(body)))
      }
      res.writeHead(200, { "content-type": contentType || "application/json" }).end(contentType.includes("json") ? "{}" : "")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as { port: number }).port
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

describe("traces over OTLP/HTTP", () => {
  let anvil: Anvil
  let receiver: Receiver
  let chain: { rpcUrl: string; privateKey: `0x${string}`; chainId: number; address: `0x${string}` }
  let n = 0

  beforeAll(async () => {
    receiver = await startReceiver()
    anvil = await startAnvil()
    const privateKey = await anvil.fundedKey()
    const d = await deploy(anvil.rpcUrl, privateKey)
    chain = { rpcUrl: anvil.rpcUrl, privateKey, chainId: d.chainId, address: d.address }
  }, 60_000)
  afterAll(async () => {
    await anvil?.stop()
    await receiver?.close()
  })

  /** A node with these OTEL_* variables; one record posted with a webhook, anchored and delivered; then the node stopped (its exporter flushed). */
  const oneRecord = async (env: Record<string, string>, headers: Record<string, string> = {}, exported?: (recordId: string) => boolean) => {
    const networkId = `traces-${++n}`
    const networks = [network({
      networkId,
      rpcUrl: chain.rpcUrl,
      chainId: chain.chainId,
      contractAddress: chain.address,
      confirmations: 1,
      environment: "test",
      batchMaxSize: 50,
      batchWindowMs: 200,
      pollIntervalMs: 200
    }, chain.privateKey)]
    // The node reads OTEL_* from its ConfigProvider: Effect's default one is a snapshot of process.env taken
    // once per process, so each node here gets its own.
    const node = await startNode({
      layer: makeNodeLayer(EvmNetworks.layerWith(networks)).pipe(
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { ...process.env as Record<string, string>, ...env } })))
      )
    })
    try {
      const key = (await node.createKey(await node.createAccount())).key
      const path = `/hook-${n}`
      const r = await call(node.baseUrl, "POST", "/v1/anchor", { key, headers, body: { data: { n }, webhookUrl: `${receiver.url}${path}` } })
      expect(r.status).toBe(202)
      const recordId: string = r.json.data.recordId
      await waitFor("record ANCHORED", allAnchored(node.databaseUrl, [recordId]), 30_000)
      await receiver.waitFor(1, 15_000, (x) => x.path === path && JSON.parse(x.body).type === "ANCHORED")
      // The spans expected, from the node's periodic export (not only from the flush at its stop, bounded to 3 s).
      if (exported !== undefined) await waitFor("spans exported", async () => exported(recordId), 15_000)
      return recordId
    } finally {
      await node.stop()
    }
  }

  it("one record's path (ingest, batch, transaction, confirmation, delivery) arrives, joinable by ids, with the resource", async () => {
    const collector = await startCollector()
    try {
      const recordId = await oneRecord({
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_SERVICE_NAME: "anchord-traces-test",
        OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=ci,team=ops%20one",
        OTEL_BSP_SCHEDULE_DELAY: "200"
      }, {}, (id) =>
        collector.spans.some((s) => s.name === "WebhookDispatcher.send" && s.attributes["anchord.record_id"] === id) &&
        collector.spans.some((s) => s.attributes["anchord.record_id"] === id && s.kind === 2) &&
        collector.spans.some((s) => s.name === "BatchStore.confirm"))
      const spans = collector.spans
      expect(collector.requests.every((r) => r.path === "/v1/traces" && r.contentType === "application/x-protobuf")).toBe(true)
      // Ingest: the POST's server span names the record.
      const ingest = spans.find((s) => s.attributes["anchord.record_id"] === recordId && s.kind === 2)
      expect(ingest, "ingest span").toBeDefined()
      expect(ingest!.attributes["http.request.method"]).toBe("POST")
      expect(ingest!.resource).toMatchObject({
        "service.name": "anchord-traces-test",
        "deployment.environment": "ci",
        "team": "ops one",
        "telemetry.sdk.name": "effect"
      })
      // Delivery: the record's ANCHORED webhook, with its batch id.
      const delivery = spans.find((s) =>
        s.name === "WebhookDispatcher.send" && s.attributes["anchord.record_id"] === recordId &&
        s.attributes["anchord.event"] === "ANCHORED"
      )
      expect(delivery, "delivery span").toBeDefined()
      const batchId = delivery!.attributes["anchord.batch_id"]
      expect(typeof batchId).toBe("string")
      // Batch, transaction, confirmation: joined by that batch id.
      const cut = spans.find((s) => s.name === "BatchStore.cutBatch" && s.attributes["anchord.batch_id"] === batchId)
      expect(cut, "batch span").toBeDefined()
      expect(cut!.attributes["anchord.record_count"]).toBe(1)
      const sent = spans.find((s) => s.name === "EvmWriter.send" && s.attributes["anchord.batch_id"] === batchId)
      expect(sent, "transaction span").toBeDefined()
      expect(sent!.attributes["anchord.tx_hash"]).toMatch(/^0x[0-9a-f]{64}$/)
      const confirmed = spans.find((s) => s.name === "BatchStore.confirm" && s.attributes["anchord.batch_id"] === batchId)
      expect(confirmed, "confirmation span").toBeDefined()
      // The children sit in their parents' traces (the cut inside the batcher's tick).
      const tick = spans.find((s) => s.spanId === cut!.parentSpanId)
      expect(tick?.name).toBe("Batcher.tick")
      expect(tick?.traceId).toBe(cut!.traceId)
    } finally {
      await collector.close()
    }
  }, 90_000)

  it("a ratio sampler of 0 exports nothing (and http/json is honoured)", async () => {
    const collector = await startCollector()
    try {
      await oneRecord({
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
        OTEL_TRACES_SAMPLER_ARG: "0",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_BSP_SCHEDULE_DELAY: "200"
      })
      expect(collector.spans).toEqual([])
    } finally {
      await collector.close()
    }
  }, 90_000)

  it("a caller's sampled traceparent is obeyed by the parent-based sampler, even at ratio 0", async () => {
    const collector = await startCollector()
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736", parentId = "00f067aa0ba902b7"
    try {
      const recordId = await oneRecord({
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
        OTEL_TRACES_SAMPLER_ARG: "0",
        OTEL_BSP_SCHEDULE_DELAY: "200"
      }, { traceparent: `00-${traceId}-${parentId}-01` }, (id) => collector.spans.some((s) => s.attributes["anchord.record_id"] === id))
      const ingest = collector.spans.find((s) => s.attributes["anchord.record_id"] === recordId && s.kind === 2)
      expect(ingest, "ingest span").toBeDefined()
      expect([ingest!.traceId, ingest!.parentSpanId]).toEqual([traceId, parentId])
      // Only the caller's trace: the node's own work at ratio 0 stays unsampled.
      expect(new Set(collector.spans.map((s) => s.traceId))).toEqual(new Set([traceId]))
    } finally {
      await collector.close()
    }
  }, 90_000)

  it("without an endpoint no tracer is installed (Effect's native one stays); with one it is", async () => {
    const tracerWith = (env: Record<string, string>) =>
      Effect.runPromise(Effect.tracer.pipe(
        Effect.provide(TracingLayer),
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(env))),
        Effect.scoped
      ))
    expect(await tracerWith({ OTEL_SERVICE_NAME: "x", OTEL_TRACES_SAMPLER: "always_on" })).toBe(Tracer.nativeTracer)
    expect(await tracerWith({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9" })).not.toBe(Tracer.nativeTracer)
    expect(await tracerWith({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", OTEL_SDK_DISABLED: "true" })).toBe(Tracer.nativeTracer)
    // A sampler, ratio or protocol the node does not know stops the start, naming the variable.
    await expect(tracerWith({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", OTEL_TRACES_SAMPLER_ARG: "2" }))
      .rejects.toThrow(/OTEL_TRACES_SAMPLER_ARG/)
    await expect(tracerWith({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", OTEL_TRACES_SAMPLER: "ratio" }))
      .rejects.toThrow(/OTEL_TRACES_SAMPLER: "ratio" is not one of/)
    await expect(tracerWith({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }))
      .rejects.toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL/)
  })
})

describe("the sampler's decisions", () => {
  const remote = (traceId: string, sampled: boolean) => Option.some(Tracer.externalSpan({ traceId, spanId: "00f067aa0ba902b7", sampled }))
  const s = (name: SamplerName, ratio = 1) => ({ name, ratio })

  it("new traces: always_* constant, ratio samplers keep about that share", () => {
    expect(decide(s("always_on"), Option.none())).toBe(true)
    expect(decide(s("always_off"), Option.none())).toBe(false)
    expect(decide(s("parentbased_always_off"), Option.none())).toBe(false)
    expect(decide(s("traceidratio", 0), Option.none())).toBe(false)
    expect(decide(s("parentbased_traceidratio", 1), Option.none())).toBe(true)
    let kept = 0
    for (let i = 0; i < 20_000; i++) if (decide(s("parentbased_traceidratio", 0.1), Option.none())) kept++
    expect(kept).toBeGreaterThan(1_600)
    expect(kept).toBeLessThan(2_400)
  })

  it("a remote parent: obeyed by parentbased_*, its trace id decides traceidratio (the same answer every time)", () => {
    expect(decide(s("parentbased_always_on"), remote("4bf92f3577b34da6a3ce929d0e0e4736", false))).toBe(false)
    expect(decide(s("parentbased_always_off"), remote("4bf92f3577b34da6a3ce929d0e0e4736", true))).toBe(true)
    expect(decide(s("always_on"), remote("4bf92f3577b34da6a3ce929d0e0e4736", false))).toBe(true)
    // The trace id's last 13 hex digits as a fraction: ...0000000000001 is ~0, ...fffffffffffff ~1.
    expect(decide(s("traceidratio", 0.5), remote("ffffffffffffffffff0000000000001", false))).toBe(true)
    expect(decide(s("traceidratio", 0.5), remote("00000000000000000fffffffffffff", true))).toBe(false)
  })
})
