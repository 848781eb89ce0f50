/**
 * A PostgreSQL primary and a streaming standby built from the machine's PostgreSQL 15 binaries, in a
 * temporary directory, for the failover soak: initdb, pg_basebackup -R, pg_ctl. Synchronous (the
 * standby named in `synchronous_standby_names`, `synchronous_commit=on`: a commit returns once the
 * standby has flushed it) or asynchronous. Run as the `postgres` user when we are root (initdb refuses
 * root). Trust authentication on 127.0.0.1 only: a throwaway pair.
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { freePort } from "../../src/dev/EmbeddedPostgres.ts"
import { startTcpSwitch, type TcpSwitch } from "./tcp-switch.ts"

export const PG_BIN = process.env.PG_BIN ?? "/usr/lib/postgresql/15/bin"
const asRoot = process.getuid?.() === 0

/** A PostgreSQL binary's command line, as `postgres` when we are root. */
const pgCommand = (bin: string, args: Array<string>): [string, Array<string>] =>
  asRoot ? ["runuser", ["-u", "postgres", "--", Path.join(PG_BIN, bin), ...args]] : [Path.join(PG_BIN, bin), args]
const pg = (bin: string, args: Array<string>, timeoutMs = 120_000) => {
  const [cmd, argv] = pgCommand(bin, args)
  return ChildProcess.execFileSync(cmd, argv, { encoding: "utf8", timeout: timeoutMs, stdio: ["ignore", "pipe", "pipe"] })
}

const psqlArgs = (port: number, sql: string, db: string) => ["-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-d", db, "-At", "-X", "-c", sql]

/** psql -At against a server: the output's lines. */
export const psql = (port: number, sql: string, db = "postgres") =>
  ChildProcess.execFileSync(Path.join(PG_BIN, "psql"), psqlArgs(port, sql, db), {
    encoding: "utf8",
    timeout: 30_000,
    stdio: ["ignore", "pipe", "pipe"]
  }).split("\n").filter((l) => l !== "")

/** The same without blocking the event loop (while a load runs in this process). */
export const psqlAsync = (port: number, sql: string, db = "postgres") =>
  new Promise<Array<string>>((resolve, reject) =>
    ChildProcess.execFile(Path.join(PG_BIN, "psql"), psqlArgs(port, sql, db), { encoding: "utf8", timeout: 30_000 }, (error, stdout) =>
      error ? reject(error) : resolve(stdout.split("\n").filter((l) => l !== "")))
  )

export interface PgServer {
  readonly dir: string
  readonly port: number
  /** The postmaster's pid (from postmaster.pid). */
  readonly pid: () => number
}

export interface PgPair {
  readonly root: string
  readonly primary: PgServer
  readonly standby: PgServer
  readonly synchronous: boolean
  /** pg_ctl promote -w on the standby (not blocking the event loop). */
  readonly promote: () => Promise<void>
  /** Stops both servers (immediate; a dead one is skipped), kills what the killed one left, removes the directory. */
  readonly destroy: () => void
}

const server = (dir: string, port: number): PgServer => ({
  dir,
  port,
  pid: () => Number(Fs.readFileSync(Path.join(dir, "postmaster.pid"), "utf8").split("\n")[0])
})

const start = (s: PgServer) => pg("pg_ctl", ["-D", s.dir, "-l", `${s.dir}.log`, "-w", "-t", "60", "start"])

/** `linkDelayMs`: the standby replicates through a link of that one-way latency (a TCP switch in this process). */
export const buildPgPair = async (synchronous: boolean, log: (line: string) => void, linkDelayMs = 0): Promise<PgPair> => {
  const root = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-failover-pg-"))
  if (asRoot) ChildProcess.execFileSync("chown", ["postgres:postgres", root])
  const primary = server(Path.join(root, "primary"), await freePort())
  const standby = server(Path.join(root, "standby"), await freePort())
  let link: TcpSwitch | undefined
  const destroy = () => {
    void link?.close()
    for (const s of [standby, primary]) {
      try {
        pg("pg_ctl", ["-D", s.dir, "-m", "immediate", "-t", "30", "stop"])
      } catch {}
    }
    Fs.rmSync(root, { recursive: true, force: true })
  }
  try {
    return await build(synchronous, log, linkDelayMs, root, primary, standby, (l) => void (link = l), destroy)
  } catch (e) {
    destroy() // a half-built pair leaves no server running
    throw e
  }
}

const build = async (
  synchronous: boolean,
  log: (line: string) => void,
  linkDelayMs: number,
  root: string,
  primary: PgServer,
  standby: PgServer,
  setLink: (link: TcpSwitch) => void,
  destroy: () => void
): Promise<PgPair> => {
  pg("initdb", ["-D", primary.dir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
  // Appended settings win over initdb's. The standby copies them; its own follow in its auto.conf.
  Fs.appendFileSync(Path.join(primary.dir, "postgresql.conf"), [
    "",
    "# anchord failover soak",
    `port = ${primary.port}`,
    "listen_addresses = '127.0.0.1'",
    `unix_socket_directories = '${root}'`,
    "wal_level = replica",
    "max_wal_senders = 5",
    "wal_keep_size = '512MB'",
    "hot_standby = on",
    "max_connections = 120",
    "shared_buffers = '64MB'",
    "synchronous_commit = on",
    `synchronous_standby_names = '${synchronous ? "FIRST 1 (standby1)" : ""}'`,
    ""
  ].join("\n"))
  start(primary)
  log(`primary on ${primary.port} (${synchronous ? "synchronous standby required" : "asynchronous replication"})`)
  pg("pg_basebackup", ["-h", "127.0.0.1", "-p", String(primary.port), "-U", "postgres", "-D", standby.dir, "-R", "-X", "stream", "--checkpoint=fast"])
  const link = linkDelayMs > 0 ? await startTcpSwitch(primary.port, linkDelayMs) : undefined
  if (link) setLink(link)
  Fs.appendFileSync(Path.join(standby.dir, "postgresql.auto.conf"), [
    "",
    `port = ${standby.port}`,
    `primary_conninfo = 'host=127.0.0.1 port=${link?.port ?? primary.port} user=postgres application_name=standby1'`,
    // Promoted, it has no standby of its own: requiring one would block every commit (Patroni's
    // non-strict synchronous_mode does the same until a replica is back).
    "synchronous_standby_names = ''",
    ""
  ].join("\n"))
  start(standby)
  // Streaming, and in the state the mode asks for, before anything is written.
  for (let i = 0;; i++) {
    // Not blocking: the replication link may be a switch in this process.
    const state = (await psqlAsync(primary.port, "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1' AND state = 'streaming'"))[0]
    if (state === (synchronous ? "sync" : "async")) break
    if (i > 300) throw new Error(`standby not streaming (${state ?? "absent"})`)
    await new Promise((r) => setTimeout(r, 100))
  }
  log(`standby on ${standby.port}, streaming (${synchronous ? "sync" : "async"}${link ? `, through a link of ${linkDelayMs} ms each way` : ""})`)
  await psqlAsync(primary.port, "CREATE DATABASE anchord")
  // A synchronous commit waits for the standby's flush, not its replay: until the standby has replayed
  // the CREATE DATABASE, a connection to it finds no database "anchord".
  for (let i = 0;; i++) {
    if ((await psqlAsync(standby.port, "SELECT 1 FROM pg_database WHERE datname = 'anchord'"))[0] === "1") break
    if (i > 300) throw new Error("the standby has not replayed CREATE DATABASE anchord after 30 s")
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    root,
    primary,
    standby,
    synchronous,
    promote: () =>
      new Promise<void>((resolve, reject) => {
        const [cmd, argv] = pgCommand("pg_ctl", ["-D", standby.dir, "-w", "-t", "60", "promote"])
        ChildProcess.execFile(cmd, argv, { timeout: 90_000 }, (error) => error ? reject(error) : resolve())
      }),
    destroy
  }
}

/** The children of a process (a postmaster's backends), by pid. */
export const childPids = (pid: number): Array<number> => {
  try {
    return ChildProcess.execFileSync("ps", ["-o", "pid=", "--ppid", String(pid)], { encoding: "utf8" })
      .split("\n").map((s) => Number(s.trim())).filter((n) => n > 0)
  } catch {
    return []
  }
}
