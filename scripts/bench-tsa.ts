/**
 * bench:tsa — RFC 3161 tokens per second, durable (each token and its record committed before the
 * reply), ECDSA P-256, against a bare sign loop of the same key in the same run (the ratio is the
 * headline). One node in this process on a real socket, `CONCURRENCY` clients POSTing `openssl ts
 * -query` bytes over keep-alive; also the token building alone (parse + sign + encode, no HTTP, no
 * database). Appends the figures to docs/benchmarks.md.
 *   npm run bench:tsa            (BENCH_TSA_NO_WRITE=1 to only print; DATABASE_URL to use a server)
 */
import { opsPerSecond } from "./bench/rate.ts"
import * as ChildProcess from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { Effect, Layer, ManagedRuntime, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import { NodeLayer } from "../src/app/layers.ts"
import { Accounts } from "../src/auth/Accounts.ts"
import { AppConfig } from "../src/config.ts"
import { createTsaCertificates } from "../src/tsa/devCa.ts"
import { loadSigner } from "../src/tsa/keys.ts"
import { issue, parseRequest, template } from "../src/tsa/token.ts"
import { benchDatabase } from "./bench/database.ts"

const root = Path.resolve(import.meta.dirname, "..")
const SECONDS = Number(process.env.BENCH_TSA_SECONDS ?? 10)
const CONCURRENCY = Number(process.env.BENCH_TSA_CONCURRENCY ?? 64)

const tmp = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-bench-tsa-"))
const files = await createTsaCertificates(Path.join(tmp, "tsa"), "ecdsa")
Fs.writeFileSync(Path.join(tmp, "data"), "bench\n")
ChildProcess.execFileSync("openssl", ["ts", "-query", "-data", Path.join(tmp, "data"), "-sha256", "-cert", "-out", Path.join(tmp, "q.tsq")])
const query = Fs.readFileSync(Path.join(tmp, "q.tsq"))

/** Operations per second (wall and per CPU-second) for `seconds`: one loop for every bench (scripts/bench/rate.ts). */
const loop = (seconds: number, f: () => unknown) => opsPerSecond("bench:tsa", seconds, () => void f(), 500)

const loaded = loadSigner(files, new Date())
if (!("signer" in loaded)) throw new Error(loaded.problems.join("; "))
const signer = loaded.signer
const t = template(signer, "2.25.1", 1000)
const attrs = Crypto.randomBytes(160)
const bare = loop(3, () => Crypto.sign("sha256", attrs, signer.key))
let serial = 1n
const building = loop(3, () => {
  const parsed = parseRequest(query, "2.25.1")
  if (parsed._tag !== "Stamp") throw new Error(parsed.text)
  return issue(signer, t, parsed.request, { serial: serial++, genTime: new Date() })
})

const db = await benchDatabase(tmp)
process.env.TSA_CERT_FILE = files.certFile
process.env.TSA_KEY_FILE = files.keyFile
const runtime = ManagedRuntime.make(NodeLayer.pipe(Layer.provideMerge(AppConfig.layerWith({
  databaseUrl: Option.some(Redacted.make(db.url)), host: "127.0.0.1", port: 0, dataDir: tmp
}))))
const server = await runtime.runPromise(HttpServer.HttpServer)
const port = server.address._tag === "UnixPathAddress" ? 0 : server.address.port
const key = await runtime.runPromise(Effect.gen(function*() {
  const accounts = yield* Accounts
  const account = yield* accounts.createAccount({ name: "bench", plan: "ENTERPRISE", ratePerSecond: 1_000_000 })
  yield* accounts.activate(account.id)
  return (yield* accounts.createKey({ accountId: account.id, environment: "test" })).key
}))

const url = `http://127.0.0.1:${port}/v1/timestamp`
const headers = { authorization: `Bearer ${key}`, "content-type": "application/timestamp-query" }
let granted = 0
let other = 0
const client = async (until: number) => {
  while (Date.now() < until) {
    const r = await fetch(url, { method: "POST", headers, body: query })
    await r.arrayBuffer()
    if (r.status === 200 && r.headers.get("x-timestamp-serial") !== null) granted++
    else other++
  }
}
/** Token rows with their records (a DATABASE_URL may hold earlier runs' rows: counted as a difference). */
const storedTokens = () => runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(sql<{ n: string }>`SELECT count(*)::text AS n FROM timestamp_tokens t JOIN records r ON r.id = t.record_id`, (rows) => Number(rows[0]!.n))))
// Warm-up, then the measured run.
await Promise.all(Array.from({ length: CONCURRENCY }, () => client(Date.now() + 2000)))
granted = 0
other = 0
const storedBefore = await storedTokens()
const cpu0 = process.cpuUsage()
const start = Date.now()
await Promise.all(Array.from({ length: CONCURRENCY }, () => client(start + SECONDS * 1000)))
const elapsed = (Date.now() - start) / 1000
const cpu = process.cpuUsage(cpu0)
const http = { wall: granted / elapsed, cpu: granted / ((cpu.user + cpu.system) / 1e6) }
const stored = await storedTokens() - storedBefore
await runtime.dispose()
await db.stop()
Fs.rmSync(tmp, { recursive: true, force: true })

const fmt = (r: { wall: number; cpu: number }) => `${Math.round(r.wall).toLocaleString("en")}/s (${Math.round(r.cpu).toLocaleString("en")} per CPU-second of this process)`
const lines = [
  `- bare ECDSA P-256 sign loop (node:crypto, same key): ${fmt(bare)}`,
  `- token building alone (parse the query, TSTInfo, signed attributes, sign, CMS + TimeStampResp encoding): ${fmt(building)}`,
  `- **durable tokens over HTTP** (${CONCURRENCY} keep-alive clients in the same process, ${SECONDS} s; token row + hash-only record committed before each reply): ${fmt(http)}; ${other} other answers; ${stored.toLocaleString("en")} token rows with their records stored in the run (every granted token)`,
  `- ratio durable / bare sign loop: **${(http.wall / bare.wall).toFixed(2)}** (wall), token building / bare: ${(building.wall / bare.wall).toFixed(2)}`
]
console.log(lines.join("\n"))
if (process.env.BENCH_TSA_NO_WRITE !== "1") {
  const cpuModel = Os.cpus()[0]?.model ?? "unknown CPU"
  Fs.appendFileSync(Path.join(root, "docs", "benchmarks.md"), [
    "",
    `## RFC 3161 tokens (bench:tsa), ${new Date().toISOString().slice(0, 10)}, ${Os.cpus().length} × ${cpuModel}`,
    "",
    `Machine shared with other work while measured (loaded): absolute figures are noisy; the ratio is the headline. ${db.embedded ? "Embedded PostgreSQL" : "PostgreSQL at DATABASE_URL"}.`,
    "",
    ...lines,
    ""
  ].join("\n"))
}
process.exit(0)
