/**
 * bench:tsa — RFC 3161 tokens per second, durable (each token and its record committed before the
 * reply), ECDSA P-256, against a bare sign loop of the same key in the same run (the ratio is the
 * headline). The node runs as `anchord start` in its own process; the load generator (autocannon,
 * `CONCURRENCY` keep-alive connections POSTing `openssl ts -query` bytes) runs in this one, so that it
 * does not share the node's event loop. Also the token building alone (parse + sign + encode, no HTTP,
 * no database), and the machine's load while measured. Appends the figures to docs/benchmarks/runs.md.
 *   npm run bench:tsa            (BENCH_TSA_NO_WRITE=1 to only print; DATABASE_URL to use a server;
 *                                 BENCH_TSA_PROFILE=<dir> writes the node's CPU profile there)
 */
import { opsPerSecond } from "./bench/rate.ts"
import * as ChildProcess from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import autocannon from "autocannon"
import { Effect, ManagedRuntime, Redacted } from "effect"
import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "effect/sql"
import { freePort } from "../src/dev/EmbeddedPostgres.ts"
import { createTsaCertificates } from "../src/tsa/devCa.ts"
import { loadSigner } from "../src/tsa/keys.ts"
import { parseRequest } from "../src/tsa/request.ts"
import { issue, template } from "../src/tsa/token.ts"
import { benchDatabase } from "./bench/database.ts"

const root = Path.resolve(import.meta.dirname, "..")
const SECONDS = Number(process.env.BENCH_TSA_SECONDS ?? 10)
const CONCURRENCY = Number(process.env.BENCH_TSA_CONCURRENCY ?? 64)
const PROFILE = process.env.BENCH_TSA_PROFILE

const tmp = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-bench-tsa-"))
const files = await createTsaCertificates(Path.join(tmp, "tsa"), "ecdsa")
Fs.writeFileSync(Path.join(tmp, "data"), "bench\n")
ChildProcess.execFileSync("openssl", ["ts", "-query", "-data", Path.join(tmp, "data"), "-sha256", "-cert", "-out", Path.join(tmp, "q.tsq")], {
  stdio: "ignore"
})
const query = Fs.readFileSync(Path.join(tmp, "q.tsq"))

/** Operations per second (wall and per CPU-second) for `seconds`: one loop for every bench (scripts/bench/rate.ts). */
const loop = (seconds: number, f: () => unknown) => opsPerSecond("bench:tsa", seconds, () => void f(), 500)

const loaded = loadSigner(files, new Date())
if (!("signer" in loaded)) throw new Error(loaded.problems.join("; "))
const signer = loaded.signer
const layouts = template(signer, "2.25.1", 1000)
const attrs = Crypto.randomBytes(160)
const bareLoop = () => loop(3, () => Crypto.sign("sha256", attrs, signer.key))
let serial = 1n
const buildingLoop = () =>
  loop(3, () => {
    const parsed = parseRequest(query, "2.25.1")
    if (parsed._tag !== "Stamp") throw new Error(parsed.text)
    return issue(signer, layouts, parsed.request, { serial: serial++, genTime: new Date() })
  })
const bare = bareLoop()
const building = buildingLoop()

/** CPU time (user + system) a process has used, in ms (Linux /proc). */
const cpuMs = (pid: number | undefined): number => {
  const fields = Fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10
}
/** The whole machine's CPU (all cores), from /proc/stat: busy and total jiffies. */
const machine = () => {
  const f = Fs.readFileSync("/proc/stat", "utf8").split("\n")[0]!.split(/\s+/).slice(1).map(Number)
  const idle = f[3]! + f[4]!
  const total = f.reduce((a, b) => a + b, 0)
  return { busy: total - idle, total }
}

const waitFor = async (url: string, ms = 60_000) => {
  const until = Date.now() + ms
  while (Date.now() < until) {
    try {
      const r = await fetch(url)
      if (r.status < 500) return
    } catch {}
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`timed out waiting for ${url}`)
}

const db = await benchDatabase(tmp)
const env = {
  ...process.env,
  DATABASE_URL: db.url,
  ANCHORD_DATA_DIR: tmp,
  TSA_CERT_FILE: files.certFile,
  TSA_KEY_FILE: files.keyFile,
  // No chain here: the tokens' records only have to be accepted (a node of another process would anchor them).
  EVM_TEST_NETWORK_ID: "hardhat-local",
  LOG_LEVEL: "Warn"
}
const cli = (args: Array<string>) =>
  JSON.parse(ChildProcess.execFileSync(process.execPath, [Path.join(root, "src/cli/main.ts"), ...args], { cwd: root, env, encoding: "utf8" }))
const account = cli(["accounts", "create", "bench", "--plan", "ENTERPRISE", "--rate-per-second", "10000000", "--activate", "--json"])
const key = cli(["keys", "create", account.id, "--json"]).key as string

const port = await freePort()
const node = ChildProcess.spawn(
  process.execPath,
  [...(PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${PROFILE}`] : []), Path.join(root, "src/cli/main.ts"), "start"],
  { cwd: root, env: { ...env, PORT: String(port) }, stdio: ["ignore", "ignore", "inherit"] }
)
const exited = new Promise((resolve) => node.once("exit", resolve))
await waitFor(`http://127.0.0.1:${port}/v1/health`)

const base = `http://127.0.0.1:${port}`
// Every request stamps another imprint (as from real clients): the records' hash index then takes a new key
// each time, not one duplicate over and over. The query is openssl's, its SHA-256 imprint replaced.
const imprintAt = query.indexOf(Crypto.hash("sha256", Fs.readFileSync(Path.join(tmp, "data")), "buffer"))
if (imprintAt < 0) throw new Error("the imprint is not in openssl's query")
const freshQuery = () => {
  const q = Buffer.from(query)
  Crypto.randomFillSync(q, imprintAt, 32)
  return q
}
type Target = "tokens" | "records"
const run = (target: Target, seconds: number) =>
  new Promise<autocannon.Result>((resolve, reject) => {
    const tokens = target === "tokens"
    autocannon({
      url: `${base}${tokens ? "/v1/timestamp" : "/v1/anchor/hash"}`,
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": tokens ? "application/timestamp-query" : "application/json" },
      requests: [{
        // autocannon sends a Buffer body as it is; its types say string.
        setupRequest: (request: Record<string, unknown>) => ({ ...request,
          body: tokens ? freshQuery() : JSON.stringify({ hash: Crypto.randomBytes(32).toString("hex") }) })
      }],
      connections: CONCURRENCY,
      duration: seconds
    } as autocannon.Options, (err, result) => err ? reject(err) : resolve(result))
  })

const sql = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(db.url) }))
/** Token rows with their records (a DATABASE_URL may hold earlier runs' rows: counted as a difference). */
const storedTokens = () =>
  sql.runPromise(
    Effect.flatMap(SqlClient.SqlClient,
      (s) =>
        Effect.map(s<{ n: string }>`SELECT count(*)::text AS n FROM timestamp_tokens t JOIN records r ON r.id = t.record_id`, (rows) => Number(rows[0]!.n)))
  )

/** Transactions committed in the database so far (pg_stat_database: how many answers share a commit). */
const commits = () =>
  sql.runPromise(
    Effect.flatMap(SqlClient.SqlClient,
      (s) => Effect.map(s<{ n: string }>`SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = current_database()`, (rows) => Number(rows[0]!.n)))
  )

/** One measured round: what was answered, the node's and this process's CPU, the machine's, the commits. */
const measure = async (target: Target, seconds: number) => {
  const c0 = await commits()
  const m0 = machine()
  const node0 = cpuMs(node.pid)
  const self0 = process.cpuUsage()
  const result = await run(target, seconds)
  const self = process.cpuUsage(self0)
  const m1 = machine()
  // The statistics are sent by backends when idle (up to ~0.5 s later): wait for them to settle.
  await new Promise((resolve) => setTimeout(resolve, 1000))
  const transactions = await commits() - c0
  return {
    transactions,
    ok: result["2xx"],
    other: result.non2xx + result.errors,
    seconds: (result as unknown as { duration: number }).duration, // autocannon's result; not in its types
    p50: result.latency.p50,
    p99: result.latency.p99,
    nodeCpu: (cpuMs(node.pid) - node0) / 1000,
    selfCpu: (self.user + self.system) / 1e6,
    busy: (m1.busy - m0.busy) / (m1.total - m0.total)
  }
}
type Round = Awaited<ReturnType<typeof measure>>
const sum = (rounds: ReadonlyArray<Round>) =>
  rounds.reduce((a, r) => ({
    transactions: a.transactions + r.transactions,
    ok: a.ok + r.ok,
    other: a.other + r.other,
    seconds: a.seconds + r.seconds,
    p50: Math.max(a.p50, r.p50),
    p99: Math.max(a.p99, r.p99),
    nodeCpu: a.nodeCpu + r.nodeCpu,
    selfCpu: a.selfCpu + r.selfCpu,
    busy: a.busy + r.busy * r.seconds
  }))

/** One client, one request at a time (fetch, keep-alive): the median round trip of each kind, unloaded by this bench. */
const alone = async (target: Target, n = 200) => {
  const times: Array<number> = []
  for (let i = 0; i < n; i++) {
    const tokens = target === "tokens"
    const t0 = performance.now()
    const r = await fetch(`${base}${tokens ? "/v1/timestamp" : "/v1/anchor/hash"}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": tokens ? "application/timestamp-query" : "application/json" },
      body: tokens ? freshQuery() : JSON.stringify({ hash: Crypto.randomBytes(32).toString("hex") })
    })
    await r.arrayBuffer()
    times.push(performance.now() - t0)
  }
  return times.sort((a, b) => a - b)[n >> 1]!
}
const aloneTokens = await alone("tokens")
const aloneRecords = await alone("records")

await run("tokens", 2) // warm-up
await run("records", 2)
const storedBefore = await storedTokens()
const load0 = Os.loadavg()[0]!
// Alternating rounds (tokens, then the same node's hash-only records), so that both see the same machine.
const tokenRounds: Array<Round> = []
const recordRounds: Array<Round> = []
for (let i = 0; i < 2; i++) {
  tokenRounds.push(await measure("tokens", SECONDS / 2))
  recordRounds.push(await measure("records", SECONDS / 2))
}
const stored = await storedTokens() - storedBefore
await sql.dispose()
// The bare loop again after the load: the machine's share of one core may have moved during the run.
const bareAfter = bareLoop()

node.kill("SIGTERM")
// Its graceful shutdown waits for the clients' idle keep-alive sockets: measured already, no need to wait.
// (A profile is written only when the node exits by itself: then its shutdown watchdog, 30 s, ends it.)
const stopped = setTimeout(() => node.kill("SIGKILL"), PROFILE ? 45_000 : 5000)
await exited
clearTimeout(stopped)
await db.stop()
Fs.rmSync(tmp, { recursive: true, force: true })

const t = sum(tokenRounds)
const r = sum(recordRounds)
const granted = t.ok
const tokens = t.ok / t.seconds
const records = r.ok / r.seconds
const busy = (t.busy + r.busy) / (t.seconds + r.seconds)
const fmt = (x: { wall: number; cpu: number }) => `${Math.round(x.wall).toLocaleString("en")}/s (${Math.round(x.cpu).toLocaleString("en")} per CPU-second)`
const perNode = (x: ReturnType<typeof sum>) =>
  `node ${Math.round(x.nodeCpu * 1e6 / x.ok)} µs CPU each; ${(x.ok / x.transactions).toFixed(1)} answers per committed transaction (${
    x.transactions.toLocaleString("en")
  } in the database, background work included)`
const lines = [
  `- bare ECDSA P-256 sign loop (node:crypto, same key): ${fmt(bare)} before the load, ${fmt(bareAfter)} after`,
  `- token building alone (parse the query, TSTInfo, signed attributes, sign, CMS + TimeStampResp encoding): ${fmt(building)}`,
  `- **durable tokens over HTTP** (node: \`anchord start\` in its own process; autocannon, ${CONCURRENCY} keep-alive connections, in the bench process, a new imprint per request; 2 rounds of ${
    SECONDS / 2
  } s; token row + hash-only record committed before each reply): ` +
  `**${Math.round(tokens).toLocaleString("en")}/s**, p50 ≤ ${t.p50} ms, p99 ≤ ${t.p99} ms; ${perNode(t)}; ` +
  `load generator ${Math.round(100 * t.selfCpu / t.seconds)}% of a core; ${t.other} non-2xx or errors; ${
    stored.toLocaleString("en")
  } token rows with their records stored for ${granted.toLocaleString("en")} tokens granted`,
  `- same node, same rounds alternated: hash-only records (\`POST /v1/anchor/hash\`, durable, the ingest fast path): ${
    Math.round(records).toLocaleString("en")
  }/s, p99 ≤ ${r.p99} ms; ${perNode(r)}; ${r.other} non-2xx or errors`,
  `- ratio durable tokens / bare sign loop: **${(tokens / bare.wall).toFixed(2)}** (wall, vs the loop before the load; ${
    (tokens / bareAfter.wall).toFixed(2)
  } vs after); tokens / hash-only records: **${(tokens / records).toFixed(2)}**; token building / bare: ${(building.wall / bare.wall).toFixed(2)}`,
  `- one request at a time (one client, sequential): a token ${aloneTokens.toFixed(1)} ms, a hash-only record ${aloneRecords.toFixed(1)} ms (medians of 200)`,
  `- machine while measured: ${Math.round(busy * 100)}% of ${Os.cpus().length} cores busy, load average ${load0.toFixed(2)} at the start`
]
console.log(lines.join("\n"))
// Every granted token is stored; up to CONCURRENCY more per round may be (committed, answered after autocannon's cut-off).
const durable = stored >= granted && stored <= granted + 2 * CONCURRENCY
if (!durable) console.log(`!! ${granted} tokens granted but ${stored} stored`)
if (process.env.BENCH_TSA_NO_WRITE !== "1") {
  const cpuModel = Os.cpus()[0]?.model ?? "unknown CPU"
  Fs.appendFileSync(Path.join(root, "docs", "benchmarks.md"), [
    "",
    `## RFC 3161 tokens (bench:tsa), ${new Date().toISOString().slice(0, 10)}, ${Os.cpus().length} × ${cpuModel}`,
    "",
    `Machine shared with other work while measured (loaded): absolute figures are noisy; the ratio is the headline. ${
      db.embedded ? "Embedded PostgreSQL" : "PostgreSQL at DATABASE_URL"
    }.`,
    "",
    ...lines,
    ""
  ].join("\n"))
}
process.exit(durable ? 0 : 1)
