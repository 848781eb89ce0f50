/**
 * Load shedding (issue 16): `anchord start` in its own process, so its memory is its own.
 *  - 10,000 concurrent slow clients — half never finish their headers, half send a request and trickle
 *    its body — the node's memory stays bounded (HTTP_MAX_BODY_BYTES_IN_FLIGHT refuses the bytes
 *    beyond it with 503), it keeps answering others, and every slow connection is closed within
 *    HTTP_HEADERS_TIMEOUT_MS / HTTP_REQUEST_TIMEOUT_MS (checked every second).
 *  - More records waiting for their commit than INGEST_MAX_PENDING: 503 SERVICE_UNAVAILABLE with
 *    Retry-After at once, and every record answered 202 is in the database.
 */
import * as Fs from "node:fs"
import * as Net from "node:net"
import type * as ChildProcess from "node:child_process"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort } from "../../src/dev/EmbeddedPostgres.ts"
import { freshDatabase, query } from "../support/db.ts"
import { anchordJson, spawnAnchord } from "../support/process.ts"
import { sleep, waitFor } from "../support/wait.ts"

const CLIENTS = 10_000
const HEADERS_TIMEOUT_MS = 3_000
const REQUEST_TIMEOUT_MS = 6_000
const BODY_BUDGET = 8 * 1024 * 1024
const MAX_PENDING = 200
/** Peak resident memory above the node's own before the flood (what 10,000 sockets may cost, with slack). */
const MEMORY_BOUND = 256 * 1024 * 1024

const rss = (pid: number) => {
  const line = Fs.readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"))!
  return Number(line.split(/\s+/)[1]) * 1024
}

describe("load shedding", () => {
  let node: ChildProcess.ChildProcess
  let base = ""
  let port = 0
  let key = ""
  let url = ""

  beforeAll(async () => {
    url = await freshDatabase()
    const env = { DATABASE_URL: url }
    const account = anchordJson(["accounts", "create", "shedding", "--plan", "ENTERPRISE", "--rate-per-second", "1000000", "--activate", "--json"], env)
    key = anchordJson(["keys", "create", account.id, "--json"], env).key
    port = await freePort()
    node = await spawnAnchord({
      ...env,
      PORT: String(port),
      HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      HTTP_MAX_BODY_BYTES_IN_FLIGHT: String(BODY_BUDGET),
      INGEST_MAX_PENDING: String(MAX_PENDING),
      // Every client here is 127.0.0.1: the health checks below must not meet the anonymous limit.
      ANON_RATE_LIMIT_PER_SECOND: "100000",
      LOG_LEVEL: "warn"
    })
    base = `http://127.0.0.1:${port}`
  }, 60_000)

  afterAll(() => {
    node?.kill("SIGKILL")
  })

  it("10,000 slow clients: memory bounded, bytes beyond the budget refused with 503, others still served, every slow connection closed in time", async () => {
    // Warm up (the first requests compile code paths), then the baseline.
    for (let i = 0; i < 20; i++) await fetch(`${base}/v1/health`)
    const before = rss(node.pid!)
    let peak = before
    const sampler = setInterval(() => {
      peak = Math.max(peak, rss(node.pid!))
    }, 100)

    const opened = performance.now()
    const answers: Array<string> = []
    const closedAt: Array<number> = []
    const sockets: Array<Net.Socket> = []
    const trickle = Buffer.alloc(1024, 0x20)
    for (let i = 0; i < CLIENTS; i++) {
      const socket = Net.connect(port, "127.0.0.1")
      socket.setNoDelay(true)
      sockets.push(socket)
      let answer = ""
      socket.on("data", (d) => {
        answer += d.toString("latin1")
      })
      socket.on("error", () => {})
      socket.on("close", () => {
        closedAt.push(performance.now() - opened)
        answers.push(answer)
      })
      socket.on("connect", () => {
        if (i % 2 === 0) {
          // Slowloris: a request line and one header, never the end of the headers.
          socket.write(`POST /v1/anchor HTTP/1.1\r\nHost: x\r\n`)
        } else {
          // A complete request whose 1 MB body comes 4 KiB now and 1 KiB a second after.
          socket.write(`POST /v1/anchor HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
            `Content-Length: 1000000\r\n\r\n{"data":{"pad":"`)
          socket.write(Buffer.alloc(4096, 0x61))
        }
      })
      // Opening 10,000 at once would only measure the listen backlog.
      if (i % 500 === 499) await sleep(20)
    }
    const drip = setInterval(() => {
      for (let i = 1; i < sockets.length; i += 2) if (!sockets[i]!.destroyed) sockets[i]!.write(trickle)
    }, 1000)

    try {
      // While they hang on, the node serves others.
      await waitFor("every slow client connected", async () => sockets.every((s) => s.readyState !== "opening"), 30_000)
      const t = performance.now()
      const health = await fetch(`${base}/v1/health`, { signal: AbortSignal.timeout(5_000) })
      const healthMs = performance.now() - t
      expect(health.status).toBe(200)
      const accepted = await fetch(`${base}/v1/anchor`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ data: { during: "flood" } }),
        signal: AbortSignal.timeout(10_000)
      })
      expect([202, 503]).toContain(accepted.status) // 503 only if the byte budget is full at that instant
      console.log(`during the flood: health ${healthMs.toFixed(0)} ms, POST /v1/anchor ${accepted.status}`)

      // Every slow connection is closed by the node: headers within their timeout, requests within theirs
      // (plus the 1 s check interval and a loaded machine's slack).
      await waitFor("every slow connection closed by the node", async () => closedAt.length === CLIENTS, REQUEST_TIMEOUT_MS + 20_000, 250)
    } finally {
      clearInterval(drip)
      clearInterval(sampler)
      for (const s of sockets) s.destroy()
    }
    const lastClose = Math.max(...closedAt)
    const overloaded =
      answers.filter((a) => a.startsWith("HTTP/1.1 503") && /retry-after: 1\r\n/i.test(a) && a.includes("\"errorCode\":\"SERVICE_UNAVAILABLE\"")).length
    const statuses = new Map<string, number>()
    for (const a of answers) {
      const s = a.slice(0, 12) || "(closed without an answer)"
      statuses.set(s, (statuses.get(s) ?? 0) + 1)
    }
    console.log(`node RSS before ${(before / 2 ** 20).toFixed(0)} MiB, peak ${(peak / 2 ** 20).toFixed(0)} MiB; ` +
      `last slow connection closed after ${(lastClose / 1000).toFixed(1)} s; answers: ${JSON.stringify(Object.fromEntries(statuses))}`)
    expect(peak - before).toBeLessThan(MEMORY_BOUND)
    // 5,000 bodies × 4 KiB+ is more than the 8 MiB budget: the bytes beyond it were refused.
    expect(overloaded).toBeGreaterThan(0)
    // No connection lives past its bound by more than the slack.
    expect(lastClose).toBeLessThan(REQUEST_TIMEOUT_MS + 15_000)
    // And the node is still fine.
    expect((await fetch(`${base}/v1/health`)).status).toBe(200)
  }, 120_000)

  it("more records waiting for their commit than INGEST_MAX_PENDING: 503 with Retry-After at once, and every 202 is stored", async () => {
    const batch = (n: number) => JSON.stringify({ records: Array.from({ length: 100 }, (_, j) => ({ data: { shed: n, j } })) })
    const results = await Promise.all(Array.from({ length: 40 }, async (_, n) => {
      const t = performance.now()
      const r = await fetch(`${base}/v1/anchor/batch`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: batch(n) })
      return { status: r.status, ms: performance.now() - t, retryAfter: r.headers.get("retry-after"), body: await r.json() as any }
    }))
    const refused = results.filter((r) => r.status === 503)
    const accepted = results.filter((r) => r.status === 202)
    console.log(`40 batches of 100 at once, INGEST_MAX_PENDING ${MAX_PENDING}: ${accepted.length} accepted, ${refused.length} refused ` +
      `(slowest refusal ${Math.max(0, ...refused.map((r) => r.ms)).toFixed(0)} ms)`)
    expect(accepted.length + refused.length).toBe(40)
    expect(refused.length).toBeGreaterThan(0)
    for (const r of refused) {
      expect(r.retryAfter).toBe("1")
      expect(r.body).toEqual({ success: false, error: "The node is at capacity; retry shortly", errorCode: "SERVICE_UNAVAILABLE" })
    }
    const ids = accepted.flatMap((r) => r.body.data.results.map((x: any) => x.data.recordId as string))
    expect(ids).toHaveLength(accepted.length * 100)
    const stored = await query<{ n: string }>(url, "SELECT count(*)::text AS n FROM records WHERE id = ANY($1)", [ids])
    expect(Number(stored[0]!.n)).toBe(ids.length)
  }, 60_000)
})
