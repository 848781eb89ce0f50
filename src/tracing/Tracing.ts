/**
 * Traces over OTLP/HTTP with Effect's own exporter (`effect/observability` OtlpTracer), configured by
 * the standard OpenTelemetry variables (docs/observability.md):
 *
 * - `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is) or `OTEL_EXPORTER_OTLP_ENDPOINT` (+ `/v1/traces`).
 *   Neither set (or `OTEL_SDK_DISABLED=true`, or `OTEL_TRACES_EXPORTER=none`): no tracer is installed,
 *   the node runs on Effect's default (native) tracer, whose spans go nowhere.
 * - `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` (the resource; service.name defaults to "anchord"),
 *   `OTEL_EXPORTER_OTLP_HEADERS` / `_TRACES_HEADERS`, `OTEL_EXPORTER_OTLP_PROTOCOL` / `_TRACES_PROTOCOL`
 *   (`http/protobuf`, the spec's default, or `http/json`), `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`.
 * - `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG`: see `sampling` below.
 *
 * Effect 4 decides a span's `sampled` flag before asking the tracer for it (false under an unsampled
 * parent); it has no sampler of its own. So the exporter is wrapped in a tracer that applies the
 * configured sampler when a trace starts (no parent, or a remote parent from `traceparent`), hands
 * sampled spans to the OTLP tracer and answers unsampled ones with a bare span object that records
 * nothing and is never exported.
 */
import { Config, Effect, Layer, Option, Tracer } from "effect"
import { FetchHttpClient } from "effect/http"
import { OtlpExporter, OtlpSerialization, OtlpTracer } from "effect/observability"
import type { Exit } from "effect"
import { VERSION } from "../version.ts"

export const SAMPLERS = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio"
] as const
export type SamplerName = typeof SAMPLERS[number]

export interface Sampler {
  readonly name: SamplerName
  /** For the ratio samplers: the share of new traces sampled, 0 to 1. */
  readonly ratio: number
}

/** One 52-bit slice of a trace id (its last 13 hex digits) as a number in [0, 1): the same answer for the same trace. */
const traceIdFraction = (traceId: string): number => {
  const tail = Number.parseInt(traceId.slice(-13), 16)
  return Number.isFinite(tail) ? tail / 2 ** 52 : Math.random()
}

/**
 * The sampler's decision for a span Effect would sample (`options.sampled` already false under an
 * unsampled parent). A local parent's decision is inherited by its children with every sampler: a
 * trace is kept or dropped whole. A remote parent (`traceparent`) is obeyed by the `parentbased_*`
 * samplers; otherwise the ratio applies to its trace id. A new trace is kept with the ratio's
 * probability (its id is drawn at random anyway, so a random draw is the same distribution).
 */
export const decide = (sampler: Sampler, parent: Option.Option<Tracer.AnySpan>): boolean => {
  if (Option.isSome(parent)) {
    const p = parent.value
    if (p._tag === "Span") return p.sampled
    switch (sampler.name) {
      case "always_on":
        return true
      case "always_off":
        return false
      case "traceidratio":
        return traceIdFraction(p.traceId) < sampler.ratio
      default:
        return p.sampled
    }
  }
  switch (sampler.name) {
    case "always_on":
    case "parentbased_always_on":
      return true
    case "always_off":
    case "parentbased_always_off":
      return false
    default:
      return sampler.ratio >= 1 || (sampler.ratio > 0 && Math.random() < sampler.ratio)
  }
}

const hex = (digits: number) => {
  let s = ""
  for (let i = 0; i < digits; i += 8) s += Math.floor(Math.random() * 2 ** 32).toString(16).padStart(8, "0")
  return s.slice(0, digits)
}

const noAttributes: Map<string, unknown> = new Map()

/**
 * A span that was not sampled: it carries ids (propagated to webhook receivers as `traceparent` with
 * the sampled flag off, and inherited by its children) and records nothing.
 */
class UnsampledSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly sampled = false
  readonly name: string
  readonly parent: Option.Option<Tracer.AnySpan>
  readonly annotations: Tracer.Span["annotations"]
  readonly links: Array<Tracer.SpanLink> = []
  readonly kind: Tracer.SpanKind
  status: Tracer.SpanStatus
  private _traceId: string | undefined
  private _spanId: string | undefined
  constructor(options: Parameters<Tracer.Tracer["span"]>[0]) {
    this.name = options.name
    this.parent = options.parent
    this.annotations = options.annotations
    this.kind = options.kind
    this.status = { _tag: "Started", startTime: options.startTime }
  }
  get traceId(): string {
    return this._traceId ??= Option.isSome(this.parent) ? this.parent.value.traceId : hex(32)
  }
  get spanId(): string {
    return this._spanId ??= hex(16)
  }
  get attributes(): ReadonlyMap<string, unknown> {
    return noAttributes
  }
  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    if (this.status._tag === "Started") this.status = { _tag: "Ended", startTime: this.status.startTime, endTime, exit }
  }
  attribute(): void {}
  event(): void {}
  addLinks(): void {}
}

/** `inner` (the OTLP tracer) behind the sampler: unsampled spans never reach it. */
export const sampling = (sampler: Sampler, inner: Tracer.Tracer): Tracer.Tracer =>
  Tracer.make({
    span(options) {
      return options.sampled && decide(sampler, options.parent)
        ? inner.span(options)
        : new UnsampledSpan(options)
    },
    context: inner.context
  })

/** What the OTEL_* variables ask for; `undefined` when tracing is off. */
export interface TracingConfig {
  readonly url: string
  readonly protocol: "http/protobuf" | "http/json"
  readonly headers: Record<string, string> | undefined
  readonly sampler: Sampler
  readonly serviceName: string | undefined
  readonly exportIntervalMillis: number | undefined
  readonly maxBatchSize: number | undefined
}

const optionalString = (name: string) => Config.option(Config.String(name)).pipe(Config.map(Option.getOrUndefined))

/** `k=v,k2=v2`, percent-decoded (the OTLP headers format). */
const parseHeaders = (text: string | undefined): Record<string, string> | undefined => {
  if (text === undefined || text.trim() === "") return undefined
  const out: Record<string, string> = {}
  for (const pair of text.split(",")) {
    const at = pair.indexOf("=")
    if (at <= 0) continue
    out[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim())
  }
  return out
}

export const tracingConfig = Effect.gen(function*() {
  const disabled = yield* Config.Boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false))
  const exporter = ((yield* optionalString("OTEL_TRACES_EXPORTER")) ?? "otlp").toLowerCase().split(",").map((s) => s.trim())
  const tracesEndpoint = yield* optionalString("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
  const baseEndpoint = yield* optionalString("OTEL_EXPORTER_OTLP_ENDPOINT")
  if (disabled || !exporter.includes("otlp")) return undefined
  let url: string
  if (tracesEndpoint !== undefined && tracesEndpoint.trim() !== "") url = new URL(tracesEndpoint.trim()).toString()
  else if (baseEndpoint !== undefined && baseEndpoint.trim() !== "") {
    const base = new URL(baseEndpoint.trim())
    base.pathname += `${base.pathname.endsWith("/") ? "" : "/"}v1/traces`
    url = base.toString()
  } else return undefined
  const protocol = (yield* optionalString("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")) ??
    (yield* optionalString("OTEL_EXPORTER_OTLP_PROTOCOL")) ?? "http/protobuf"
  if (protocol !== "http/protobuf" && protocol !== "http/json") {
    return yield* Effect.fail(new Error(`OTEL_EXPORTER_OTLP_PROTOCOL: "${protocol}" is not supported (http/protobuf or http/json; no grpc)`))
  }
  const name = ((yield* optionalString("OTEL_TRACES_SAMPLER"))?.trim() || "parentbased_always_on") as SamplerName
  if (!SAMPLERS.includes(name)) {
    return yield* Effect.fail(new Error(`OTEL_TRACES_SAMPLER: "${name}" is not one of ${SAMPLERS.join(", ")}`))
  }
  const arg = yield* optionalString("OTEL_TRACES_SAMPLER_ARG")
  const ratio = arg === undefined || arg.trim() === "" ? 1 : Number(arg)
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
    return yield* Effect.fail(new Error(`OTEL_TRACES_SAMPLER_ARG: "${arg}" is not a ratio between 0 and 1`))
  }
  const headers = parseHeaders((yield* optionalString("OTEL_EXPORTER_OTLP_TRACES_HEADERS")) ?? (yield* optionalString("OTEL_EXPORTER_OTLP_HEADERS")))
  // "anchord" unless the operator names the service (OtlpResource reads both variables itself).
  const named = (yield* optionalString("OTEL_SERVICE_NAME")) !== undefined ||
    /(^|,)\s*service\.name\s*=/.test((yield* optionalString("OTEL_RESOURCE_ATTRIBUTES")) ?? "")
  const exportIntervalMillis = yield* Config.option(Config.Int("OTEL_BSP_SCHEDULE_DELAY")).pipe(Config.map(Option.getOrUndefined))
  const maxBatchSize = yield* Config.option(Config.Int("OTEL_BSP_MAX_EXPORT_BATCH_SIZE")).pipe(Config.map(Option.getOrUndefined))
  return {
    url,
    protocol,
    headers,
    sampler: { name, ratio },
    serviceName: named ? undefined : "anchord",
    exportIntervalMillis,
    maxBatchSize
  } satisfies TracingConfig
})

/** The endpoint without credentials or query (the URL may carry a vendor's token). */
const printableUrl = (url: string) => {
  const u = new URL(url)
  return `${u.protocol}//${u.host}${u.pathname}`
}

/** The OTLP tracer behind the sampler, flushed when the layer's scope closes (the node's shutdown). */
export const layerWith = (config: TracingConfig) =>
  Layer.effect(
    Tracer.Tracer,
    Effect.map(
      OtlpTracer.make({
        url: config.url,
        resource: { serviceName: config.serviceName, serviceVersion: VERSION },
        headers: config.headers,
        exportInterval: config.exportIntervalMillis,
        maxBatchSize: config.maxBatchSize
      }),
      (inner) => sampling(config.sampler, inner)
    )
  ).pipe(
    Layer.provideMerge(OtlpExporter.layerFlusher),
    // Its own client: the exporter's requests are not webhooks (no egress policy) and are not traced.
    Layer.provide(FetchHttpClient.layer),
    Layer.provide(config.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf)
  )

/**
 * Tracing from the OTEL_* variables (of the ambient ConfigProvider), or nothing at all when no endpoint
 * is set. A bad sampler, ratio or protocol stops the start with a message naming the variable.
 */
export const TracingLayer = Layer.unwrap(Effect.gen(function*() {
  const config = yield* tracingConfig.pipe(Effect.mapError((e) => e instanceof Error ? e : new Error(String(e))))
  if (config === undefined) return Layer.empty
  yield* Effect.logInfo("traces exported over OTLP").pipe(Effect.annotateLogs({
    url: printableUrl(config.url),
    protocol: config.protocol,
    sampler: config.sampler.name,
    ratio: config.sampler.ratio
  }))
  return layerWith(config)
}))
