/**
 * npm run bench:pipeline — the whole pipeline as a user sees it: an open-loop client posts batches of
 * 50 unique records to POST /v1/anchor/batch at a steady rate, the account's global webhook points at a
 * receiver in this process, and every record is timed from its POST to its ANCHORED row and to its
 * `anchor.confirmed` at the receiver. `anchord start` runs in its own process against an embedded
 * PostgreSQL (or DATABASE_URL), anvil (automine, confirmations 1, 1 s batch window) and, for Fabric and
 * hybrid records, the Fabric dev peer in this process.
 *
 * First, in the same run, the ingest-alone rate of POST /v1/anchor/batch (the ceiling the pipeline is
 * compared with): the production node with its pipeline held off — the bench holds the networks'
 * leadership (the advisory lock a leader holds) in a database of its own on the same server before the
 * node starts, so the node accepts and commits but cuts, anchors and announces nothing — under a closed
 * loop of BENCH_INGEST_CONNECTIONS (default 32) requests of 50, then twice as many, for
 * BENCH_INGEST_SECONDS each (default 20; 0: skip): the higher rate is the ceiling, and a rise of more
 * than 10% from the first to the second is flagged as not a plateau. Then the physical ceiling: a bare
 * keep-alive POST loop to the receiver (BENCH_BARE_SECONDS, default 10; 0: skip) gives one delivery's CPU,
 * sender and receiver; the cores ÷ (ingest alone's CPU per record + that) is the most any pipeline could hold
 * here, reported × the ingest-alone rate. Then the rates: BENCH_RATES (records/s) when set, else a ladder of BENCH_LADDER × the
 * ingest-alone rate (default "0.3,0.45,0.6,0.8"), climbing until a rate is not held (BENCH_LADDER_ALL=1:
 * every rate).
 *
 * Each configuration runs with one webhook request per record and with batched requests (BENCH_WEBHOOK_MODES, default
 * "single,batch"; docs/webhooks.md "Batched delivery"), each mode on a node of its own; BENCH_CONFIGS="dev" runs npm
 * start's configuration alone. BENCH_LOG_LEVEL (e.g. info) shows the production node's log lines.
 *
 * `--dev` (or BENCH_DEV=1): the same load also against the node as `npm start` runs it, after the
 * production configuration, in the same run: `anchord dev` with its own embedded PostgreSQL, dev chain
 * (anvil) and dev peer under a data directory of its own, default log level, metrics on, the dev account
 * and key it creates, and that account's global webhook for every kind (no `events`). Only its ports
 * are free ones (the machine may be shared).
 *
 * Prints per rate: the accepted rate, POST → ANCHORED and POST → webhook p50 / p99, the backlog (records
 * accepted and not yet delivered) over the run and at its end, node and PostgreSQL CPU per record, and
 * the highest rate held (p99 POST → webhook ≤ 3 s, backlog flat, everything delivered within 60 s of the
 * end); the headline is that rate ÷ the ingest-alone rate, per configuration. The header says how busy
 * the machine was in the 5 s before the run (other processes: ≥ 15% marks the run as LOADED). Appends
 * the figures to docs/benchmarks/runs.md (BENCH_NO_APPEND=1 to skip).
 *
 * BENCH_SECONDS per rate (default 60: a smoke run; issue 26's runs are 5 minutes per rate:
 * `BENCH_SECONDS=300 npm run bench:pipeline -- --dev`), BENCH_CHAINS (default "evm"; "evm,fabric,hybrid"
 * for all three), DATABASE_URL, BENCH_NODE_ARGS (extra Node flags for the node's process, e.g.
 * "--cpu-prof --cpu-prof-dir=/tmp/prof"), BENCH_PROFILE=1 (pg_stat_statements' top statements per rate
 * in the report).
 *
 * BENCH_TRACE_RATIO (e.g. 0.01): the node exports traces over OTLP/HTTP (docs/observability.md) to a sink in
 * this process that counts and discards them, sampled by parentbased_traceidratio at that ratio: run once
 * without and once with it for tracing's overhead. Unset: the OTEL_* variables of the environment pass
 * through to the production node as they are (none set: no tracing).
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { Effect, ManagedRuntime, Redacted } from "effect"
import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "effect/sql"
import type { Hex } from "viem"
import { freePort } from "../src/dev/EmbeddedPostgres.ts"
import { embeddedDatabaseUrl } from "../src/dev/devNode.ts"
import { startDevPeer } from "../src/dev/fabric-peer/index.ts"
import { deployAnchorRegistry } from "../src/evm/deploy.ts"
import { benchDatabase } from "./bench/database.ts"
import { runCli, startAnvil } from "./bench/anvil.ts"

/** `anchord <args> --json` of the checkout `nodeRoot` (its own migrations) against env; its parsed output. */
const runCliAt = (nodeRoot: string, args: Array<string>, env: Record<string, string>) =>
  JSON.parse(ChildProcess.execFileSync(process.execPath, [Path.join(nodeRoot, "src/cli/main.ts"), ...args], {
    cwd: nodeRoot,
    env: { ...process.env, ...env },
    encoding: "utf8"
  }))

const list = (v: string | undefined) => v === undefined || v.trim() === "" ? undefined : v.split(",").map(Number)
const RATES = list(process.env.BENCH_RATES)
const LADDER = list(process.env.BENCH_LADDER) ?? [0.3, 0.45, 0.6, 0.8]
const LADDER_ALL = process.env.BENCH_LADDER_ALL === "1"
const SECONDS = Number(process.env.BENCH_SECONDS ?? 60)
/** BENCH_NODE_ROOTS: checkouts (git worktrees) of the commits to compare, run alternately; unset: this checkout. */
const ROOTS = process.env.BENCH_NODE_ROOTS?.split(",").map((r) => r.trim()).filter((r) => r !== "").map((r) => Path.resolve(r))
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const INGEST_SECONDS = Number(process.env.BENCH_INGEST_SECONDS ?? (ROOTS === undefined ? 20 : 0))
const INGEST_CONNECTIONS = Number(process.env.BENCH_INGEST_CONNECTIONS ?? 32)
type Config = "production" | "dev"
/**
 * BENCH_WEBHOOK_MODES: the receiver's delivery modes, each run in turn on the same node (default "single,batch": one
 * request per record, then batched requests of up to BENCH_BATCH_MAX_EVENTS, default 100). A batched run's
 * configuration is labelled `<config>+batch`.
 */
const MODES = (process.env.BENCH_WEBHOOK_MODES ?? "single,batch").split(",").map((m) => m.trim()) as Array<"single" | "batch">
const BATCH_MAX_EVENTS = Number(process.env.BENCH_BATCH_MAX_EVENTS ?? 100)
const labelOf = (config: Config, mode: "single" | "batch") => mode === "single" ? config : `${config}+batch`
/** BENCH_CONFIGS ("production", "dev" or both, comma-separated) when set; else production, and `--dev` adds npm start's configuration. */
const CONFIGS: ReadonlyArray<Config> = process.env.BENCH_CONFIGS !== undefined && process.env.BENCH_CONFIGS.trim() !== ""
  ? process.env.BENCH_CONFIGS.split(",").map((c) => c.trim() as Config)
  : process.argv.includes("--dev") || process.env.BENCH_DEV === "1"
  ? ["production", "dev"]
  : ["production"]
/** The machine's busy share before the run from which the run is labelled as on a loaded machine. */
const LOADED_PERCENT = 15
const CHAINS = (process.env.BENCH_CHAINS ?? "evm").split(",").map((c) => c.trim()) as Array<"evm" | "fabric" | "hybrid">
const TRACE_RATIO = process.env.BENCH_TRACE_RATIO === undefined || process.env.BENCH_TRACE_RATIO === "" ? undefined : Number(process.env.BENCH_TRACE_RATIO)
if (TRACE_RATIO !== undefined && !(TRACE_RATIO >= 0 && TRACE_RATIO <= 1)) throw new Error("BENCH_TRACE_RATIO: a ratio between 0 and 1")
const BATCH = 50
const WINDOW_MS = 1000
const TARGET_P99_MS = 3000
const DRAIN_MS = 60_000
const ANVIL_KEY: Hex = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80" // anvil/hardhat dev account #0
/** Dev accounts #1-#3: each compared build anchors with a key and a contract of its own (nonces are the node's). */
const BUILD_KEYS: ReadonlyArray<Hex> = [
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
  "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
  "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6"
]
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

/** A node's own CPU (its threads, and children already reaped): `anchord dev`'s live children (PostgreSQL, anvil) are counted apart. */
const nodeCpu = (pid: number) => {
  const own = stat(pid)
  return own.self + own.reaped
}

/** The whole machine's CPU (all cores), from /proc/stat: busy and total jiffies. */
const machineCpu = () => {
  const f = Fs.readFileSync("/proc/stat", "utf8").split("\n")[0]!.split(/\s+/).slice(1).map(Number)
  const idle = f[3]! + f[4]!
  const total = f.reduce((a, b) => a + b, 0)
  return { busy: total - idle, total }
}

interface RateResult {
  /** "production", "dev", or a build's label (BENCH_NODE_ROOTS). */
  readonly config: string
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
/** Rows written so far in the node's database, per table (inserted + updated + deleted, HOT updates included). */
const rowWrites = async (sql: <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) => Promise<A>) =>
  new Map((await sql((s) =>
    s<{ relname: string; n: number }>`
    SELECT relname, (n_tup_ins + n_tup_upd + n_tup_del)::float8 AS n FROM pg_stat_user_tables`
  )).map((r) => [r.relname, r.n]))

const walStats = async (sql: <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) => Promise<A>) => {
  const [wal] = await sql((s) =>
    s<{ bytes: number; fpi: number; version: number }>`
    SELECT wal_bytes::float8 AS bytes, wal_fpi::float8 AS fpi, current_setting('server_version_num')::int AS version FROM pg_stat_wal`
  )
  const [cp] = await sql((s) =>
    wal!.version >= 170000
      ? s<{ n: number }>`SELECT (num_timed + num_requested)::float8 AS n FROM pg_stat_checkpointer`
      : s<{ n: number }>`SELECT (checkpoints_timed + checkpoints_req)::float8 AS n FROM pg_stat_bgwriter`
  )
  return { bytes: wal!.bytes, fpiBytes: wal!.fpi * 8192, checkpoints: cp!.n }
}

/** A node under load: where it listens, its key, its process and PostgreSQL's, and how to stop it. */
interface Target {
  readonly config: string
  readonly base: string
  readonly headers: Record<string, string>
  readonly nodePid: number
  /** The PostgreSQL server's postmaster (embedded only: an external server's CPU is not measured). */
  readonly pgPid: number | undefined
  readonly dbUrl: string
  /** pg_stat_statements loaded (the production configuration on the bench's embedded server). */
  readonly statements: boolean
  readonly stop: () => Promise<void>
}

/** An embedded PostgreSQL's postmaster, while it runs (its postmaster.pid); 0 when stopped. */
const embeddedPid = (pgDir: string) => {
  try {
    return Number(Fs.readFileSync(Path.join(pgDir, "postmaster.pid"), "utf8").split("\n")[0])
  } catch {
    return 0
  }
}

/** The dev chain's Anvil, while it runs (its pid file under the data directory, src/dev/evmChain.ts). */
const devChainPid = (dataDir: string) => {
  try {
    return Number(JSON.parse(Fs.readFileSync(Path.join(dataDir, "dev-chain", "anvil.pid"), "utf8")).pid)
  } catch {
    return 0
  }
}

/** A SqlClient on `url` for one call, its pool closed after. */
const sqlAt = (url: string) => <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(Effect.scoped(Effect.flatMap(SqlClient.SqlClient, f).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) })))))

const withDatabase = (url: string, name: string) => {
  const u = new URL(url)
  u.pathname = `/${name}`
  return u.toString()
}

const waitHealthy = async (base: string, node: ChildProcess.ChildProcess, seconds: number) => {
  for (let i = 0;; i++) {
    if (node.exitCode !== null || node.signalCode !== null) throw new Error(`the node exited at start (${node.exitCode ?? node.signalCode})`)
    try {
      if ((await fetch(`${base}/v1/health`)).ok) return
    } catch {}
    if (i > seconds * 10) throw new Error(`the node did not answer ${base}/v1/health within ${seconds} s`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** SIGTERM, then the exit (bounded: SIGKILL after 60 s), so the next node does not compete with a stopping one. */
const stopProcess = async (child: ChildProcess.ChildProcess) => {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((r) => child.once("exit", () => r()))
  child.kill("SIGTERM")
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000)
  await exited
  clearTimeout(timer)
}

const postBatch = (base: string, headers: Record<string, string>, agent: Http.Agent, records: ReadonlyArray<unknown>) =>
  new Promise<{ status: number; ok: Array<string>; refused: number }>((resolve) => {
    const req = Http.request(`${base}/v1/anchor/batch`, { method: "POST", headers, agent }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => {
        const ok: Array<string> = []
        let refused = 0
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
          for (const r of body?.data?.results ?? []) {
            if (r.success) ok.push(r.data.recordId)
            else refused++
          }
          if (res.statusCode !== 202 && res.statusCode !== 207) refused = records.length
        } catch {
          refused = records.length
        }
        resolve({ status: res.statusCode ?? 0, ok, refused })
      })
    })
    req.on("error", () => resolve({ status: 0, ok: [], refused: records.length }))
    req.end(JSON.stringify({ records }))
  })

/**
 * The ingest-alone rate of POST /v1/anchor/batch: the production configuration's node with its pipeline
 * held off, on a database of its own on the same server. The bench takes the networks' leadership (the
 * advisory lock `anchord:<chain>:<network>` a leader holds, src/anchoring/Pipeline.ts) in that database
 * before the node starts, so the node follows: it accepts and commits records but cuts no batch,
 * anchors nothing, announces nothing. Closed loop: INGEST_CONNECTIONS requests of 50 records in flight
 * for INGEST_SECONDS after a 3 s warm-up, then twice as many; every record accepted counts (a 202 is a committed row).
 */
const measureIngestAlone = async (serverUrl: string, env: Record<string, string>, lockKeys: ReadonlyArray<string>, chain: string,
  pgPid: number | undefined) =>
{
  const name = `bench_ingest_alone_${process.pid}`
  await sqlAt(serverUrl)((s) => s.unsafe(`CREATE DATABASE ${name}`))
  const url = withDatabase(serverUrl, name)
  const locks = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(url) }))
  let node: ChildProcess.ChildProcess | undefined
  try {
    let taken!: () => void
    const held = new Promise<void>((r) => {
      taken = r
    })
    locks.runFork(Effect.scoped(Effect.gen(function*() {
      const conn = yield* (yield* SqlClient.SqlClient).reserve
      for (const key of lockKeys) yield* conn.executeValues("SELECT pg_advisory_lock(hashtextextended($1, 0))", [key])
      yield* Effect.sync(taken)
      return yield* Effect.never
    })))
    await held
    const nodeEnv = { ...env, DATABASE_URL: url }
    const account = runCli(["accounts", "create", "bench-ingest", "--plan", "ENTERPRISE", "--rate-per-second", "10000000", "--activate", "--json"], nodeEnv)
    const key = runCli(["keys", "create", account.id, "--json"], nodeEnv).key as string
    const port = await freePort()
    node = ChildProcess.spawn(process.execPath, [Path.join(root, "src/cli/main.ts"), "start"], {
      cwd: root,
      env: { ...process.env, ...nodeEnv, PORT: String(port) },
      stdio: ["ignore", "ignore", "inherit"]
    })
    const base = `http://127.0.0.1:${port}`
    await waitHealthy(base, node, 60)
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" }
    let agent = new Http.Agent({ keepAlive: true, maxSockets: INGEST_CONNECTIONS })
    const loop = async (until: number, stats: { accepted: number; refused: number; latencies: Array<number> }) => {
      for (let i = 0; performance.now() < until; i++) {
        const sent = performance.now()
        const r = await postBatch(base, headers, agent,
          Array.from({ length: BATCH }, (_, j) => ({ data: { run: "ingest-alone", i, j, at: Date.now(), r: Math.random() }, chain })))
        stats.accepted += r.ok.length
        stats.refused += r.refused
        stats.latencies.push(performance.now() - sent)
      }
    }
    const fresh = () => ({ accepted: 0, refused: 0, latencies: [] as Array<number> })
    const agentFor = (connections: number) => new Http.Agent({ keepAlive: true, maxSockets: connections })
    const warm = performance.now() + 3_000
    await Promise.all(Array.from({ length: INGEST_CONNECTIONS }, () => loop(warm, fresh())))
    // At C and at 2C requests in flight: a ceiling is a plateau, so the higher of the two is taken, and a
    // rise of more than 10% from C to 2C is reported (raise BENCH_INGEST_CONNECTIONS).
    const measure = async (connections: number) => {
      const stats = fresh()
      const cpu0 = { node: stat(node!.pid!).self, pg: pgPid === undefined ? NaN : treeCpu(pgPid), bench: process.cpuUsage() }
      const t0 = performance.now()
      await Promise.all(Array.from({ length: connections }, () => loop(t0 + INGEST_SECONDS * 1000, stats)))
      const seconds = (performance.now() - t0) / 1000
      const latencies = stats.latencies.sort((a, b) => a - b)
      return {
        connections,
        rate: stats.accepted / seconds,
        refused: stats.refused,
        p50: pct(latencies, 50),
        p99: pct(latencies, 99),
        nodeCpuUsPerRecord: ((stat(node!.pid!).self - cpu0.node) * 1000) / Math.max(1, stats.accepted),
        pgCpuUsPerRecord: ((pgPid === undefined ? NaN : treeCpu(pgPid) - cpu0.pg) * 1000) / Math.max(1, stats.accepted),
        benchCpuUsPerRecord: cpuMicros(process.cpuUsage(cpu0.bench)) / Math.max(1, stats.accepted)
      }
    }
    const atC = await measure(INGEST_CONNECTIONS)
    agent.destroy()
    agent = agentFor(2 * INGEST_CONNECTIONS)
    const at2C = await measure(2 * INGEST_CONNECTIONS)
    agent.destroy()
    const best = at2C.rate > atC.rate ? at2C : atC
    return { ...best, plateau: at2C.rate <= atC.rate * 1.1, atC: atC.rate, at2C: at2C.rate }
  } finally {
    if (node !== undefined) await stopProcess(node)
    await locks.dispose()
    await sqlAt(serverUrl)((s) => s.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).catch(() => {})
  }
}

const cpuMicros = (u: NodeJS.CpuUsage) => u.user + u.system

/**
 * A bare delivery: a keep-alive `node:http` POST loop in a process of its own (as the node is), WEBHOOK_PER_HOST's
 * default (128) in flight, of an anchor.confirmed-sized body with precomputed headers, to this process's
 * receiver, for BARE_SECONDS: the same HTTP work a delivery is, with nothing of ours in the way. Its CPU per
 * request, sender and receiver, is half of the pipeline's physical ceiling (the other half: ingest alone's).
 */
const BARE_SECONDS = Number(process.env.BENCH_BARE_SECONDS ?? 10)
const bareSenderSource = `
  const http = require("node:http")
  const [url, seconds] = [process.argv[1], Number(process.argv[2])]
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256, scheduling: "lifo" })
  const body = JSON.stringify({ type: "anchor.confirmed", recordId: "bare", data: { hash: "ab".repeat(32),
    merkleProof: Array.from({ length: 14 }, (_, k) => "0x" + String(k).padStart(64, "0")), metadata: { note: "x".repeat(600) } } })
  const headers = { "content-type": "application/json", "content-length": Buffer.byteLength(body), "user-agent": "bare",
    "webhook-id": "evt_bare", "webhook-timestamp": "0", "webhook-signature": "v1," + "A".repeat(44), "x-webhook-signature": "sha256=" + "cd".repeat(32) }
  let n = 0
  const until = performance.now() + seconds * 1000
  const one = () => new Promise((done) => {
    const req = http.request(url, { method: "POST", headers, agent }, (res) => { res.resume(); res.on("end", done) })
    req.on("error", done)
    req.end(body)
  })
  const loop = async () => { while (performance.now() < until) { await one(); n++ } }
  const t0 = performance.now()
  const cpu0 = process.cpuUsage()
  Promise.all(Array.from({ length: 128 }, loop)).then(() => {
    const cpu = process.cpuUsage(cpu0)
    process.stdout.write(JSON.stringify({ requests: n, seconds: (performance.now() - t0) / 1000, cpuMicros: cpu.user + cpu.system }) + "\\n")
    agent.destroy()
  })
`
const measureBareDelivery = async (receiverUrl: string) => {
  const bench0 = process.cpuUsage()
  const out = await new Promise<string>((resolve, reject) => {
    const child = ChildProcess.execFile(process.execPath, ["-e", bareSenderSource, receiverUrl, String(BARE_SECONDS)], { encoding: "utf8" },
      (error, stdout) => error ? reject(error) : resolve(stdout))
    child.stdin?.end()
  })
  const r = JSON.parse(out) as { requests: number; seconds: number; cpuMicros: number }
  return {
    perSecond: r.requests / r.seconds,
    senderCpuUsPerRequest: r.cpuMicros / Math.max(1, r.requests),
    receiverCpuUsPerRequest: cpuMicros(process.cpuUsage(bench0)) / Math.max(1, r.requests)
  }
}

/** The idle share of the machine before the run (other processes' load): the label of a loaded run. */
const busyBefore = async () => {
  const m0 = machineCpu()
  await new Promise((r) => setTimeout(r, 5_000))
  const m1 = machineCpu()
  return (100 * (m1.busy - m0.busy)) / Math.max(1, m1.total - m0.total)
}

const main = async () => {
  const tmp = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-bench-pipeline-"))
  Fs.chmodSync(tmp, 0o755)
  const loadBefore = await busyBefore()
  log(`machine busy before the run (other processes): ${loadBefore.toFixed(0)}%`)
  // pg_stat_statements: where PostgreSQL's time goes, statement by statement, per record.
  const db = await benchDatabase(tmp, log, ["-c", "shared_preload_libraries=pg_stat_statements", "-c", "pg_stat_statements.track=all",
    ...(process.env.BENCH_PG_FLAGS ?? "").split(" ").filter((f) => f !== "")])
  const anvil = await startAnvil()
  const peer = CHAINS.some((c) => c !== "evm") ? await startDevPeer({ dataDir: Path.join(tmp, "fabric-devpeer") }) : undefined
  // Last: the temporary directory (the dev node's data directory is there: PostgreSQL, chain state).
  const cleanups: Array<() => unknown> = [() => anvil.stop(), () => peer?.close(), () => db.stop(), () => Fs.rmSync(tmp, { recursive: true, force: true })]
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
          const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { recordId?: string; events?: Array<{ payload?: { recordId?: string } }> }
          // one event per request, or a batch of them (docs/webhooks.md, "Batched delivery")
          for (const recordId of body.events === undefined ? [body.recordId] : body.events.map((e) => e.payload?.recordId)) {
            if (recordId !== undefined && !deliveredAt.has(recordId)) deliveredAt.set(recordId, at)
          }
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
        req.on("data", (c: Buffer) => {
          traced.bytes += c.length
        })
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

    const evmNetworks = (contractAddress: string) =>
      JSON.stringify([{
        networkId: "bench-anvil",
        rpcUrl: anvil.rpcUrl,
        chainId: d.chainId,
        contractAddress,
        confirmations: 1,
        environment: "test",
        batchMaxSize: 10_000,
        batchWindowMs: WINDOW_MS,
        pollIntervalMs: 200
      }])
    // The production configuration: `anchord start` with everything from the environment.
    const env: Record<string, string> = {
      DATABASE_URL: db.url,
      ANCHORD_DATA_DIR: tmp,
      EVM_NETWORKS: evmNetworks(d.address),
      EVM_PRIVATE_KEY_BENCH_ANVIL: ANVIL_KEY,
      ...(peer === undefined ? {} : {
        FABRIC_NETWORKS: JSON.stringify([{
          networkId: "bench-fabric",
          environment: "test",
          peerEndpoint: peer.address,
          mspId: peer.mspId,
          certPath: peer.clientIdentity.certPath,
          keyPath: peer.clientIdentity.keyPath,
          channel: peer.channel,
          chaincode: peer.chaincode,
          batchMaxSize: 10_000,
          batchWindowMs: WINDOW_MS
        }])
      }),
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "warn",
      // The receiver is on loopback, which the egress policy opens only when told.
      WEBHOOK_ALLOW_PRIVATE: "loopback"
    }
    // BENCH_NODE_ARGS: extra Node flags for the node, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile it
    const nodeArgs = (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter((a) => a !== "")

    // The bench server's processes (embedded: the postmaster and its backends).
    const pgPid = db.embedded ? embeddedPid(Path.join(tmp, "pg")) : undefined
    let ingestAlone: Awaited<ReturnType<typeof measureIngestAlone>> | undefined
    if (INGEST_SECONDS > 0) {
      log(
        `ingest alone: POST /v1/anchor/batch, ${INGEST_CONNECTIONS} then ${
          2 * INGEST_CONNECTIONS
        } requests of ${BATCH} in flight, ${INGEST_SECONDS} s each, the node's pipeline held off (the bench holds its networks' leadership)`
      )
      ingestAlone = await measureIngestAlone(db.url, env, ["anchord:evm:bench-anvil", ...(peer === undefined ? [] : ["anchord:fabric:bench-fabric"])],
        CHAINS[0]!, pgPid)
      log(
        `ingest alone: ${ingestAlone.atC.toFixed(0)} records/s with ${INGEST_CONNECTIONS} requests in flight, ${ingestAlone.at2C.toFixed(0)} with ${
          2 * INGEST_CONNECTIONS
        }` +
          `${ingestAlone.plateau ? "" : " — NOT A PLATEAU: raise BENCH_INGEST_CONNECTIONS"}`
      )
      log(
        `ingest alone: ${ingestAlone.rate.toFixed(0)} records/s (${ingestAlone.refused} refused), request p50/p99 ${ingestAlone.p50.toFixed(0)} / ${
          ingestAlone.p99.toFixed(0)
        } ms, ` +
          `CPU per record node ${ingestAlone.nodeCpuUsPerRecord.toFixed(0)} µs / PostgreSQL ${ingestAlone.pgCpuUsPerRecord.toFixed(0)} µs`
      )
    }
    // The physical ceiling of held ÷ ingest alone: what the machine's cores give if each record costs its
    // ingest (node, PostgreSQL, load generator: ingest alone's CPU per record) plus one bare delivery
    // (sender and receiver) and nothing else, i.e. no cutting, anchoring or delivery bookkeeping.
    let ceiling: { bare: Awaited<ReturnType<typeof measureBareDelivery>>; perRecordUs: number; rate: number; ratio: number } | undefined
    if (ingestAlone !== undefined && BARE_SECONDS > 0) {
      const bare = await measureBareDelivery(receiverUrl)
      const perRecordUs = ingestAlone.nodeCpuUsPerRecord + ingestAlone.pgCpuUsPerRecord + ingestAlone.benchCpuUsPerRecord +
        bare.senderCpuUsPerRequest + bare.receiverCpuUsPerRequest
      const rate = (Os.availableParallelism() * 1e6) / perRecordUs
      ceiling = { bare, perRecordUs, rate, ratio: rate / ingestAlone.rate }
      log(
        `bare delivery: ${bare.perSecond.toFixed(0)} requests/s alone, CPU per request sender ${bare.senderCpuUsPerRequest.toFixed(0)} µs / receiver ${
          bare.receiverCpuUsPerRequest.toFixed(0)
        } µs`
      )
      log(`physical ceiling: ingest ${(perRecordUs - bare.senderCpuUsPerRequest - bare.receiverCpuUsPerRequest).toFixed(0)} µs + bare delivery ` +
        `${(bare.senderCpuUsPerRequest + bare.receiverCpuUsPerRequest).toFixed(0)} µs of CPU per record on ${Os.availableParallelism()} cores: ` +
        `${rate.toFixed(0)} records/s, ${ceiling.ratio.toFixed(2)} × the ingest-alone rate`)
    }
    const rates = ROOTS !== undefined && ingestAlone === undefined
      ? RATES ?? [2000]
      : RATES ?? LADDER.map((f) => Math.max(BATCH, Math.round((f * (ingestAlone?.rate ?? NaN)) / BATCH) * BATCH))
    if (rates.some((r) => !Number.isFinite(r))) throw new Error("BENCH_RATES unset needs the ingest-alone rate (BENCH_INGEST_SECONDS > 0)")
    log(`rates: ${rates.join(", ")} records/s${RATES === undefined ? ` (${LADDER.join(", ")} × the ingest-alone rate)` : ""}`)

    /** `anchord start` of the checkout `nodeRoot` with `nodeEnv`, the account of `apiKey` announcing anchor.confirmed to the receiver. */
    const startNode = async (config: string, nodeRoot: string, nodeEnv: Record<string, string>, apiKey: string): Promise<Target> => {
      const port = await freePort()
      const node = ChildProcess.spawn(process.execPath, [...nodeArgs, Path.join(nodeRoot, "src/cli/main.ts"), "start"], {
        cwd: nodeRoot,
        env: { ...process.env, ...nodeEnv, ...tracing, PORT: String(port) },
        // BENCH_LOG_LEVEL: the node's log lines (stdout) to this process's output
        stdio: ["ignore", process.env.BENCH_LOG_LEVEL === undefined ? "ignore" : "inherit", "inherit"]
      })
      const base = `http://127.0.0.1:${port}`
      try {
        await waitHealthy(base, node, 60)
        const headers = { authorization: `Bearer ${apiKey}`, "content-type": "application/json" }
        const put = await fetch(`${base}/v1/webhooks`, { method: "PUT", headers,
          body: JSON.stringify({ url: receiverUrl, enabled: true, events: ["anchor.confirmed"] }) })
        if (put.status !== 200) throw new Error(`PUT /v1/webhooks ${put.status}`)
        if (db.embedded) await sqlAt(nodeEnv.DATABASE_URL!)((s) => s`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`)
        return { config, base, headers, nodePid: node.pid!, dbUrl: nodeEnv.DATABASE_URL!, statements: db.embedded, pgPid, stop: () => stopProcess(node) }
      } catch (e) {
        await stopProcess(node)
        throw e
      }
    }
    const accountKey = (nodeRoot: string, nodeEnv: Record<string, string>) => {
      const account = runCliAt(nodeRoot, ["accounts", "create", "bench", "--plan", "ENTERPRISE", "--rate-per-second", "10000000", "--activate", "--json"],
        nodeEnv)
      return runCliAt(nodeRoot, ["keys", "create", account.id, "--json"], nodeEnv).key as string
    }
    const startProduction = () => startNode("production", root, env, accountKey(root, env))

    // npm start's configuration: `anchord dev` as `npm start` runs it — its own embedded PostgreSQL, dev
    // chain (anvil, state dumped every second) and dev peer under its data directory, default log level,
    // metrics on, the dev account and key it creates; the account's global webhook for every kind (no
    // `events`), loopback allowed by dev's default. Only the ports differ (any free one: the machine is
    // shared), and the environment of this process does not reach it (no DATABASE_URL, networks, LOG_LEVEL).
    const startDev = async (name: string): Promise<Target> => {
      const dataDir = Path.join(tmp, name)
      Fs.mkdirSync(dataDir, { recursive: true, mode: 0o755 })
      const clean = Object.fromEntries(
        Object.entries(process.env).filter(([k]) => !/^(DATABASE_URL|EVM_|FABRIC_|LOG_LEVEL|METRICS_|WEBHOOK_|OTEL_|PORT$|HOST$|DEV_|ANCHORD_)/.test(k))
      )
      const port = await freePort()
      const node = ChildProcess.spawn(process.execPath, [...nodeArgs, Path.join(root, "src/cli/main.ts"), "dev"], {
        cwd: root,
        stdio: ["ignore", "ignore", "inherit"],
        env: { ...clean, ...tracing, ANCHORD_DATA_DIR: dataDir, PORT: String(port), DEV_CHAIN_PORT: "0", DEV_FABRIC_PORT: "0", METRICS_PORT: "0" }
      })
      const base = `http://127.0.0.1:${port}`
      try {
        await waitHealthy(base, node, 180)
        // The banner's key is written before the banner is printed; the health answer can come first.
        let saved: { apiKey: string } | undefined
        for (let i = 0; saved === undefined; i++) {
          try {
            saved = JSON.parse(Fs.readFileSync(Path.join(dataDir, "dev-account.json"), "utf8"))
          } catch {
            if (i > 300) throw new Error("anchord dev wrote no dev-account.json")
            await new Promise((r) => setTimeout(r, 100))
          }
        }
        const headers = { authorization: `Bearer ${saved!.apiKey}`, "content-type": "application/json" }
        const put = await fetch(`${base}/v1/webhooks`, { method: "PUT", headers, body: JSON.stringify({ url: receiverUrl, enabled: true }) })
        if (put.status !== 200) throw new Error(`PUT /v1/webhooks (dev) ${put.status}: ${await put.text()}`)
        const dbUrl = embeddedDatabaseUrl(dataDir)
        if (dbUrl === undefined) throw new Error("anchord dev: no pg.port in its data directory")
        return {
          config: "dev",
          base,
          headers,
          nodePid: node.pid!,
          dbUrl,
          statements: false,
          pgPid: embeddedPid(Path.join(dataDir, "pg")),
          stop: async () => {
            await stopProcess(node)
            // A node killed after 60 s leaves its PostgreSQL and Anvil running: they are this run's, stop them.
            // Only while their pid files are there (a clean stop removes them), so no other process is signalled.
            const pids = [embeddedPid(Path.join(dataDir, "pg")), devChainPid(dataDir)]
            for (const pid of pids) {
              try {
                if (pid > 0) process.kill(pid, "SIGINT")
              } catch {} // gone already: the clean stop
            }
          }
        }
      } catch (e) {
        await stopProcess(node)
        throw e
      }
    }

    const results: Array<RateResult> = []
    const profiles: Array<string> = []
    const agent = new Http.Agent({ keepAlive: true, maxSockets: 64 })

    const runRate = async (target: Target, chain: string, rate: number) => {
      const { config } = target
      const sql = sqlAt(target.dbUrl)
      const label = `${config} ${chain} ${rate}/s`
      log(`${config}: ${chain} at ${rate} records/s for ${SECONDS} s (batches of ${BATCH})`)
      const postedAt = new Map<string, number>()
      let refused = 0
      /** Refused records by the status of their request (0: no answer), and the first refusal's body: why. */
      const refusedBy = new Map<number, number>()
      const interval = (BATCH / rate) * 1000
      if (target.statements) await sql((s) => s`SELECT pg_stat_statements_reset()`)
      const wal0 = await walStats(sql)
      const rows0 = await rowWrites(sql)
      const cpu0 = { node: nodeCpu(target.nodePid), pg: target.pgPid === undefined ? NaN : treeCpu(target.pgPid) }
      const machine0 = machineCpu()
      const self0 = process.cpuUsage()
      const t0 = performance.now()
      const backlog: Array<number> = []
      const sampler = setInterval(() => {
        backlog.push(postedAt.size - [...postedAt.keys()].filter((id) => deliveredAt.has(id)).length)
        // progress every 30 s: a 5-minute run is otherwise silent
        if (backlog.length % 3 === 0) {
          log(`${label}: ${Math.round((performance.now() - t0) / 1000)} of ${SECONDS} s, ${postedAt.size} accepted, backlog ${backlog.at(-1)}`)
        }
      }, 10_000)
      const inFlight = new Set<Promise<void>>()
      // Open loop: request i goes at t0 + i × interval, whether or not earlier ones were answered.
      for (let i = 0; performance.now() - t0 < SECONDS * 1000; i++) {
        const due = t0 + i * interval
        const wait = due - performance.now()
        if (wait > 1) await new Promise((r) => setTimeout(r, wait))
        const sent = performance.now()
        const records = Array.from({ length: BATCH }, (_, j) => ({ data: { run: `${config}-${chain}-${rate}`, i, j, at: Date.now() }, chain }))
        const p = postBatch(target.base, target.headers, agent, records).then((r) => {
          for (const id of r.ok) postedAt.set(id, sent)
          refused += r.refused
          if (r.refused > 0) refusedBy.set(r.status, (refusedBy.get(r.status) ?? 0) + r.refused)
        }).finally(() => inFlight.delete(p))
        inFlight.add(p)
      }
      await Promise.all([...inFlight])
      clearInterval(sampler)
      // The backlog at the end of the load is the last sample: a short run's second half is never empty.
      backlog.push(postedAt.size - [...postedAt.keys()].filter((id) => deliveredAt.has(id)).length)
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
      const cpu1 = { node: nodeCpu(target.nodePid), pg: target.pgPid === undefined ? NaN : treeCpu(target.pgPid) }
      const wal1 = await walStats(sql)
      // Row writes per record by table (pg_stat_user_tables: what one PostgreSQL primary must absorb per
      // record, docs/scaling.md). The counters reach the view when a backend goes idle, within ~1 s.
      const rows1 = await rowWrites(sql)
      const perTable = [...rows1].map(([t, n]) => [t, (n - (rows0.get(t) ?? 0)) / Math.max(1, ids.length)] as const)
        .filter(([, n]) => n >= 0.001).sort((a, b) => b[1] - a[1])
      log(`${label}: rows written per record ${perTable.reduce((a, [, n]) => a + n, 0).toFixed(2)} (` +
        `${perTable.map(([t, n]) => `${t} ${n.toFixed(3)}`).join(", ")})`)
      if (target.statements) {
        const top = await sql((s) =>
          s<{ query: string; calls: number; total: number }>`
          SELECT regexp_replace(query, '\\s+', ' ', 'g') AS query, calls::float8 AS calls, total_exec_time::float8 AS total
          FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC LIMIT 12`
        )
        const n = Math.max(1, ids.length)
        const rows = top.map((t) =>
          `| ${(t.total * 1000 / n).toFixed(0)} | ${(t.calls / n).toFixed(3)} | \`${t.query.slice(0, 110).replaceAll("|", "\\|")}${
            t.query.length > 110 ? "…" : ""
          }\` |`
        )
        profiles.push(
          [`PostgreSQL time per record by statement (${label}; pg_stat_statements, execution time):`, "", "| µs/record | calls/record | statement |",
            "|---:|---:|---|", ...rows, ""].join("\n")
        )
        log(profiles.at(-1)!)
      }
      // POST → ANCHORED: when the batch that completed the record was confirmed (its state is read from its
      // batches, migration 0016: the record row is not updated), against the POST.
      const wallOffset = Date.now() - performance.now()
      // A build from before 0016 (side by side with an older commit) still stamps its records' rows.
      const statesView = (await sql((s) => s<{ v: string | null }>`SELECT to_regclass('record_states')::text AS v`))[0]?.v != null
      const anchored = await sql((s) =>
        statesView
          ? s<{ id: string; t: number }>`
        SELECT st.id, (extract(epoch from (SELECT max(b.confirmed_at) FROM anchors a JOIN anchor_batches b ON b.id = a.batch_id
          WHERE a.record_id = st.id)) * 1000)::float8 AS t FROM record_states st
        WHERE st.status = 'ANCHORED' AND st.id = ANY(${`{${ids.join(",")}}`}::text[])`
          : s<{ id: string; t: number }>`
        SELECT r.id, (extract(epoch from r.anchored_at) * 1000)::float8 AS t FROM records r
        WHERE r.status = 'ANCHORED' AND r.id = ANY(${`{${ids.join(",")}}`}::text[])`
      )
      const anchoredMs = anchored.map((r) => r.t - wallOffset - postedAt.get(r.id)!).sort((a, b) => a - b)
      const webhookMs = ids.filter((id) => deliveredAt.has(id)).map((id) => deliveredAt.get(id)! - postedAt.get(id)!).sort((a, b) => a - b)
      // Undelivered records count as slower than anything delivered (they are in the tail).
      const tail = [...webhookMs, ...Array.from({ length: undelivered }, () => Number.POSITIVE_INFINITY)]
      const half = Math.ceil(backlog.length / 2)
      const halves = [Math.max(0, ...backlog.slice(0, half)), Math.max(0, ...backlog.slice(half))] as const
      const result: RateResult = {
        config,
        chain,
        rate,
        accepted: ids.length,
        acceptedPerSecond: ids.length / (loadMs / 1000),
        refused,
        anchoredP50: pct(anchoredMs, 50),
        anchoredP99: pct(anchoredMs, 99),
        webhookP50: pct(tail, 50),
        webhookP99: pct(tail, 99),
        backlogHalves: halves,
        backlogAtEnd,
        undeliveredAfterDrain: undelivered,
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
      const why = refused === 0 ? "" : `: ${[...refusedBy].map(([status, n]) => `${n} by ${status === 0 ? "no answer" : `HTTP ${status}`}`).join(", ")}`
      log(
        `${label}: accepted ${result.acceptedPerSecond.toFixed(0)}/s (${refused} refused${why}), ANCHORED p50/p99 ${secs(result.anchoredP50)} / ${
          secs(result.anchoredP99)
        }, ` +
          `webhook p50/p99 ${secs(result.webhookP50)} / ${secs(result.webhookP99)}, backlog ${halves[0]} → ${
            halves[1]
          } (end ${backlogAtEnd}, undelivered after 60 s ${undelivered}), ` +
          `CPU per record node ${result.nodeCpuUsPerRecord.toFixed(0)} µs / PostgreSQL ${result.pgCpuUsPerRecord.toFixed(0)} µs, load generator ${
            result.benchCpuUsPerRecord.toFixed(0)
          } µs, machine ${result.machineBusyPercent.toFixed(0)}% busy, ` +
          `WAL ${(result.walBytesPerRecord / 1024).toFixed(1)} KiB per record (${
            (100 * result.walFpiShare).toFixed(0)
          }% full-page images), ${result.checkpoints} checkpoints — ${result.held ? "held" : "not held"}`
      )
      return result
    }

    const machine = `${Os.cpus()[0]?.model ?? "cpu"} × ${Os.cpus().length}, ${(Os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`
    if (ROOTS !== undefined) {
      // Builds side by side: each checkout's `anchord start` with a database of its own (its own
      // migrations) on the same server and a contract and key of its own on the same anvil, run one at a
      // time in alternating rounds (A B, B A, ...) so a drift of the machine's speed weighs on both alike.
      if (ROOTS.length > BUILD_KEYS.length) throw new Error(`BENCH_NODE_ROOTS: at most ${BUILD_KEYS.length} checkouts`)
      const builds: Array<{ label: string; nodeRoot: string; nodeEnv: Record<string, string>; apiKey: string }> = []
      for (const [i, nodeRoot] of ROOTS.entries()) {
        let commit: string | undefined
        try {
          commit = ChildProcess.execFileSync("git", ["-C", nodeRoot, "rev-parse", "--short", "HEAD"], { stdio: ["ignore", "pipe", "ignore"] }).toString().trim()
        } catch {} // not a git checkout (e.g. a `git archive` of a commit): its folder's name says which
        const name = `bench_build_${i}`
        await sqlAt(db.url)((s) => s.unsafe(`CREATE DATABASE ${name}`))
        // Each build's own contract (its artifact): a node refuses a contract of another version (doctor).
        const deployOf = (await import(Path.join(nodeRoot, "src/evm/deploy.ts"))).deployAnchorRegistry as typeof deployAnchorRegistry
        const contract = await deployOf({ rpcUrl: anvil.rpcUrl, privateKey: BUILD_KEYS[i]! })
        const nodeEnv = { ...env, DATABASE_URL: withDatabase(db.url, name), EVM_NETWORKS: evmNetworks(contract.address),
          EVM_PRIVATE_KEY_BENCH_ANVIL: BUILD_KEYS[i]! }
        builds.push({ label: commit === undefined ? Path.basename(nodeRoot) : `${commit} (${Path.basename(nodeRoot)})`, nodeRoot, nodeEnv,
          apiKey: accountKey(nodeRoot, nodeEnv) })
        log(`build ${i + 1}: ${builds.at(-1)!.label}`)
      }
      for (let round = 1; round <= ROUNDS; round++) {
        for (const build of round % 2 === 1 ? builds : [...builds].reverse()) {
          log(`round ${round} of ${ROUNDS}: ${build.label}`)
          const target = await startNode(build.label, build.nodeRoot, build.nodeEnv, build.apiKey)
          try {
            for (const chain of CHAINS) for (const rate of rates) await runRate(target, chain, rate)
          } finally {
            await target.stop()
          }
        }
      }
      agent.destroy()
      const median = (xs: Array<number>) => {
        const v = [...xs].sort((a, b) => a - b)
        const m = Math.floor(v.length / 2)
        return v.length === 0 ? NaN : v.length % 2 === 1 ? v[m]! : (v[m - 1]! + v[m]!) / 2
      }
      const summary = CHAINS.flatMap((chain) =>
        rates.flatMap((rate) => {
          const per = builds.map((b) => {
            const rs = results.filter((r) => r.config === b.label && r.chain === chain && r.rate === rate)
            return { label: b.label, node: median(rs.map((r) => r.nodeCpuUsPerRecord)), pg: median(rs.map((r) => r.pgCpuUsPerRecord)), p99: median(rs.map((r) =>
              r.webhookP99
            )), anchoredP99: median(rs.map((r) => r.anchoredP99)), held: rs.filter((r) => r.held).length, n: rs.length }
          })
          return per.map((p) =>
            `| ${p.label} | ${chain} | ${rate} | ${p.node.toFixed(0)} / ${p.pg.toFixed(0)} µs | **${(p.node + p.pg).toFixed(0)} µs** | ${
              ((p.node + p.pg) / (per[0]!.node + per[0]!.pg)).toFixed(2)
            } | ${secs(p.anchoredP99)} | ${secs(p.p99)} | ${p.held} of ${p.n} |`
          )
        })
      )
      const lines = [
        "",
        `## bench:pipeline, builds side by side — ${new Date().toISOString()}${
          loadBefore >= LOADED_PERCENT ? " (LOADED machine: figures not comparable)" : ""
        }`,
        "",
        `Machine: ${machine}; ${
          loadBefore.toFixed(0)
        }% busy in the 5 s before the run. Production configuration (\`anchord start\`, LOG_LEVEL=warn, EVM on anvil, window ${WINDOW_MS} ms, ` +
        `the account's global webhook for anchor.confirmed), each build on a database of its own on one ${
          db.embedded ? "embedded" : "external"
        } PostgreSQL, ${ROUNDS} alternating rounds of ${SECONDS} s per rate.`,
        "",
        "| build | chain | rate | CPU/record node / PostgreSQL (median of rounds) | node + PostgreSQL | ÷ first build | ANCHORED p99 (median) | webhook p99 (median) | held |",
        "|---|---|---:|---|---:|---:|---|---|---|",
        ...summary,
        "",
        "Every round:",
        "",
        "| build | rate | POST → ANCHORED p99 | POST → webhook p50 / p99 | CPU/record node / PostgreSQL | machine busy | held |",
        "|---|---:|---|---|---|---:|---|",
        ...results.map((r) =>
          `| ${r.config} | ${r.rate} | ${secs(r.anchoredP99)} | ${secs(r.webhookP50)} / ${secs(r.webhookP99)} | ${r.nodeCpuUsPerRecord.toFixed(0)} / ${
            r.pgCpuUsPerRecord.toFixed(0)
          } µs | ${r.machineBusyPercent.toFixed(0)}% | ${r.held ? "yes" : "no"} |`
        ),
        ""
      ]
      console.log(lines.join("\n"))
      if (process.env.BENCH_NO_APPEND !== "1") {
        Fs.appendFileSync(Path.join(root, "docs/benchmarks/runs.md"), lines.join("\n"))
        log("appended to docs/benchmarks/runs.md")
      }
      return
    }

    for (const config of CONFIGS) {
      for (const mode of MODES) {
        // A node of its own per mode: the previous mode's backlog weighs on nothing.
        const started = config === "production" ? await startProduction() : await startDev(`dev-${mode}`)
        const target = { ...started, config: labelOf(config, mode) }
        try {
          const put = await fetch(`${target.base}/v1/webhooks`, { method: "PUT", headers: target.headers,
            body: JSON.stringify({ delivery: { mode, maxEvents: BATCH_MAX_EVENTS, maxWaitMs: 0 } }) })
          if (put.status !== 200) throw new Error(`PUT /v1/webhooks delivery ${mode}: ${put.status} ${await put.text()}`)
          for (const chain of CHAINS) {
            for (const rate of rates) {
              const r = await runRate(target, chain, rate)
              // Past a rate not held, a higher one is not held either, and its backlog would weigh on the next.
              if (!r.held && !LADDER_ALL) {
                log(`${target.config} ${chain}: ${rate}/s not held; the higher rates are skipped (BENCH_LADDER_ALL=1 runs them)`)
                break
              }
              // Let the node settle before the next rate.
              await new Promise((r) => setTimeout(r, 3_000))
            }
          }
        } finally {
          await target.stop()
        }
      }
    }
    agent.destroy()

    // Report
    const heldBy = (config: string, chain: string) =>
      Math.max(0, ...results.filter((r) => r.config === config && r.chain === chain && r.held).map((r) => r.rate))
    const configLabel = (c: string) =>
      `${c.startsWith("production") ? "production (`anchord start`)" : "npm start (`anchord dev`)"}${
        c.endsWith("+batch") ? `, batched webhooks (≤ ${BATCH_MAX_EVENTS} events per request)` : ", one webhook request per record"
      }`
    const labels = CONFIGS.flatMap((c) => MODES.map((m) => labelOf(c, m)))
    const headline = (c: string, chain: string) => {
      const held = heldBy(c, chain)
      const ratio = ingestAlone === undefined ? "" : held > 0
        ? ` — **${(held / ingestAlone.rate).toFixed(2)} × the ingest-alone rate**`
        : ` — below ${(Math.min(...rates) / ingestAlone.rate).toFixed(2)} × the ingest-alone rate`
      const ofCeiling = ceiling === undefined || held === 0 ? "" : `, ${(held / ceiling.rate).toFixed(2)} of the physical ceiling`
      return `Highest rate held, ${configLabel(c)}, ${chain}: **${held || "none of those tried"}**${
        held ? " records/s" : ""
      }${ratio}${ofCeiling} (p99 POST → webhook ≤ 3 s, backlog flat, all delivered).`
    }
    const loaded = loadBefore >= LOADED_PERCENT
    const lines = [
      "",
      `## bench:pipeline — ${new Date().toISOString()}${loaded ? " (LOADED machine: figures not comparable)" : ""}`,
      "",
      `Machine: ${machine}; ${loadBefore.toFixed(0)}% busy in the 5 s before the run${loaded ? " (other processes: a loaded machine)" : ""}. ` +
      `Configurations: ${labels.map(configLabel).join("; ")}. Production: \`anchord start\` (own process), PostgreSQL ${
        db.embedded ? "embedded" : "external"
      }, anvil (automine, confirmations 1), window ${WINDOW_MS} ms, LOG_LEVEL=warn, ` +
      `the account's global webhook (anchor.confirmed). ` +
      (CONFIGS.includes("dev")
        ? "npm start: `anchord dev` with its own embedded PostgreSQL, dev chain and dev peer, default log level and metrics, the dev account's global webhook for every kind. "
        : "") +
      `Open-loop client in the bench process: batches of ${BATCH} unique records to POST /v1/anchor/batch at a steady rate for ${SECONDS} s per rate; receiver in the bench process. Backlog: accepted and not yet delivered (max over each half of the run). ` +
      (TRACE_RATIO === undefined
        ? "Tracing: off (BENCH_TRACE_RATIO unset)."
        : `Tracing: OTLP/HTTP, parentbased_traceidratio ${TRACE_RATIO}, to a discarding sink (${traced.requests} export requests, ${
          (traced.bytes / 1024).toFixed(0)
        } KiB).`),
      "",
      ...(ingestAlone === undefined ? [] : [
        `Ingest alone (the ceiling): **${ingestAlone.rate.toFixed(0)} records/s** on POST /v1/anchor/batch (the higher of ${INGEST_CONNECTIONS} and ${
          2 * INGEST_CONNECTIONS
        } requests of ${BATCH} in flight, ${INGEST_SECONDS} s each: ${ingestAlone.atC.toFixed(0)} and ${ingestAlone.at2C.toFixed(0)}/s${
          ingestAlone.plateau ? "" : ", NOT A PLATEAU"
        }; ` +
        `request p50 / p99 ${ingestAlone.p50.toFixed(0)} / ${ingestAlone.p99.toFixed(0)} ms; CPU per record node ${
          ingestAlone.nodeCpuUsPerRecord.toFixed(0)
        } / PostgreSQL ${ingestAlone.pgCpuUsPerRecord.toFixed(0)} µs), the production node with its pipeline held off ` +
        `(the bench holds its networks' leadership in a database of its own on the same server). Rates tried: ${
          RATES === undefined ? `${LADDER.join(", ")} × that` : "BENCH_RATES"
        }.`,
        ""
      ]),
      ...(ceiling === undefined ? [] : [
        `Physical ceiling: **${ceiling.ratio.toFixed(2)} × the ingest-alone rate** (${
          ceiling.rate.toFixed(0)
        } records/s): ${Os.availableParallelism()} cores ÷ ${ceiling.perRecordUs.toFixed(0)} µs of CPU per record, ` +
        `ingest alone's (node, PostgreSQL, load generator ${
          ingestAlone!.benchCpuUsPerRecord.toFixed(0)
        } µs) plus one bare delivery (a keep-alive POST loop in a process of its own, 128 in flight, ` +
        `to the same receiver: ${ceiling.bare.perSecond.toFixed(0)} requests/s alone, sender ${ceiling.bare.senderCpuUsPerRequest.toFixed(0)} / receiver ${
          ceiling.bare.receiverCpuUsPerRequest.toFixed(0)
        } µs per request), ` +
        "with nothing for cutting, anchoring or delivery bookkeeping: no pipeline can hold more on this machine.",
        ""
      ]),
      "| config | chain | rate | × ingest alone | accepted/s | POST → ANCHORED p50 / p99 | POST → webhook p50 / p99 | backlog (1st half → 2nd) | at end | undelivered 60 s later | CPU/record node / PostgreSQL | machine busy | WAL/record (full pages) | checkpoints | held |",
      "|---|---|---:|---:|---:|---|---|---|---:|---:|---|---:|---|---:|---|",
      ...results.map((r) =>
        `| ${r.config} | ${r.chain} | ${r.rate} | ${ingestAlone === undefined ? "—" : (r.rate / ingestAlone.rate).toFixed(2)} | ${
          r.acceptedPerSecond.toFixed(0)
        } | ${secs(r.anchoredP50)} / ${secs(r.anchoredP99)} | ${secs(r.webhookP50)} / ${secs(r.webhookP99)} | ` +
        `${r.backlogHalves[0]} → ${r.backlogHalves[1]} | ${r.backlogAtEnd} | ${r.undeliveredAfterDrain} | ${r.nodeCpuUsPerRecord.toFixed(0)} / ${
          r.pgCpuUsPerRecord.toFixed(0)
        } µs | ${r.machineBusyPercent.toFixed(0)}% | ` +
        `${(r.walBytesPerRecord / 1024).toFixed(1)} KiB (${(100 * r.walFpiShare).toFixed(0)}%) | ${r.checkpoints} | ${r.held ? "yes" : "no"} |`
      ),
      "",
      ...(process.env.BENCH_PROFILE === "1" ? profiles : []),
      ...labels.flatMap((c) => CHAINS.map((chain) => headline(c, chain))),
      ""
    ]
    console.log(lines.join("\n"))
    if (process.env.BENCH_NO_APPEND !== "1") {
      Fs.appendFileSync(Path.join(root, "docs/benchmarks/runs.md"), lines.join("\n"))
      log("appended to docs/benchmarks/runs.md")
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
