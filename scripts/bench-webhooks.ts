/**
 * npm run bench:webhooks — the webhook dispatcher of a real `anchord start` process against real
 * PostgreSQL, delivering to a node:http receiver in this process (answers 200 at once).
 *
 *  (a) throughput: 10,000 events committed in one transaction (a backlog), time from COMMIT until the
 *      receiver has seen every event id; baseline in the same run: a bare loop of node:http POSTs of the
 *      same bodies and headers to the same receiver, same concurrency, keep-alive;
 *  (b) latency from a state change's COMMIT to the first delivery attempt reaching the receiver:
 *      events committed one per transaction at a steady rate; baseline: one bare POST's latency.
 *
 * Targets: ≥ 1,000 deliveries/s and p99 ≤ 250 ms. Prints and appends to docs/benchmarks/runs.md.
 * DATABASE_URL selects an external PostgreSQL; otherwise an embedded one in a temporary directory.
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { benchDatabase } from "./bench/database.ts"
import { Effect, ManagedRuntime, Redacted } from "effect"
import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "effect/sql"
import { freePort } from "../src/dev/EmbeddedPostgres.ts"

const BACKLOG = Number(process.env.BENCH_EVENTS ?? 10_000)
const LATENCY_EVENTS = Number(process.env.BENCH_LATENCY_EVENTS ?? 1_000)
const LATENCY_RATE = Number(process.env.BENCH_LATENCY_RATE ?? 200) // events per second
const CONCURRENCY = 256
const root = Path.resolve(import.meta.dirname, "..")
const log = (line: string) => console.log(`[bench:webhooks] ${line}`)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const runCli = (args: Array<string>, env: Record<string, string>) =>
  JSON.parse(ChildProcess.execFileSync(process.execPath, [Path.join(root, "src/cli/main.ts"), ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    encoding: "utf8"
  }))

const waitFor = async (url: string, ms = 30_000) => {
  const until = Date.now() + ms
  while (Date.now() < until) {
    try {
      if ((await fetch(url)).status < 500) return
    } catch {}
    await sleep(200)
  }
  throw new Error(`timed out waiting for ${url}`)
}

const percentile = (values: Array<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]
}

/** CPU time (user + system, ms) of one process, from /proc (Linux); NaN elsewhere. */
const cpuMs = (pid: number | undefined): number => {
  try {
    const fields = Fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return NaN
  }
}

/** CPU time of every PostgreSQL server process (embedded or local). */
const postgresCpuMs = (): number => {
  let total = 0
  try {
    for (const pid of Fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
      try {
        if (Fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "postgres") total += cpuMs(Number(pid))
      } catch {}
    }
  } catch {
    return NaN
  }
  return total
}

interface Seen {
  readonly at: number
  readonly body: string
  readonly headers: Http.IncomingHttpHeaders
}

const main = async () => {
  const tmp = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-bench-webhooks-"))
  const database = await benchDatabase(tmp, log)
  const databaseUrl = database.url

  // The receiver: first arrival of each event id, with its body and headers (for the baseline).
  const firstSeen = new Map<string, Seen>()
  let requests = 0
  const receiver = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      requests++
      const at = performance.now()
      const id = String(req.headers["x-service-event-id"] ?? `baseline-${requests}`)
      if (!firstSeen.has(id)) firstSeen.set(id, { at, body: Buffer.concat(chunks).toString("utf8"), headers: req.headers })
      res.writeHead(200, { "content-type": "text/plain" })
      res.end("ok")
    })
  })
  receiver.keepAliveTimeout = 65_000
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r))
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`

  const env = { DATABASE_URL: databaseUrl, ANCHORD_DATA_DIR: tmp }
  const account = runCli(["accounts", "create", "bench", "--plan", "ENTERPRISE", "--rate-per-second", "10000000", "--activate", "--json"], env)
  const nodePort = await freePort()
  // BENCH_NODE_ARGS: extra Node flags for the node under test (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter((a) => a !== "")
  const node = ChildProcess.spawn(process.execPath, [...nodeArgs, Path.join(root, "src/cli/main.ts"), "start"], {
    // The receiver is on loopback, which the egress policy opens only when told.
    cwd: root,
    env: { ...process.env, ...env, PORT: String(nodePort), WEBHOOK_CONCURRENCY: String(CONCURRENCY), WEBHOOK_ALLOW_PRIVATE: "loopback" },
    stdio: ["ignore", "ignore", "inherit"]
  })
  await waitFor(`http://127.0.0.1:${nodePort}/v1/health`)

  const db = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(databaseUrl) }))
  const sql = <A extends object>(text: string, params: Array<unknown> = []) =>
    db.runPromise(Effect.flatMap(SqlClient.SqlClient, (s) => s.unsafe<A>(text, params)))

  log(`creating ${BACKLOG + LATENCY_EVENTS} records with webhookUrl = the receiver`)
  await sql(`
    INSERT INTO records (id, account_id, environment, hash, chain_type, network_id, package_mode, source, metadata, webhook_url)
    SELECT lpad(to_hex(g), 24, '0'), $1, 'test', encode(sha256(g::text::bytea), 'hex'), 'evm', 'hardhat-local', 'MANAGED', 'hash',
      jsonb_build_object('ref', 'bench-' || g), $2
    FROM generate_series(1, $3::int) g`, [account.id, receiverUrl, BACKLOG + LATENCY_EVENTS])

  const eventsSql = (from: number, to: number) => `
    INSERT INTO events (event_id, account_id, record_id, kind, payload)
    SELECT 'evt_' || lpad(to_hex(g), 24, '0'), account_id, id, 'record.updated',
      jsonb_build_object('recordId', id, 'hash', hash, 'status', status, 'changes', jsonb_build_object('metadata', metadata))
    FROM records, generate_series(${from}, ${to}) g WHERE id = lpad(to_hex(g), 24, '0')`

  // warm-up: a few deliveries so connections exist on both sides
  // (a) backlog
  log(`(a) committing ${BACKLOG} events in one transaction`)
  const cpu0 = { node: cpuMs(node.pid), pg: postgresCpuMs(), self: process.cpuUsage() }
  await sql(eventsSql(1, BACKLOG))
  const committedAt = performance.now()
  const deadline = Date.now() + 120_000
  while (firstSeen.size < BACKLOG && Date.now() < deadline) await sleep(5)
  const cpuNode = cpuMs(node.pid) - cpu0.node
  const cpuPg = postgresCpuMs() - cpu0.pg
  const self = process.cpuUsage(cpu0.self)
  const cpuReceiver = (self.user + self.system) / 1000
  const lastAt = Math.max(...[...firstSeen.values()].map((s) => s.at))
  const drainMs = lastAt - committedAt
  const delivered = firstSeen.size
  const perSecond = delivered / (drainMs / 1000)
  log(`(a) ${delivered} delivered in ${drainMs.toFixed(0)} ms → ${perSecond.toFixed(0)} deliveries/s (requests seen: ${requests})`)
  const perDelivery = (ms: number) => `${((ms * 1000) / BACKLOG).toFixed(0)} µs`
  log(`(a) CPU per delivery: node ${perDelivery(cpuNode)}, PostgreSQL ${perDelivery(cpuPg)}, receiver + bench ${perDelivery(cpuReceiver)}`)

  // baseline (a): the same bodies and headers, a bare node:http loop with the same concurrency
  const samples = [...firstSeen.values()]
  const agent = new Http.Agent({ keepAlive: true, maxSockets: CONCURRENCY })
  const post = (s: Seen) =>
    new Promise<void>((resolve, reject) => {
      const headers: Record<string, string> = {}
      for (const [k, v] of Object.entries(s.headers)) if (k.startsWith("x-") || k === "content-type" || k === "user-agent") headers[k] = String(v)
      headers["x-service-event-id"] = `baseline-${Math.random()}`
      const req = Http.request(receiverUrl, { method: "POST", agent, headers: { ...headers, "content-length": String(Buffer.byteLength(s.body)) } }, (res) => {
        res.resume()
        res.on("end", () => resolve())
      })
      req.on("error", reject)
      req.end(s.body)
    })
  let next = 0
  const baseStart = performance.now()
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < samples.length) await post(samples[next++])
  }))
  const baseMs = performance.now() - baseStart
  const basePerSecond = samples.length / (baseMs / 1000)
  log(`(a) baseline: ${samples.length} bare POSTs in ${baseMs.toFixed(0)} ms → ${basePerSecond.toFixed(0)}/s`)

  // (b) latency, one event per transaction at a steady rate
  log(`(b) ${LATENCY_EVENTS} events, one per transaction, ${LATENCY_RATE}/s`)
  const commits = new Map<string, number>()
  const interval = 1000 / LATENCY_RATE
  const startB = performance.now()
  const inserts: Array<Promise<void>> = []
  for (let i = 0; i < LATENCY_EVENTS; i++) {
    const g = BACKLOG + 1 + i
    const wait = startB + i * interval - performance.now()
    if (wait > 0) await sleep(wait)
    inserts.push(sql(eventsSql(g, g)).then(() => {
      commits.set(`evt_${g.toString(16).padStart(24, "0")}`, performance.now())
    }))
  }
  await Promise.all(inserts)
  const deadlineB = Date.now() + 30_000
  while ([...commits.keys()].some((id) => !firstSeen.has(id)) && Date.now() < deadlineB) await sleep(10)
  // COMMIT is acknowledged to us a little after it happens: latencies are measured from the acknowledgement.
  const latencies = [...commits].map(([id, at]) => Math.max(0, (firstSeen.get(id)?.at ?? Infinity) - at))
  const p50 = percentile(latencies, 50)
  const p99 = percentile(latencies, 99)
  const max = Math.max(...latencies)
  log(`(b) commit → attempt 0: p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${max.toFixed(1)} ms`)

  const single: Array<number> = []
  for (let i = 0; i < 200; i++) {
    const t = performance.now()
    await post(samples[i])
    single.push(performance.now() - t)
  }
  const bp50 = percentile(single, 50)
  const bp99 = percentile(single, 99)
  log(`(b) baseline: one bare POST round trip p50 ${bp50.toFixed(1)} ms, p99 ${bp99.toFixed(1)} ms`)

  const attempts = await sql<{ n: string; failed: string }>(
    `SELECT count(*) AS n, count(*) FILTER (WHERE status_code IS DISTINCT FROM 200) AS failed FROM webhook_attempt_log`
  )
  node.kill("SIGTERM")
  await new Promise((r) => node.once("exit", r))
  await db.dispose()
  agent.destroy()
  receiver.closeAllConnections()
  receiver.close()
  await database.stop()
  Fs.rmSync(tmp, { recursive: true, force: true })

  const ok1 = perSecond >= 1000
  const ok2 = p99 <= 250
  const machine = `${Os.cpus()[0]?.model ?? "cpu"} × ${Os.cpus().length}, ${
    (Os.totalmem() / 2 ** 30).toFixed(1)
  } GiB, ${Os.platform()} ${Os.release()}, Node ${process.version}`
  const lines = [
    "",
    `## bench:webhooks — ${new Date().toISOString()}`,
    "",
    `Machine: ${machine}. PostgreSQL: ${process.env.DATABASE_URL ? "external (DATABASE_URL)" : "embedded (fsync on)"}. ` +
    `Node: \`anchord start\` (WEBHOOK_CONCURRENCY ${CONCURRENCY}), receiver: node:http in the bench process answering 200 at once, all on one host.`,
    "",
    "| | figure | target |",
    "|---|---:|---|",
    `| (a) backlog of ${BACKLOG} events (one COMMIT) → all delivered | ${perSecond.toFixed(0)} deliveries/s (${drainMs.toFixed(0)} ms) | ≥ 1,000/s ${
      ok1 ? "(met)" : "(MISSED)"
    } |`,
    `| (a) baseline: bare node:http POST loop, same bodies, same concurrency | ${basePerSecond.toFixed(0)} POSTs/s | |`,
    `| (a) ratio dispatcher / baseline | ${(perSecond / basePerSecond).toFixed(2)} | |`,
    `| (a) CPU per delivery: node / PostgreSQL / receiver (2 cores shared by all three) | ${perDelivery(cpuNode)} / ${perDelivery(cpuPg)} / ${
      perDelivery(cpuReceiver)
    } | |`,
    `| (b) COMMIT → attempt 0 at the receiver, ${LATENCY_EVENTS} events at ${LATENCY_RATE}/s, p50 | ${p50.toFixed(1)} ms | |`,
    `| (b) same, p99 (max ${max.toFixed(1)} ms) | ${p99.toFixed(1)} ms | ≤ 250 ms ${ok2 ? "(met)" : "(MISSED)"} |`,
    `| (b) baseline: one bare POST round trip, p50 / p99 | ${bp50.toFixed(1)} / ${bp99.toFixed(1)} ms | |`,
    "",
    `Attempts logged: ${attempts[0].n}, non-200: ${attempts[0].failed}. Each delivery: claim (SKIP LOCKED, lease), render + HMAC once, ` +
    "stored before sending, POST, outcome batched into webhook_deliveries (+ webhook_attempts for failures).",
    ""
  ]
  console.log(lines.join("\n"))
  if (process.env.BENCH_NO_APPEND !== "1") {
    const file = Path.join(root, "docs/benchmarks/runs.md")
    if (!Fs.existsSync(file)) Fs.writeFileSync(file, "# Benchmarks\n")
    Fs.appendFileSync(file, lines.join("\n"))
    log(`appended to ${Path.relative(root, file)}`)
  }
  process.exit(ok1 && ok2 ? 0 : 1)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
