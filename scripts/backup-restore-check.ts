/**
 * Backup and restore, checked end to end (docs/operating.md, "Backups"): takes a `pg_dump` of a
 * running node's database, restores it into a fresh database on the same server, starts a node
 * (`anchord start`, no chain networks, webhook dispatcher off: a restored copy must never anchor or
 * deliver beside the original) on the copy, and checks that the records, their anchors and their
 * proofs survived: every table's rows, the anchored records (hash, status, anchors) against the
 * original, and the proof bundles the restored node serves, verified (offline: hash and Merkle path;
 * with --rpc-url also against the chain).
 *
 *   DATABASE_URL=postgres://… npm run backup:check -- [--pg-bin DIR] [--rpc-url URL] [--proofs N] [--keep]
 *
 * DATABASE_URL_FILE works too. The connection reaches pg_dump and pg_restore through PG* variables,
 * never their command line (`ps` would show a password). pg_dump must be at least the server's major
 * version: --pg-bin (or PG_BIN) names the directory of matching client binaries; without it the
 * newest /usr/lib/postgresql/<v>/bin, else pg_dump on PATH. Exit 0 when everything survived.
 */
import * as ChildProcess from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { freePort } from "../src/dev/EmbeddedPostgres.ts"
import { rpcClient } from "../src/verify/evm.ts"
import { readInput } from "../src/verify/input.ts"
import { verifyInput } from "../src/verify/verify.ts"

const root = Path.resolve(import.meta.dirname, "..")
const entry = Path.join(root, "src/cli/main.ts")

export interface CheckOptions {
  readonly databaseUrl: string
  /** Directory of pg_dump / pg_restore (default: see findPgBin). */
  readonly pgBin?: string
  /** JSON-RPC URL to verify EVM anchors against the chain too (default: offline verification). */
  readonly rpcUrl?: string
  /** Anchored records whose proofs are fetched and verified (default 5). */
  readonly proofs?: number
  /** Keep the restored database (default: dropped at the end). */
  readonly keep?: boolean
  readonly log?: (line: string) => void
}

export interface CheckReport {
  readonly pgDump: string
  readonly serverMajor: number
  readonly dumpBytes: number
  readonly restoredDatabase: string
  /** Table name → [rows in the original now, rows in the copy]. */
  readonly tables: Record<string, readonly [number, number]>
  readonly records: number
  readonly anchoredRecords: number
  readonly proofsVerified: number
  readonly problems: ReadonlyArray<string>
}

/** Tables rows are only ever added to (a hard delete keeps the record's row as a tombstone; `anchors` rows of a given-up batch move out). */
const GROWING = new Set(["accounts", "records", "anchor_batches", "api_keys", "effect_sql_migrations"])

const majorOf = (versionText: string) => Number(/\(PostgreSQL\)\s+(\d+)/.exec(versionText)?.[1] ?? NaN)

/** The client binaries: --pg-bin / PG_BIN, else the newest /usr/lib/postgresql/<v>/bin, else PATH. */
export const findPgBin = (explicit?: string): string | undefined => {
  const given = explicit ?? process.env.PG_BIN
  if (given !== undefined && given !== "") return given
  const base = "/usr/lib/postgresql"
  const versions = Fs.existsSync(base)
    ? Fs.readdirSync(base).filter((v) => /^\d+$/.test(v) && Fs.existsSync(Path.join(base, v, "bin", "pg_dump"))).map(Number).sort((a, b) => b - a)
    : []
  return versions.length > 0 ? Path.join(base, String(versions[0]), "bin") : undefined
}

/** libpq's variables for a connection URL: the password travels in the environment, not in argv. */
export const pgEnv = (url: string, database?: string): Record<string, string> => {
  const u = new URL(url)
  const env: Record<string, string> = {
    PGHOST: decodeURIComponent(u.hostname.replace(/^\[|\]$/g, "")) || "127.0.0.1",
    PGPORT: u.port || "5432",
    PGDATABASE: database ?? decodeURIComponent(u.pathname.slice(1)),
    PGUSER: decodeURIComponent(u.username) || "postgres"
  }
  if (u.password !== "") env.PGPASSWORD = decodeURIComponent(u.password)
  const sslmode = u.searchParams.get("sslmode")
  if (sslmode !== null) env.PGSSLMODE = sslmode
  return env
}

const run = (command: string, args: ReadonlyArray<string>, env: Record<string, string>) => {
  const r = ChildProcess.spawnSync(command, args, { env: { ...process.env, ...env }, encoding: "utf8" })
  if (r.error) throw new Error(`${Path.basename(command)}: ${r.error.message}`)
  if (r.status !== 0) throw new Error(`${Path.basename(command)} exited with ${r.status}: ${r.stderr.trim().slice(0, 2000)}`)
  return r.stdout
}

const withSql = <A>(url: string, f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    return yield* f(yield* SqlClient.SqlClient)
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) })))))

const sqlRows = <A extends object>(url: string, text: string, params: ReadonlyArray<unknown> = []) =>
  withSql(url, (sql) => sql.unsafe<A>(text, params as Array<unknown>))

const tableCounts = async (url: string) => {
  const tables = await sqlRows<{ name: string }>(url,
    "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1")
  const out: Record<string, number> = {}
  for (const { name } of tables) {
    out[name] = Number((await sqlRows<{ n: string }>(url, `SELECT count(*) AS n FROM "${name.replace(/"/g, "\"\"")}"`))[0]!.n)
  }
  return out
}

/** An `anchord` process with the restored database's URL in a file (DATABASE_URL_FILE), not in its environment. */
const anchordEnv = (urlFile: string, dataDir: string, extra: Record<string, string> = {}) => {
  const env: Record<string, string> = { ...process.env as Record<string, string> }
  for (const name of ["DATABASE_URL", "REDIS_URL", "EVM_NETWORKS", "EVM_NETWORKS_FILE", "FABRIC_NETWORKS"]) delete env[name]
  return { ...env, DATABASE_URL_FILE: urlFile, ANCHORD_DATA_DIR: dataDir, EVM_NETWORKS: "", FABRIC_NETWORKS: "", WEBHOOK_DISPATCHER: "false", ...extra }
}

export const backupRestoreCheck = async (options: CheckOptions): Promise<CheckReport> => {
  const log = options.log ?? ((line: string) => console.error(line))
  const problems: Array<string> = []
  const bin = findPgBin(options.pgBin)
  const pgDump = bin === undefined ? "pg_dump" : Path.join(bin, "pg_dump")
  const pgRestore = bin === undefined ? "pg_restore" : Path.join(bin, "pg_restore")

  // pg_dump refuses a newer server; say so before trying, with the fix.
  const clientMajor = majorOf(run(pgDump, ["--version"], {}))
  const serverMajor = Math.floor(Number((await sqlRows<{ v: string }>(options.databaseUrl, "SELECT current_setting('server_version_num') AS v"))[0]!.v) / 10000)
  if (!(clientMajor >= serverMajor)) {
    throw new Error(`${pgDump} is PostgreSQL ${clientMajor}, the server ${serverMajor}: pg_dump must be at least the server's major version ` +
      `(give the directory of matching client binaries with --pg-bin or PG_BIN)`)
  }

  const work = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-backup-check-"))
  Fs.chmodSync(work, 0o700)
  const source = new URL(options.databaseUrl)
  const restoredDatabase = `${decodeURIComponent(source.pathname.slice(1)).slice(0, 40)}_restore_${Crypto.randomBytes(4).toString("hex")}`
  const restoredUrl = new URL(options.databaseUrl)
  restoredUrl.pathname = `/${restoredDatabase}`
  let node: ChildProcess.ChildProcess | undefined
  try {
    // Rows before the dump: the copy must hold at least these of what is only ever added.
    const before = await tableCounts(options.databaseUrl)
    // 1. The backup: one consistent snapshot of the running database, in pg_dump's custom format.
    const dumpFile = Path.join(work, "anchord.dump")
    run(pgDump, ["--format=custom", "--no-owner", "--no-privileges", `--file=${dumpFile}`], pgEnv(options.databaseUrl))
    const dumpBytes = Fs.statSync(dumpFile).size
    log(`pg_dump (PostgreSQL ${clientMajor}) of a PostgreSQL ${serverMajor} database: ${dumpBytes} bytes`)

    // 2. The restore, into a fresh database on the same server.
    await withSql(options.databaseUrl, (sql) => sql.unsafe(`CREATE DATABASE "${restoredDatabase}"`))
    run(pgRestore, ["--exit-on-error", "--no-owner", "--no-privileges", "--single-transaction", `--dbname=${restoredDatabase}`, dumpFile],
      pgEnv(options.databaseUrl, restoredDatabase))
    log(`restored into ${restoredDatabase}`)

    // 3. Rows: every table is there, and the tables that only grow hold at least what the original
    // held before the dump (it may have grown since; webhook retention and erasure delete elsewhere).
    const after = await tableCounts(restoredUrl.toString())
    const tables: Record<string, readonly [number, number]> = {}
    for (const name of new Set([...Object.keys(before), ...Object.keys(after)])) {
      tables[name] = [before[name] ?? -1, after[name] ?? -1]
      if (after[name] === undefined) problems.push(`table ${name} missing from the copy`)
      else if (before[name] === undefined) problems.push(`table ${name} only in the copy`)
      else if (GROWING.has(name) && after[name]! < before[name]!) {
        problems.push(`table ${name}: ${after[name]} rows in the copy, ${before[name]} in the original before the dump`)
      }
    }
    const restored = restoredUrl.toString()
    if (after.records === undefined) {
      return { pgDump, serverMajor, dumpBytes, restoredDatabase, tables, records: 0, anchoredRecords: 0, proofsVerified: 0, problems }
    }
    const [{ records, anchored }] = await sqlRows<{ records: string; anchored: string }>(restored,
      "SELECT count(*) AS records, count(*) FILTER (WHERE status = 'ANCHORED') AS anchored FROM record_states") as [{ records: string; anchored: string }]
    // Anchored records of the copy, compared with the original: same hash, same status, same anchors.
    const sample = await sqlRows<{ id: string; account_id: string; environment: string; hash: string }>(restored,
      "SELECT r.id, r.account_id, r.environment, r.hash FROM records r JOIN record_states s ON s.id = r.id WHERE s.status = 'ANCHORED' ORDER BY r.created_at DESC LIMIT $1",
      [options.proofs ?? 5])
    for (const r of sample) {
      const original = await sqlRows<{ hash: string; status: string }>(options.databaseUrl,
        "SELECT r.hash, s.status FROM records r JOIN record_states s ON s.id = r.id WHERE r.id = $1", [r.id])
      if (original[0]?.hash !== r.hash) problems.push(`record ${r.id}: hash differs from the original's`)
    }

    // 4. A node on the copy serves the proofs, and they verify.
    const urlFile = Path.join(work, "database-url")
    Fs.writeFileSync(urlFile, restored, { mode: 0o600 })
    const dataDir = Path.join(work, "data")
    const port = await freePort()
    node = ChildProcess.spawn(process.execPath, [entry, "start"], {
      env: anchordEnv(urlFile, dataDir, { PORT: String(port), HOST: "127.0.0.1" }),
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    node.stdout!.on("data", (b) => {
      output += b
    })
    node.stderr!.on("data", (b) => {
      output += b
    })
    const baseUrl = `http://127.0.0.1:${port}`
    const deadline = Date.now() + 60_000
    for (;;) {
      if (node.exitCode !== null) throw new Error(`anchord start on the copy exited with ${node.exitCode}:\n${output.slice(-2000)}`)
      if (await fetch(`${baseUrl}/v1/health`).then((r) => r.ok, () => false)) break
      if (Date.now() > deadline) throw new Error(`anchord start on the copy did not answer within 60 s:\n${output.slice(-2000)}`)
      await new Promise((r) => setTimeout(r, 200))
    }
    log(`anchord start on the copy answers at ${baseUrl}`)
    // A key per account of the sample, made on the copy (the copy is thrown away).
    const keys = new Map<string, string>()
    let proofsVerified = 0
    const rpc = options.rpcUrl === undefined ? undefined : rpcClient(options.rpcUrl)
    for (const r of sample) {
      const owner = `${r.account_id} ${r.environment}`
      if (!keys.has(owner)) {
        const created = JSON.parse(
          run(process.execPath, [entry, "keys", "create", r.account_id, "--env", r.environment, "--json"], anchordEnv(urlFile, dataDir))
        )
        keys.set(owner, created.key)
      }
      const response = await fetch(`${baseUrl}/v1/records/${r.id}/proof`, { headers: { authorization: `Bearer ${keys.get(owner)}` } })
      if (!response.ok) {
        problems.push(`record ${r.id}: the restored node answers ${response.status} for its proof`)
        continue
      }
      const bundle = await response.json()
      const report = await Effect.runPromise(verifyInput(readInput(bundle), { rpcFor: () => rpc, offline: rpc === undefined }))
      if (report.outcome === "verified") proofsVerified++
      else {problems.push(`record ${r.id}: its proof from the copy does not verify (${report.outcome}: ${
          report.checks.filter((c) => c.status === "fail").map((c) =>
            c.message
          ).join("; ")
        })`)}
    }
    return { pgDump, serverMajor, dumpBytes, restoredDatabase, tables, records: Number(records), anchoredRecords: Number(anchored), proofsVerified, problems }
  } finally {
    if (node !== undefined && node.exitCode === null && node.signalCode === null) {
      const exited = new Promise((r) => node!.once("exit", r))
      node.kill("SIGTERM")
      await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))])
      if (node.exitCode === null) node.kill("SIGKILL")
    }
    if (!options.keep) {
      await withSql(options.databaseUrl, (sql) => sql.unsafe(`DROP DATABASE IF EXISTS "${restoredDatabase}" WITH (FORCE)`)).catch(() => {})
    }
    Fs.rmSync(work, { recursive: true, force: true })
  }
}

const main = async () => {
  const arg = (name: string) => {
    const i = process.argv.indexOf(`--${name}`)
    return i > 0 ? process.argv[i + 1] : undefined
  }
  const file = process.env.DATABASE_URL_FILE
  const databaseUrl = process.env.DATABASE_URL ?? (file ? Fs.readFileSync(file, "utf8").replace(/\r?\n$/, "") : undefined)
  if (databaseUrl === undefined) {
    console.error("set DATABASE_URL (or DATABASE_URL_FILE) to the node's database")
    process.exit(2)
  }
  try {
    const report = await backupRestoreCheck({
      databaseUrl,
      pgBin: arg("pg-bin"),
      rpcUrl: arg("rpc-url"),
      proofs: arg("proofs") === undefined ? undefined : Number(arg("proofs")),
      keep: process.argv.includes("--keep")
    })
    console.log(JSON.stringify(report, null, 2))
    console.error(report.problems.length > 0
      ? `FAILED: ${report.problems.join("\n  ")}`
      : report.proofsVerified === 0
      ? `FAILED: the copy holds no anchored record, so no proof was verified (${report.records} records restored)`
      : `OK: ${report.records} records (${report.anchoredRecords} anchored) restored; ${report.proofsVerified} proofs verified from the copy`)
    process.exit(report.problems.length === 0 && report.proofsVerified > 0 ? 0 : 1)
  } catch (e) {
    console.error(`error: ${e instanceof Error ? e.message : String(e)}`)
    process.exit(1)
  }
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === import.meta.filename) await main()
