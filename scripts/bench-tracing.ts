/**
 * npm run bench:tracing — what tracing costs per request in CPU, load-independent enough for a shared
 * machine: one process, a fixed amount of work (requests shaped like an ingest POST: a root span with
 * nested `Effect.fn` spans, a record-id annotation and a log line), the process's CPU time for it
 * (process.cpuUsage), modes alternated round after round and the median taken.
 *
 * Modes: `off` (no tracer installed: Effect's native spans, as `anchord start` without OTEL_*), `ratio`
 * (the node's tracer, src/tracing/Tracing.ts, at BENCH_TRACE_RATIO, default 0.01, exporting over
 * OTLP/HTTP to a discarding sink in this process), and `none` (tracing disabled outright, a floor).
 * BENCH_REQUESTS per round (default 20000), BENCH_ROUNDS (default 7).
 */
import * as ChildProcess from "node:child_process"
import * as Readline from "node:readline"
import { Effect, Layer, References } from "effect"
import { annotateSampled } from "../src/tracing/attributes.ts"
import { layerWith } from "../src/tracing/Tracing.ts"

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7)
const RATIO = Number(process.env.BENCH_TRACE_RATIO ?? 0.01)

// A request's span shape (about the ingest POST's): server span → handler → 3 steps of 2 leaves each.
const leaf = Effect.fn("Bench.leaf")(function*(i: number) {
  return i + 1
})
const step = Effect.fn("Bench.step")(function*(i: number) {
  const a = yield* leaf(i)
  return a + (yield* leaf(a))
})
const handler = Effect.fn("Bench.handler")(function*(i: number) {
  yield* annotateSampled(() => ({ "anchord.record_id": `rec_${i}` }))
  let n = 0
  for (let k = 0; k < 3; k++) n += yield* step(i + k)
  return n
})
const request = (i: number) =>
  handler(i).pipe(Effect.withSpan("http.server POST", { root: true, kind: "server", attributes: { "http.request.method": "POST" } }))

// The discarding OTLP sink runs in a child process: its CPU is not the node's.
const sink = ChildProcess.spawn(process.execPath, ["-e", `
  let requests = 0, bytes = 0
  const server = require("node:http").createServer((req, res) => {
    req.on("data", (c) => bytes += c.length)
    req.on("end", () => { requests++; res.writeHead(200, { "content-type": "application/x-protobuf" }).end() })
  }).listen(0, "127.0.0.1", () => console.log(server.address().port))
  process.on("SIGTERM", () => { console.log(JSON.stringify({ requests, bytes })); process.exit(0) })
`], { stdio: ["ignore", "pipe", "inherit"] })
const lines = Readline.createInterface({ input: sink.stdout! })[Symbol.asyncIterator]()
const port = Number((await lines.next()).value)
const url = `http://127.0.0.1:${port}/v1/traces`

const tracing = layerWith({
  url,
  protocol: (process.env.BENCH_TRACE_PROTOCOL ?? "http/protobuf") as "http/protobuf" | "http/json",
  headers: undefined,
  sampler: { name: "parentbased_traceidratio", ratio: RATIO },
  serviceName: "bench",
  exportIntervalMillis: undefined,
  maxBatchSize: undefined
})
const modes: Record<string, Layer.Layer<never>> = {
  off: Layer.empty,
  ratio: tracing as Layer.Layer<never>,
  none: Layer.succeed(References.TracerEnabled, false) as unknown as Layer.Layer<never>
}

const run = (layer: Layer.Layer<never>) =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    yield* Layer.build(layer)
    // Warm-up, then the measured requests (one after another: CPU, not concurrency, is measured).
    for (let i = 0; i < 500; i++) yield* request(i)
    const before = process.cpuUsage()
    for (let i = 0; i < REQUESTS; i++) yield* request(i)
    const used = process.cpuUsage(before)
    return (used.user + used.system) / REQUESTS
  }).pipe(Effect.provide(layer))))

const samples: Record<string, Array<number>> = { off: [], ratio: [], none: [] }
for (let round = 0; round < ROUNDS; round++) {
  for (const mode of Object.keys(modes)) samples[mode]!.push(await run(modes[mode]!))
}
const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const off = median(samples.off!)
for (const [mode, xs] of Object.entries(samples)) {
  console.log(`[bench:tracing] ${mode.padEnd(5)} ${median(xs).toFixed(2)} µs CPU/request (median of ${ROUNDS}; min ${Math.min(...xs).toFixed(2)}) ` +
    `${mode === "off" ? "" : `${((median(xs) / off - 1) * 100).toFixed(1)}% vs off`}`)
}
sink.kill("SIGTERM")
const exported = JSON.parse(String((await lines.next()).value)) as { requests: number; bytes: number }
console.log(`[bench:tracing] ${REQUESTS} requests/round, ratio ${RATIO}: ${exported.requests} export requests, ${(exported.bytes / 1024).toFixed(0)} KiB`)
