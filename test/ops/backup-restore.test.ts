// Backups (docs/operating.md, "Backups"): scripts/backup-restore-check.ts on a node with anchored
// records: pg_dump of its running database, restored into a fresh one, `anchord start` on the copy,
// records, anchors and proofs (verified, on the chain too) survive. pg_dump must be at least the
// server's major version: when the suite's server is newer than the machine's client binaries (the
// embedded PostgreSQL 17 beside Debian's 15), the test runs a server of the binaries' own version.
//   npx vitest run test/ops/backup-restore.test.ts
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { Effect, Exit, Scope } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { backupRestoreCheck, findPgBin } from "../../scripts/backup-restore-check.ts"
import { freePort } from "../../src/dev/EmbeddedPostgres.ts"
import { serveEdrChain } from "../../src/dev/evmChain.ts"
import { adminUrl, freshDatabase, query, withDatabase } from "../support/db.ts"
import { allAnchored, call, deploy, network, startEvmNode, waitFor } from "../evm/support.ts"

const HARDHAT_KEY_1 = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d" as const
const pgBin = findPgBin()

const clientMajor = (bin: string) =>
  Number(/\(PostgreSQL\)\s+(\d+)/.exec(ChildProcess.execFileSync(Path.join(bin, "pg_dump"), ["--version"], { encoding: "utf8" }))?.[1])

/** A throwaway PostgreSQL server of the client binaries' version (initdb refuses root: run as postgres then). */
const serverOfVersion = (bin: string) => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-backup-pg-"))
  const asRoot = process.getuid?.() === 0
  const as = (command: string, args: Array<string>) =>
    asRoot ?
      ChildProcess.execFileSync("runuser", ["-u", "postgres", "--", Path.join(bin, command), ...args], { stdio: "pipe" })
      : ChildProcess.execFileSync(Path.join(bin, command), args, { stdio: "pipe" })
  if (asRoot) {
    Fs.chmodSync(dir, 0o755)
    ChildProcess.execFileSync("chown", ["postgres", dir])
  }
  return {
    dir,
    start: async () => {
      const port = await freePort()
      as("initdb", ["-D", Path.join(dir, "data"), "-U", "postgres", "-A", "trust", "--no-sync"])
      // fsync stays on: the node (doctor's fatal checks) refuses to start on a server without it.
      as("pg_ctl", ["-D", Path.join(dir, "data"), "-w", "-l", Path.join(dir, "log"), "-o", `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, "start"])
      return `postgres://postgres@127.0.0.1:${port}/postgres`
    },
    stop: () => {
      try {
        as("pg_ctl", ["-D", Path.join(dir, "data"), "-m", "immediate", "stop"])
      } finally {
        Fs.rmSync(dir, { recursive: true, force: true })
      }
    }
  }
}

const suiteMajor = async () => Math.floor(Number((await query<{ v: string }>(adminUrl(), "SELECT current_setting('server_version_num') AS v"))[0]!.v) / 10000)

/** A fresh database on a server pg_dump can read: the suite's, or one of the binaries' version (started once). */
let ownServer: Promise<string> | undefined
const databaseForDump = async (bin: string, name: string) => {
  if (clientMajor(bin) >= await suiteMajor()) return freshDatabase()
  ownServer ??= (async () => {
    const server = serverOfVersion(bin)
    cleanups.push(server.stop)
    return server.start()
  })()
  const admin = await ownServer
  await query(admin, `CREATE DATABASE ${name}`)
  return withDatabase(admin, name)
}

const cleanups: Array<() => unknown> = []
afterAll(async () => {
  for (const f of cleanups.reverse()) await f()
})

describe.skipIf(pgBin === undefined)("backup and restore (scripts/backup-restore-check.ts)", { timeout: 120_000 }, () => {
  it("a dump of a running node's database restores; a node on the copy serves the records and their proofs verify on the chain", async () => {
    const bin = pgBin!
    const databaseUrl = await databaseForDump(bin, "anchord_backup")

    const scope = await Effect.runPromise(Scope.make())
    cleanups.push(() => Effect.runPromise(Scope.close(scope, Exit.void)))
    const chain = await Effect.runPromise(Scope.provide(serveEdrChain({ host: "127.0.0.1", port: 0 }), scope))
    const { address } = await deploy(chain.rpcUrl, HARDHAT_KEY_1)
    const node = await startEvmNode({
      databaseUrl,
      networks: [network({
        networkId: "hardhat-backup",
        rpcUrl: chain.rpcUrl,
        chainId: 31337,
        contractAddress: address,
        confirmations: 1,
        environment: "test",
        batchMaxSize: 50,
        batchWindowMs: 300,
        pollIntervalMs: 200
      }, HARDHAT_KEY_1)]
    })
    cleanups.push(node.stop)
    const key = await node.createKey(await node.createAccount())
    const ids: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const r = await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { backup: i } } })
      expect(r.status, r.text).toBe(202)
      ids.push(r.json.data.recordId)
    }
    await waitFor("records ANCHORED", allAnchored(databaseUrl, ids), 30_000)
    // One more, still queued or batching, rides along: the copy keeps it too.
    await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { backup: "late" } } })

    // The check runs against the live node's database, the node still running.
    const started = Date.now()
    const report = await backupRestoreCheck({ databaseUrl, pgBin: bin, rpcUrl: chain.rpcUrl, proofs: 3, log: (l) => console.log(l) })
    console.log(`backup-restore check took ${Date.now() - started} ms`)
    console.log(JSON.stringify(report))
    expect(report.problems).toEqual([])
    expect(report.proofsVerified).toBe(3)
    expect(report.anchoredRecords).toBeGreaterThanOrEqual(3)
    expect(report.records).toBeGreaterThanOrEqual(4)
    expect(report.tables.records![1]).toBeGreaterThanOrEqual(4)
    expect(report.tables.anchor_batches![1]).toBeGreaterThan(0)
    expect(report.tables.anchors![1]).toBeGreaterThanOrEqual(1)
    // The copy is gone afterwards.
    const left = await query<{ datname: string }>(databaseUrl, "SELECT datname FROM pg_database WHERE datname = $1", [report.restoredDatabase])
    expect(left).toEqual([])
    // The check itself stays small: well under a minute on this data.
    expect(Date.now() - started).toBeLessThan(60_000)
  })

  it("a restore that brings nothing back is caught", async () => {
    const databaseUrl = await databaseForDump(pgBin!, "anchord_noop_restore")
    const node = await startEvmNode({ databaseUrl, networks: [] })
    await node.createKey(await node.createAccount())
    await node.stop()
    // The real pg_dump, and a pg_restore that does nothing and says it went well.
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-noop-restore-"))
    cleanups.push(() => Fs.rmSync(dir, { recursive: true, force: true }))
    Fs.symlinkSync(Path.join(pgBin!, "pg_dump"), Path.join(dir, "pg_dump"))
    Fs.writeFileSync(Path.join(dir, "pg_restore"), "#!/bin/sh\nexit 0\n", { mode: 0o755 })
    const report = await backupRestoreCheck({ databaseUrl, pgBin: dir, log: () => {} })
    expect(report.problems).toContain("table records missing from the copy")
    expect(report.proofsVerified).toBe(0)
  })

  it("a pg_dump older than the server is refused before it runs, naming the fix", async () => {
    const serverMajor = await suiteMajor()
    // A stand-in pg_dump that claims an older version than the server's.
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-old-pgdump-"))
    cleanups.push(() => Fs.rmSync(dir, { recursive: true, force: true }))
    Fs.writeFileSync(Path.join(dir, "pg_dump"), `#!/bin/sh\necho "pg_dump (PostgreSQL) ${serverMajor - 1}.0"\n`, { mode: 0o755 })
    await expect(backupRestoreCheck({ databaseUrl: await freshDatabase(), pgBin: dir, log: () => {} }))
      .rejects.toThrow(new RegExp(`PostgreSQL ${serverMajor - 1}, the server ${serverMajor}: pg_dump must be at least the server's major version`))
  })
})
