/**
 * The benchmarks' PostgreSQL: DATABASE_URL when set, else a throwaway embedded server in `dir`.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { freePort, loadEmbeddedPostgres } from "../../src/dev/EmbeddedPostgres.ts"

export const benchDatabase = async (
  dir: string,
  log: (line: string) => void = () => {},
  /** Extra server flags for the embedded server (e.g. loading pg_stat_statements); ignored with DATABASE_URL. */
  postgresFlags: Array<string> = []
) => {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, embedded: false, stop: async () => {} }
  Fs.chmodSync(dir, 0o755) // the embedded server runs as the `postgres` user when we are root
  const port = await freePort()
  log(`starting embedded PostgreSQL on ${port}`)
  const EmbeddedPostgres = await loadEmbeddedPostgres()
  const pg = new EmbeddedPostgres({
    databaseDir: Path.join(dir, "pg"),
    port,
    user: "postgres",
    password: "bench",
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags,
    // BENCH_PG_LOG=<file>: the server's log there (e.g. with BENCH_PG_FLAGS loading auto_explain).
    onLog: process.env.BENCH_PG_LOG ? (m) => Fs.appendFileSync(process.env.BENCH_PG_LOG!, `${String(m).trimEnd()}\n`) : () => {},
    onError: process.env.BENCH_PG_LOG ? (m) => Fs.appendFileSync(process.env.BENCH_PG_LOG!, `${String(m).trimEnd()}\n`) : () => {}
  })
  await pg.initialise()
  await pg.start()
  await pg.createDatabase("bench")
  return { url: `postgres://postgres:bench@127.0.0.1:${port}/bench`, embedded: true, stop: () => pg.stop() }
}
