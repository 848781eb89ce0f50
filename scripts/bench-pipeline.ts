/**
 * npm run bench:pipeline — the whole pipeline as a user sees it: an open-loop client posts batches of
 * 50 unique records to POST /v1/anchor/batch at a steady rate, the account's global webhook points at a
 * receiver in this process, and every record is timed from its POST to its ANCHORED row and to its
 * `anchor.confirmed` at the receiver. `anchord start` runs in its own process against an embedded
 * PostgreSQL (or DATABASE_URL), anvil (automine, confirmations 1, 1 s batch window) and, for Fabric and
 * hybrid records, the Fabric dev peer in this process.
 *
 * Prints per rate: the accepted rate, POST → ANCHORED and POST → webhook p50 / p99, the backlog (records
 * accepted and not yet delivered) over the run and at its end, node and PostgreSQL CPU per record, and
 * the highest rate held (p99 POST → webhook ≤ 3 s, backlog flat, everything delivered within 60 s of the
 * end). Appends the figures to docs/benchmarks.md (BENCH_NO_APPEND=1 to skip).
 *
 * BENCH_RATES (records/s, default "500,1000,2000"), BENCH_SECONDS (per rate, default 300),
 * BENCH_CHAINS (default "evm"; "evm,fabric,hybrid" for all three), DATABASE_URL, BENCH_NODE_ARGS (extra
 * Node flags for the node's process, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
 *
 * BENCH_TRACE_RATIO (e.g. 0.01): the node exports traces over OTLP/HTTP (docs/observability.md) to a sink in
 * this process that counts and discards them, sampled by parentbased_traceidratio at that ratio: run once
 * without and once with it for tracing's overhead. Unset: the OTEL_* variables of the environment pass
 * through to the node as they are (none set: no tracing).
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { Effect, Redacted } from "effect"
import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "effect/sql"
import type { Hex } from "viem"
import { freePort } from "../src/dev/EmbeddedPostgres.ts"
import { startDevPeer } from "../src/dev/fabric-peer/index.ts"
import { deployAnchorRegistry } from "../src/evm/deploy.ts"
import { benchDatabase } from "./bench/database.ts"
import { runCli, startAnvil } from "./bench/anvil.ts"

const RATES = (process.env.BENCH_RATES ?? "500,1000,2000").split(",").map(Number)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 300)
const CHAINS = (process.env.BENCH_CHAINS ?? "evm").split(",").map((c) => c.trim()) as Array<"evm" | "fabric" | "hybrid">
const TRACE_RATIO = process.env.BENCH_TRACE_RATIO === undefined || process.env.BENCH_TRACE_RATIO === "" ? undefined : Number(process.env.BENCH_TRACE_RATIO)
if (TRACE_RATIO !== undefined && !(TRACE_RATIO >= 0 && TRACE_RATIO <= 1)) throw new Error("BENCH_TRACE_RATIO: a ratio between 0 and 1")
const BATCH = 50
const WINDOW_MS = 1000
const TARGET_P99_MS = 3000
const DRAIN_MS = 60_000
const ANVIL_KEY: Hex = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80" // anvil/hardhat dev account #0
const root = Path.resolve(import.meta.dirname, "..")
const log = (line: string) => console.log(`[bench:pipeline] ${line}`)
const pct = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
const secs = (ms: number) => Number.isFinite(ms) ? `${(ms / 1000).toFixed(2)} s` : "—"

/** CPU time (user + system, ms) of a process and of its children (live ones read directly, ended ones as reaped). */
const ticks = Number(ChildProcess.execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100
const stat = (pid: number) => {
  try {
    const f = Fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
    return { self: (Number(f[11]) + Number(f[12])) * 1000 / ticks, reaped: (Number(f[13]) + Number(f[14])) * 1000 / ticks }
  } catch {
    return { self: 0, reaped: 0 }
  }
}
const children = (pid: number): Array<number> => {
  try {
    return ChildProcess.execFileSync("ps", ["-o", "pid=", "--ppid", String(pid)]).toString().split("\n").map((s) => Number(s.trim())).filter((n) => n > 0)
  } catch {
    return []
  }
}
const treeCpu = (pid: number) => {
  const own = stat(pid)
  return own.self + own.reaped + children(pid).reduce((sum, c) => sum + stat(c).self, 0)
}

/** The whole machine's CPU (all cores), from /proc/stat: busy and total jiffies. */
const machineCpu = () => {
  const f = Fs.readFileSync("/proc/stat", "utf8").split("\n")[0]!.split(/\s+/).slice(1).map(Number)
  const idle = f[3]! + f[4]!
  const total = f.reduce((a, b) => a + b, 0)
  return { busy: total - idle, total }
}

interface RateResult {
  readonly chain: string
  readonly rate: number
  readonly accepted: number
  readonly acceptedPerSecond: number
  readonly refused: number
  readonly anchoredP50: number
  readonly anchoredP99: number
  readonly webhookP50: number
  readonly webhookP99: number
  /** Accepted and not yet delivered, sampled every 10 s during the load: [first half max, second half max]. */
  readonly backlogHalves: readonly [number, number]
  readonly backlogAtEnd: number
  readonly undeliveredAfterDrain: number
  readonly nodeCpuUsPerRecord: number
  readonly pgCpuUsPerRecord: number
  /** The machine's CPU busy over the load (all cores; the load generator and receiver included). */
  readonly machineBusyPercent: number
  /** This process (the load generator and the webhook receiver), CPU per record. */
  readonly benchCpuUsPerRecord: number
  /** PostgreSQL's write-ahead log over the load and drain: bytes per record, the full-page images' share, checkpoints. */
  readonly walBytesPerRecord: number
  readonly walFpiShare: number
  readonly checkpoints: number
  readonly held: boolean
}

/**
 * The server's WAL written so far (bytes; full-page images estimated as 8 KiB each, before compression)
 * and its checkpoints (pg_stat_checkpointer from PostgreSQL 17, pg_stat_bgwriter before).
 */
const walStats = async (sql: <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) => Promise<A>) => {
  const [wal] = await sql((s) => s<{ bytes: number; fpi: number; version: number }>`
    SELECT wal_bytes::float8 AS bytes, wal_fpi::float8 AS fpi, current_setting('server_version_num')::int AS version FROM pg_stat_wal`)
  const [cp] = await sql((s) => wal!.version >= 170000
    ? s<{ n: number }>`SELECT (num_timed + num_requested)::float8 AS n FROM pg_stat_checkpointer`
    : s<{ n: number }>`SELECT (checkpoints_timed + checkpoints_req)::float8 AS n FROM pg_stat_bgwriter`)
  return { bytes: wal!.bytes, fpiBytes: wal!.fpi * 8192, checkpoints: cp!.n }
}

const main = async () => {
  const tmp = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-bench-pipeline-"))
  Fs.chmodSync(tmp, 0o755)
  // pg_stat_statements: where PostgreSQL's time goes, statement by statement, per record.
  const db = await benchDatabase(tmp, log, ["-c", "shared_preload_libraries=pg_stat_statements", "-c", "pg_stat_statements.track=all",
    ...(process.env.BENCH_PG_FLAGS ?? "").split(" ").filter((f) => f !== "")])
  const anvil = await startAnvil()
  const peer = CHAINS.some((c) => c !== "evm") ? await startDevPeer({ dataDir: Path.join(tmp, "fabric-devpeer") }) : undefined
  const cleanups: Array<() => unknown> = [() => anvil.stop(), () => peer?.close(), () => db.stop()]
  try {
    const d = await deployAnchorRegistry({ rpcUrl: anvil.rpcUrl, privateKey: ANVIL_KEY })

    // The receiver: when each record's anchor.confirmed first arrived.
    const deliveredAt = new Map<string, number>()
    const receiver = Http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const at = performance.now()
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { recordId?: string }
          if (body.recordId !== undefined && !deliveredAt.has(body.recordId)) deliveredAt.set(body.recordId, at)
        } catch {}
        res.writeHead(200, { "content-type": "text/plain" })
        res.end("ok")
      })
    })
    receiver.keepAliveTimeout = 65_000
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r))
    cleanups.push(() => receiver.close())
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`

    // BENCH_TRACE_RATIO: an OTLP/HTTP sink that reads and discards what the node exports (counted for the report).
    const traced = { requests: 0, bytes: 0 }
    const tracing: Record<string, string> = {}
    if (TRACE_RATIO !== undefined) {
      const sink = Http.createServer((req, res) => {
        req.on("data", (c: Buffer) => { traced.bytes += c.length })
        req.on("end", () => {
          traced.requests++
          res.writeHead(200, { "content-type": String(req.headers["content-type"] ?? "application/x-protobuf") }).end()
        })
      })
      await new Promise<void>((r) => sink.listen(0, "127.0.0.1", r))
      cleanups.push(() => sink.close())
      Object.assign(tracing, {
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(sink.address() as { port: number }).port}`,
        OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
        OTEL_TRACES_SAMPLER_ARG: String(TRACE_RATIO),
        OTEL_SERVICE_NAME: "anchord-bench"
      })
      log(`tracing on: parentbased_traceidratio ${TRACE_RATIO}, to a discarding OTLP sink`)
    }

    const env: Record<string, string> = {
      DATABASE_URL: db.url,
      ANCHORD_DATA_DIR: tmp,
      EVM_NETWORKS: JSON.stringify([{
        networkId: "bench-anvil", rpcUrl: anvil.rpcUrl, chainId: d.chainId, contractAddress: d.address, confirmations: 1,
        environment: "test", batchMaxSize: 10_000, batchWindowMs: WINDOW_MS, pollIntervalMs: 200
      }]),
      EVM_PRIVATE_KEY_BENCH_ANVIL: ANVIL_KEY,
      ...(peer === undefined ? {} : {
        FABRIC_NETWORKS: JSON.stringify([{
          networkId: "bench-fabric", environment: "test", peerEndpoint: peer.address, mspId: peer.mspId,
          certPath: peer.clientIdentity.certPath, keyPath: peer.clientIdentity.keyPath, channel: peer.channel, chaincode: peer.chaincode,
          batchMaxSize: 10_000, batchWindowMs: WINDOW_MS
        }])
      }),
      LOG_LEVEL: "warn"
    }
    const account = runCli(["accounts", "create", "bench", "--plan", "ENTERPRISE", "--rate-per-second", "10000000", "--activate", "--json"], env)
    const key = runCli(["keys", "create", account.id, "--json"], env).key as string
    const port = await freePort()
    // BENCH_NODE_ARGS: extra Node flags for the node, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile it
    const nodeArgs = (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter((a) => a !== "")
    const node = ChildProcess.spawn(process.execPath, [...nodeArgs, Path.join(root, "src/cli/main.ts"), "start"], {
      // The receiver is on loopback, which the egress policy opens only when told.
      cwd: root, env: { ...process.env, ...env, ...tracing, PORT: String(port), WEBHOOK_ALLOW_PRIVATE: "loopback" }, stdio: ["ignore", "ignore", "inherit"]
    })
    cleanups.unshift(() => node.kill("SIGTERM"))
    const base = `http://127.0.0.1:${port}`
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${base}/v1/health`)).ok) break
      } catch {}
      if (i > 300) throw new Error("node did not start")
      await new Promise((r) => setTimeout(r, 100))
    }
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" }
    const put = await fetch(`${base}/v1/webhooks`, { method: "PUT", headers, body: JSON.stringify({ url: receiverUrl, enabled: true, events: ["anchor.confirmed"] }) })
    if (put.status !== 200) throw new Error(`PUT /v1/webhooks ${put.status}`)

    // The PostgreSQL server's processes (embedded: the postmaster and its backends).
    const pgPid = db.embedded ? Number(Fs.readFileSync(Path.join(tmp, "pg", "postmaster.pid"), "utf8").split("\n")[0]) : undefined
    const agent = new Http.Agent({ keepAlive: true, maxSockets: 64 })

    const sql = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
      Effect.runPromise(Effect.scoped(Effect.flatMap(SqlClient.SqlClient, f).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(db.url) })))))

    const statements = db.embedded
    if (statements) await sql((s) => s`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`)
    const results: Array<RateResult> = []
    const profiles: Array<string> = []
    for (const chain of CHAINS) {
      for (const rate of RATES) {
        log(`${chain} at ${rate} records/s for ${SECONDS} s (batches of ${BATCH})`)
        const postedAt = new Map<string, number>()
        let refused = 0
        let requests = 0
        const interval = (BATCH / rate) * 1000
        if (statements) await sql((s) => s`SELECT pg_stat_statements_reset()`)
        const wal0 = await walStats(sql)
        const cpu0 = { node: treeCpu(node.pid!), pg: pgPid === undefined ? NaN : treeCpu(pgPid) }
        const machine0 = machineCpu()
        const self0 = process.cpuUsage()
        const t0 = performance.now()
        const backlog: Array<number> = []
        const sampler = setInterval(() => {
          backlog.push(postedAt.size - [...postedAt.keys()].filter((id) => deliveredAt.has(id)).length)
          // progress every 30 s: a 5-minute run is otherwise silent
          if (backlog.length % 3 === 0) {
            log(`${chain} ${rate}/s: ${Math.round((performance.now() - t0) / 1000)} of ${SECONDS} s, ${postedAt.size} accepted, backlog ${backlog.at(-1)}`)
          }
        }, 10_000)
        const inFlight = new Set<Promise<void>>()
        // Open loop: request i goes at t0 + i × interval, whether or not earlier ones were answered.
        for (let i = 0; performance.now() - t0 < SECONDS * 1000; i++) {
          const due = t0 + i * interval
          const wait = due - performance.now()
          if (wait > 1) await new Promise((r) => setTimeout(r, wait))
          const sent = performance.now()
          const records = Array.from({ length: BATCH }, (_, j) => ({ data: { run: `${chain}-${rate}`, i, j, at: Date.now() }, chain }))
          requests++
          const p = new Promise<void>((resolve) => {
            const req = Http.request(`${base}/v1/anchor/batch`, { method: "POST", headers, agent }, (res) => {
              const chunks: Array<Buffer> = []
              res.on("data", (c: Buffer) => chunks.push(c))
              res.on("end", () => {
                try {
                  const body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
                  for (const r of body?.data?.results ?? []) {
                    if (r.success) postedAt.set(r.data.recordId, sent)
                    else refused++
                  }
                  if (res.statusCode !== 202 && res.statusCode !== 207) refused += BATCH
                } catch {
                  refused += BATCH
                }
                resolve()
              })
            })
            req.on("error", () => {
              refused += BATCH
              resolve()
            })
            req.end(JSON.stringify({ records }))
          }).finally(() => inFlight.delete(p))
          inFlight.add(p)
        }
        await Promise.all([...inFlight])
        clearInterval(sampler)
        const loadMs = performance.now() - t0
        const machine1 = machineCpu()
        const self1 = process.cpuUsage(self0)
        const ids = [...postedAt.keys()]
        const backlogAtEnd = ids.filter((id) => !deliveredAt.has(id)).length
        // Drain: what was accepted is delivered within 60 s of the end (or counted as not).
        const drainStart = performance.now()
        while (ids.some((id) => !deliveredAt.has(id)) && performance.now() - drainStart < DRAIN_MS) await new Promise((r) => setTimeout(r, 200))
        const undelivered = ids.filter((id) => !deliveredAt.has(id)).length
        // CPU over the load and the drain: the work each accepted record caused, wherever it happened.
        const cpu1 = { node: treeCpu(node.pid!), pg: pgPid === undefined ? NaN : treeCpu(pgPid) }
        const wal1 = await walStats(sql)
        if (statements) {
          const top = await sql((s) => s<{ query: string; calls: number; total: number }>`
            SELECT regexp_replace(query, '\\s+', ' ', 'g') AS query, calls::float8 AS calls, total_exec_time::float8 AS total
            FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC LIMIT 12`)
          const n = Math.max(1, ids.length)
          const rows = top.map((t) =>
            `| ${(t.total * 1000 / n).toFixed(0)} | ${(t.calls / n).toFixed(3)} | \`${t.query.slice(0, 110).replaceAll("|", "\\|")}${t.query.length > 110 ? "…" : ""}\` |`)
          profiles.push([`PostgreSQL time per record by statement (${chain}, ${rate}/s; pg_stat_statements, execution time):`, "", "| µs/record | calls/record | statement |", "|---:|---:|---|", ...rows, ""].join("\n"))
          log(profiles.at(-1)!)
        }
        // POST → ANCHORED: when the batch that completed the record was confirmed (its state is read from its
        // batches, migration 0016: the record row is not updated), against the POST.
        const wallOffset = Date.now() - performance.now()
        const anchored = await sql((s) => s<{ id: string; t: number }>`
          SELECT st.id, (extract(epoch from (SELECT max(b.confirmed_at) FROM anchors a JOIN anchor_batches b ON b.id = a.batch_id
            WHERE a.record_id = st.id)) * 1000)::float8 AS t FROM record_states st
          WHERE st.status = 'ANCHORED' AND st.id = ANY(${`{${ids.join(",")}}`}::text[])`)
        const anchoredMs = anchored.map((r) => r.t - wallOffset - postedAt.get(r.id)!).sort((a, b) => a - b)
        const webhookMs = ids.filter((id) => deliveredAt.has(id)).map((id) => deliveredAt.get(id)! - postedAt.get(id)!).sort((a, b) => a - b)
        // Undelivered records count as slower than anything delivered (they are in the tail).
        const tail = [...webhookMs, ...Array.from({ length: undelivered }, () => Number.POSITIVE_INFINITY)]
        const half = Math.ceil(backlog.length / 2)
        const halves = [Math.max(0, ...backlog.slice(0, half)), Math.max(0, ...backlog.slice(half))] as const
        const result: RateResult = {
          chain, rate, accepted: ids.length, acceptedPerSecond: ids.length / (loadMs / 1000), refused,
          anchoredP50: pct(anchoredMs, 50), anchoredP99: pct(anchoredMs, 99),
          webhookP50: pct(tail, 50), webhookP99: pct(tail, 99),
          backlogHalves: halves, backlogAtEnd, undeliveredAfterDrain: undelivered,
          nodeCpuUsPerRecord: ((cpu1.node - cpu0.node) * 1000) / Math.max(1, ids.length),
          pgCpuUsPerRecord: ((cpu1.pg - cpu0.pg) * 1000) / Math.max(1, ids.length),
          benchCpuUsPerRecord: (self1.user + self1.system) / Math.max(1, ids.length),
          machineBusyPercent: (100 * (machine1.busy - machine0.busy)) / Math.max(1, machine1.total - machine0.total),
          walBytesPerRecord: (wal1.bytes - wal0.bytes) / Math.max(1, ids.length),
          walFpiShare: (wal1.fpiBytes - wal0.fpiBytes) / Math.max(1, wal1.bytes - wal0.bytes),
          checkpoints: wal1.checkpoints - wal0.checkpoints,
          // Held: p99 within the target, the backlog not growing (second half no more than the first plus
          // one window's worth of records), everything delivered after the load.
          held: pct(tail, 99) <= TARGET_P99_MS && halves[1] <= halves[0] + rate * 2 && undelivered === 0 && refused === 0
        }
        results.push(result)
        log(`${chain} ${rate}/s: accepted ${result.acceptedPerSecond.toFixed(0)}/s (${refused} refused), ANCHORED p50/p99 ${secs(result.anchoredP50)} / ${secs(result.anchoredP99)}, ` +
          `webhook p50/p99 ${secs(result.webhookP50)} / ${secs(result.webhookP99)}, backlog ${halves[0]} → ${halves[1]} (end ${backlogAtEnd}, undelivered after 60 s ${undelivered}), ` +
          `CPU per record node ${result.nodeCpuUsPerRecord.toFixed(0)} µs / PostgreSQL ${result.pgCpuUsPerRecord.toFixed(0)} µs, load generator ${result.benchCpuUsPerRecord.toFixed(0)} µs, machine ${result.machineBusyPercent.toFixed(0)}% busy, ` +
          `WAL ${(result.walBytesPerRecord / 1024).toFixed(1)} KiB per record (${(100 * result.walFpiShare).toFixed(0)}% full-page images), ${result.checkpoints} checkpoints — ${result.held ? "held" : "not held"}`)
        // Let the node settle before the next rate.
        await new Promise((r) => setTimeout(r, 3_000))
      }
    }

    // Report
    const machine = `${Os.cpus()[0]?.model ?? "cpu"} × ${Os.cpus().length}, ${(Os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`
    const heldBy = (chain: string) => Math.max(0, ...results.filter((r) => r.chain === chain && r.held).map((r) => r.rate))
    const lines = [
      "",
      `## bench:pipeline — ${new Date().toISOString()}`,
      "",
      `Machine: ${machine}. \`anchord start\` (own process), PostgreSQL ${db.embedded ? "embedded" : "external"}, anvil (automine, confirmations 1), window ${WINDOW_MS} ms; ` +
        `open-loop client in the bench process: batches of ${BATCH} unique records to POST /v1/anchor/batch at a steady rate for ${SECONDS} s per rate; ` +
        `the account's global webhook (anchor.confirmed) to a receiver in the bench process. Backlog: accepted and not yet delivered (max over each half of the run). ` +
        (TRACE_RATIO === undefined ? "Tracing: off (BENCH_TRACE_RATIO unset)." : `Tracing: OTLP/HTTP, parentbased_traceidratio ${TRACE_RATIO}, to a discarding sink (${traced.requests} export requests, ${(traced.bytes / 1024).toFixed(0)} KiB).`),
      "",
      "| chain | rate | accepted/s | POST → ANCHORED p50 / p99 | POST → webhook p50 / p99 | backlog (1st half → 2nd) | at end | undelivered 60 s later | CPU/record node / PostgreSQL | machine busy | WAL/record (full pages) | checkpoints | held |",
      "|---|---:|---:|---|---|---|---:|---:|---|---:|---|---:|---|",
      ...results.map((r) =>
        `| ${r.chain} | ${r.rate} | ${r.acceptedPerSecond.toFixed(0)} | ${secs(r.anchoredP50)} / ${secs(r.anchoredP99)} | ${secs(r.webhookP50)} / ${secs(r.webhookP99)} | ` +
        `${r.backlogHalves[0]} → ${r.backlogHalves[1]} | ${r.backlogAtEnd} | ${r.undeliveredAfterDrain} | ${r.nodeCpuUsPerRecord.toFixed(0)} / ${r.pgCpuUsPerRecord.toFixed(0)} µs | ${r.machineBusyPercent.toFixed(0)}% | ` +
        `${(r.walBytesPerRecord / 1024).toFixed(1)} KiB (${(100 * r.walFpiShare).toFixed(0)}%) | ${r.checkpoints} | ${r.held ? "yes" : "no"} |`),
      "",
      ...(process.env.BENCH_PROFILE === "1" ? profiles : []),
      ...CHAINS.map((c) => `Highest rate held (${c}): **${heldBy(c) || "none of those tried"}**${heldBy(c) ? " records/s" : ""} (p99 POST → webhook ≤ 3 s, backlog flat, all delivered).`),
      ""
    ]
    console.log(lines.join("\n"))
    if (process.env.BENCH_NO_APPEND !== "1") {
      Fs.appendFileSync(Path.join(root, "docs/benchmarks.md"), lines.join("\n"))
      log("appended to docs/benchmarks.md")
    }
  } finally {
    for (const c of cleanups) {
      try {
        await c()
      } catch {}
    }
  }
}

main().then(() => process.exit(0), (e) => {
  console.error(e)
  process.exit(1)
})
