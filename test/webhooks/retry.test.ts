/**
 * The retry ladder (attempt 0 at once, then 1 min, 5 min, 30 min, 2 h, 24 h), compressed by
 * WEBHOOK_RETRY_SCALE = 0.0001 (6 ms, 30 ms, 180 ms, 720 ms, 8.64 s); timeouts (WEBHOOK_TIMEOUT_MS
 * = 400 here) and redirects count as failures; after attempt 5 the delivery is FAILED and kept.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { webhookRetryDelaysMillis } from "../../src/webhooks/schedule.ts"
import { query } from "../support/db.ts"
import { call } from "../support/node.ts"
import { deliveryRow, type Received, type Receiver, startReceiver, startWebhookNode, verifySignature, waitFor, type WebhookNode } from "./support.ts"

const SCALE = 0.0001
const TIMEOUT = 400

describe("webhook retries", () => {
  let node: WebhookNode
  let receiver: Receiver
  let key: string
  let secret: string
  const api = (method: string, path: string, body?: unknown) => call(node.baseUrl, method, path, { key, body })

  const logged: Array<string> = []
  beforeAll(async () => {
    for (const method of ["log", "info", "warn", "error", "debug"] as const) {
      const original = console[method].bind(console)
      vi.spyOn(console, method).mockImplementation((...args: Array<unknown>) => {
        logged.push(args.map((a) => typeof a === "string" ? a : JSON.stringify(a)).join(" "))
        original(...args)
      })
    }
    // per path: which attempts (by arrival order on that path) fail, and how
    const plans: Record<string, Array<"500" | "302" | "hang" | "200" | "503" | "404">> = {
      "/recovering": ["500", "302", "503", "hang", "404", "200"],
      "/down": ["500", "500", "500", "500", "500", "500", "200"],
      "/hang-once": ["hang", "200"]
    }
    const seen = new Map<string, number>()
    receiver = await startReceiver((r: Received) => {
      const n = seen.get(r.path) ?? 0
      seen.set(r.path, n + 1)
      const step = plans[r.path]?.[n] ?? "200"
      if (step === "hang") return "hang"
      if (step === "302") return { status: 302, headers: { location: `/redirected` } }
      return Number(step)
    })
    node = await startWebhookNode({
      env: { WEBHOOK_RETRY_SCALE: String(SCALE), WEBHOOK_TIMEOUT_MS: String(TIMEOUT), WEBHOOK_POLL_MS: "1000" }
    })
    const account = await node.createAccount()
    key = await node.createKey(account)
    secret = await node.secretOf(account)
  })
  afterAll(async () => {
    await node?.stop()
    await receiver?.close()
  })

  it("a failing receiver that recovers: attempts 0..5 in order, delays in the ladder's ratios, the same event and signature each time", async () => {
    const recovering = (await api("POST", "/v1/anchor", { data: { r: 1 }, webhookUrl: `${receiver.url}/recovering` })).json.data
    const down = (await api("POST", "/v1/anchor", { data: { r: 2 }, webhookUrl: `${receiver.url}/down` })).json.data
    await Promise.all([
      api("PATCH", `/v1/records/${recovering.recordId}`, { metadata: { v: 1 } }),
      api("PATCH", `/v1/records/${down.recordId}`, { metadata: { v: 1 } })
    ])
    const got = await receiver.waitFor(6, 25_000, (r) => r.path === "/recovering")
    expect(got.map((r) => r.headers["x-service-retry-attempt"])).toEqual(["0", "1", "2", "3", "4", "5"])
    expect(new Set(got.map((r) => r.headers["x-service-event-id"])).size).toBe(1)
    expect(new Set(got.map((r) => r.headers["x-webhook-signature"])).size).toBe(1)
    expect(new Set(got.map((r) => r.body)).size).toBe(1)
    for (const r of got) expect(verifySignature(secret, r.body, r.headers["x-webhook-signature"])).toBe(true)
    // the redirect was not followed
    expect(receiver.received.filter((r) => r.path === "/redirected")).toEqual([])

    // the last answer (200) is recorded just after the receiver has the request
    await waitFor("the recovering delivery's outcome recorded",
      async () => (await deliveryRow(node.databaseUrl, { recordId: recovering.recordId }))?.state !== "PENDING")
    const log = (await api("GET", `/v1/webhooks/deliveries?recordId=${recovering.recordId}`)).json.data.deliveries
    expect(log).toHaveLength(1)
    expect(log[0].status).toBe("SUCCEEDED")
    expect(log[0].attempts.map((a: any) => [a.attempt, a.statusCode])).toEqual([[0, 500], [1, 302], [2, 503], [3, null], [4, 404], [5, 200]])
    expect(log[0].attempts[1].error).toMatch(/HTTP 302.*redirects are not followed/)
    expect(log[0].attempts[3].error).toBe(`timeout after ${TIMEOUT} ms`)
    expect(log[0].attempts[3].latencyMs).toBeGreaterThanOrEqual(TIMEOUT - 5)
    expect(log[0].attempts[0].error).toBe("HTTP 500")

    // The schedule the database applied: the seed's ladder, scaled — so exactly its ratios 1 : 5 : 30 : 120 : 1440.
    const planned = log[0].attempts.map((a: any) => a.retryInMs)
    expect(planned).toEqual([...webhookRetryDelaysMillis.map((d) => Math.round(d * SCALE)), null])
    expect(planned.slice(1, 5).map((d: number, i: number) => d / planned[i])).toEqual([5, 6, 4, 12])
    // When the node sent them (its attempt log): each attempt starts at least the planned delay after the
    // end of the failed one (delays count from the end of the failed attempt; 2 ms for rounding to ms).
    const started = log[0].attempts.map((a: any) => Date.parse(a.startedAt))
    for (let i = 0; i < 5; i++) {
      const end = started[i] + log[0].attempts[i].latencyMs
      expect(started[i + 1] - end, `delay before attempt ${i + 1}`).toBeGreaterThanOrEqual(planned[i] - 2)
    }
    // What the receiver saw: each gap at least the planned delay (attempt 3 hung for the timeout first;
    // its timer starts before the request reaches the receiver, by more on a loaded machine, so that gap is
    // checked on the node's log above only), and at most that plus noise. The upper bound is generous
    // (a loaded 2-core machine): it rules out a retry left to the lease (60 s) rather than the ladder.
    const gaps = got.slice(1).map((r, i) => r.at - got[i].at)
    const expected = planned.slice(0, 5).map((d: number, i: number) => d + (i === 3 ? TIMEOUT : 0))
    for (let i = 0; i < 5; i++) {
      if (i !== 3) expect(gaps[i], `gap before attempt ${i + 1}`).toBeGreaterThanOrEqual(expected[i] - 3)
      expect(gaps[i], `gap before attempt ${i + 1}`).toBeLessThan(expected[i] + 3_000)
    }
    // and the measured gaps follow the ladder's order of magnitude where it dominates the noise (12 on a
    // quiet machine; > 3 holds for up to ~2 s of noise on the shorter gap)
    expect(gaps[4] / (gaps[3] - TIMEOUT)).toBeGreaterThan(3)

    // the receiver that never recovers: six attempts, then FAILED and kept
    const downGot = await receiver.waitFor(6, 15_000, (r) => r.path === "/down")
    expect(downGot.map((r) => r.headers["x-service-retry-attempt"])).toEqual(["0", "1", "2", "3", "4", "5"])
    await waitFor("the down delivery's last outcome recorded",
      async () => (await deliveryRow(node.databaseUrl, { recordId: down.recordId }))?.state !== "PENDING")
    const failed = (await api("GET", `/v1/webhooks/deliveries?recordId=${down.recordId}&status=FAILED`)).json.data.deliveries
    expect(failed).toHaveLength(1)
    expect(failed[0]).toMatchObject({ status: "FAILED", nextAttempt: null, nextAttemptAt: null, lastStatusCode: 500 })
    expect(failed[0].attempts).toHaveLength(6)
    // No seventh attempt: a delivery made after the FAILED one is sent (the dispatcher has claimed what
    // was due since), and /down still has its six.
    const probe = (await api("POST", "/v1/anchor", { data: { probe: 1 }, webhookUrl: `${receiver.url}/probe` })).json.data
    await api("PATCH", `/v1/records/${probe.recordId}`, { metadata: { v: 1 } })
    await receiver.waitFor(1, 10_000, (r) => r.path === "/probe")
    expect(receiver.received.filter((r) => r.path === "/down")).toHaveLength(6)

    // one structured log line per failed attempt, naming the delivery; no secret, no URL path
    const lines = logged.filter((l) => l.includes("webhook delivery failed") && l.includes(failed[0].id))
    expect(lines).toHaveLength(6)
    expect(lines.at(-1)).toMatch(/failed: no attempts left/)
    expect(logged.join("\n")).not.toContain("whsec_")
    expect(lines.join("\n")).not.toContain("/down")

    // manual redelivery: a new round from attempt 0, now answered 200
    const re = await api("POST", `/v1/webhooks/deliveries/${failed[0].id}/redeliver`, {})
    expect(re.status).toBe(202)
    const [again] = (await receiver.waitFor(7, 15_000, (r) => r.path === "/down")).slice(6)
    expect(again.headers["x-service-retry-attempt"]).toBe("0")
    expect(again.headers["x-service-event-id"]).toBe(downGot[0].headers["x-service-event-id"])
    await waitFor("the redelivery's outcome recorded", async () => (await deliveryRow(node.databaseUrl, { id: failed[0].id }))?.state !== "PENDING")
    const row = await query<{ state: string; round: number }>(node.databaseUrl, "SELECT state, round FROM webhook_deliveries WHERE id = $1", [failed[0].id])
    expect(row[0]).toEqual({ state: "SUCCEEDED", round: 1 })
    // The log keeps every round: the six failures and the redelivery's success (a success is kept on its
    // delivery row, not in webhook_attempts) ...
    const roundsOf = async () =>
      (await api("GET", `/v1/webhooks/deliveries?recordId=${down.recordId}`)).json.data.deliveries[0]
        .attempts.map((a: any) => [a.round, a.attempt, a.statusCode, a.error])
    const failures = [0, 1, 2, 3, 4, 5].map((n) => [0, n, 500, "HTTP 500"])
    expect(await roundsOf()).toEqual([...failures, [1, 0, 200, null]])
    // ... and a second redelivery moves that success into the attempt log before its own round starts.
    expect((await api("POST", `/v1/webhooks/deliveries/${failed[0].id}/redeliver`, {})).status).toBe(202)
    await receiver.waitFor(8, 15_000, (r) => r.path === "/down")
    await waitFor("the second redelivery's outcome recorded", async () => {
      const d = await query<{ state: string; round: number }>(node.databaseUrl, "SELECT state, round FROM webhook_deliveries WHERE id = $1", [failed[0].id])
      return d[0]?.round === 2 && d[0]?.state === "SUCCEEDED"
    })
    expect(await roundsOf()).toEqual([...failures, [1, 0, 200, null], [2, 0, 200, null]])
  }, 60_000)

  it("a receiver that hangs: the timeout counts as a failure and the next attempt follows", async () => {
    const rec = (await api("POST", "/v1/anchor", { data: { h: 1 }, webhookUrl: `${receiver.url}/hang-once` })).json.data
    await api("DELETE", `/v1/records/${rec.recordId}`)
    const got = await receiver.waitFor(2, 15_000, (r) => r.path === "/hang-once")
    expect(got.map((r) => r.headers["x-service-retry-attempt"])).toEqual(["0", "1"])
    await waitFor("the second attempt's outcome recorded", async () => (await deliveryRow(node.databaseUrl, { recordId: rec.recordId }))?.state !== "PENDING")
    const log = (await api("GET", `/v1/webhooks/deliveries?recordId=${rec.recordId}`)).json.data.deliveries[0]
    expect(log.attempts.map((a: any) => a.error)).toEqual([`timeout after ${TIMEOUT} ms`, null])
    // the next attempt came the timeout plus the first delay after the first one started (the node's own
    // times: the receiver sees the hung request some time after the node's timer started, more so under load)
    expect(Date.parse(log.attempts[1].startedAt) - Date.parse(log.attempts[0].startedAt))
      .toBeGreaterThanOrEqual(TIMEOUT + webhookRetryDelaysMillis[0] * SCALE - 2)
  })
})
