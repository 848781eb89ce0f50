/**
 * Batched delivery (docs/webhooks.md, "Batched delivery"): an environment that opts in gets its events in
 * requests of up to maxEvents, one kind per request, each event's own body spliced in unchanged; one
 * signature over the whole body in both schemes (checked here with node:crypto and the npm
 * `standardwebhooks` library); a 2xx naming events in `failedEventIds` retries only those, each on its own
 * ladder; a non-2xx retries every event of the request. The request log lists each request once with its
 * events, and a whole request or one event of it can be sent again.
 */
import { Webhook } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { query } from "../support/db.ts"
import { expectError } from "../support/expect.ts"
import { call } from "../support/node.ts"
import { confirmBatch, deliveryRow, type Received, type Receiver, startReceiver, startWebhookNode, verifySignature, waitFor,
  type WebhookNode } from "./support.ts"

interface Entry {
  eventId: string
  event: string
  hash: string
  chain: string
  network: string
  attempt: number
  payload: { type: string; recordId: string; hash: string }
}

const entriesOf = (r: Received): Array<Entry> => JSON.parse(r.body).events

describe("batched webhook delivery", () => {
  let node: WebhookNode
  let receiver: Receiver
  let key: string
  let secret: string
  const api = (method: string, path: string, body?: unknown) => call(node.baseUrl, method, path, { key, body })

  beforeAll(async () => {
    receiver = await startReceiver()
    // 6 ms before a retry (the ladder × 0.0001): retries here come at once.
    node = await startWebhookNode({ env: { WEBHOOK_RETRY_SCALE: "0.0001", WEBHOOK_POLL_MS: "200" } })
    const accountId = await node.createAccount()
    key = await node.createKey(accountId)
    secret = await node.secretOf(accountId)
  })
  afterAll(async () => {
    await node?.stop()
    await receiver?.close()
  })

  const postRecords = async (n: number, tag: string): Promise<Array<string>> => {
    const r = await api("POST", "/v1/anchor/batch", { records: Array.from({ length: n }, (_, i) => ({ data: { tag, i } })) })
    expect(r.status).toBe(202)
    return r.json.data.results.map((x: any) => x.data.recordId as string)
  }

  it("the settings take a delivery mode, checked; single by default", async () => {
    const before = await api("GET", "/v1/webhooks")
    expect(before.json.data.delivery).toEqual({ mode: "single", maxEvents: 100, maxWaitMs: 0 })
    expectError(await api("PUT", "/v1/webhooks", { delivery: { mode: "bulk" } }), 400, "VALIDATION_ERROR", /mode/)
    expectError(await api("PUT", "/v1/webhooks", { delivery: { mode: "batch", maxEvents: 0 } }), 400, "VALIDATION_ERROR", /maxEvents/)
    expectError(await api("PUT", "/v1/webhooks", { delivery: { mode: "batch", maxEvents: 1001 } }), 400, "VALIDATION_ERROR", /maxEvents/)
    expectError(await api("PUT", "/v1/webhooks", { delivery: { maxWaitMs: 10_001 } }), 400, "VALIDATION_ERROR", /maxWaitMs/)
    expectError(await api("PUT", "/v1/webhooks", { delivery: { mode: "batch", maxEvents: 2.5 } }), 400, "VALIDATION_ERROR", /maxEvents/)
    // refused bodies changed nothing
    expect((await api("GET", "/v1/webhooks")).json.data.delivery).toEqual({ mode: "single", maxEvents: 100, maxWaitMs: 0 })
    const put = await api("PUT", "/v1/webhooks", { url: `${receiver.url}/batched`, enabled: true, events: ["anchor.confirmed"],
      delivery: { mode: "batch", maxEvents: 40 } })
    expect(put.status).toBe(200)
    expect(put.json.data.delivery).toEqual({ mode: "batch", maxEvents: 40, maxWaitMs: 0 })
    // members left out keep their value
    const again = await api("PUT", "/v1/webhooks", { delivery: { maxWaitMs: 0 } })
    expect(again.json.data.delivery).toEqual({ mode: "batch", maxEvents: 40, maxWaitMs: 0 })
  })

  it("events arrive in batches, signed as a whole; a 2xx naming events retries only those", async () => {
    let failedOnce: Array<string> = []
    receiver.reply = (request, index) => {
      if (index !== 0) return 200
      // The first request: three of its events not taken.
      failedOnce = entriesOf(request).slice(0, 3).map((e) => e.eventId)
      return { status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify({ failedEventIds: [...failedOnce, "evt_notinthisrequest"] }) }
    }
    const ids = await postRecords(100, "partial")
    const { eventIds } = await confirmBatch(node.databaseUrl, ids)
    const expected = new Set(eventIds.values())
    const seen = async () => receiver.received.flatMap(entriesOf).map((e) => e.eventId)
    await waitFor("every event, and the three named ones again", async () => {
      const all = await seen()
      return new Set(all).size === 100 && all.length === 103 ? all : undefined
    }, 30_000)
    const all = await seen()
    expect(new Set(all)).toEqual(expected)
    for (const id of expected) expect(all.filter((x) => x === id).length).toBe(failedOnce.includes(id) ? 2 : 1)

    for (const r of receiver.received) {
      const entries = entriesOf(r)
      expect(entries.length).toBeGreaterThanOrEqual(1)
      expect(entries.length).toBeLessThanOrEqual(40)
      expect(r.headers["x-service-event"]).toBe("ANCHORED")
      expect(r.headers["x-service-event-count"]).toBe(String(entries.length))
      expect(r.headers["x-service-batch-id"]).toMatch(/^whb_[0-9a-f]{32}$/)
      expect(r.headers["webhook-id"]).toBe(r.headers["x-service-batch-id"])
      expect(r.headers["x-service-chain"]).toBe("evm")
      expect(r.headers["x-service-event-id"]).toBeUndefined()
      // one signature over the raw body, both schemes
      expect(verifySignature(secret, r.body, r.headers["x-webhook-signature"])).toBe(true)
      expect(new Webhook(secret).verify(r.body, r.headers as Record<string, string>)).toEqual(JSON.parse(r.body))
      for (const e of entries) {
        expect(e.event).toBe("ANCHORED")
        expect(e.payload.type).toBe("ANCHORED")
        expect(ids).toContain(e.payload.recordId)
        expect(e.payload.hash).toBe(e.hash)
      }
    }
    // Record order inside a request: the batch's order, as one-by-one deliveries go out.
    const first = entriesOf(receiver.received[0]!).map((e) => e.payload.recordId)
    expect(first).toEqual(ids.filter((id) => first.includes(id)))

    // The named events: retried each on its own ladder (attempt 1), their stored bodies spliced in byte for byte.
    const retried = receiver.received.slice(1).filter((r) => entriesOf(r).some((e) => failedOnce.includes(e.eventId)))
    expect(retried.length).toBeGreaterThanOrEqual(1)
    for (const r of retried) for (const e of entriesOf(r).filter((x) => failedOnce.includes(x.eventId))) expect(e.attempt).toBe(1)
    for (const eventId of failedOnce) {
      await waitFor(`${eventId} SUCCEEDED`, async () => (await deliveryRow(node.databaseUrl, { eventId }))?.state === "SUCCEEDED", 10_000)
      const [{ body }] = await query<{ body: string }>(node.databaseUrl, "SELECT body FROM webhook_deliveries WHERE event_id = $1", [eventId])
      expect(receiver.received[0]!.body).toContain(`"payload":${body}}`)
    }
  })

  it("a non-2xx retries every event of the request", async () => {
    const start = receiver.received.length
    let failedRequest: Array<string> = []
    receiver.reply = (request, index) => {
      if (index !== start) return 200
      failedRequest = entriesOf(request).map((e) => e.eventId)
      return 503
    }
    const ids = await postRecords(30, "whole")
    const { eventIds } = await confirmBatch(node.databaseUrl, ids)
    const mine = new Set(eventIds.values())
    const seen = () => receiver.received.slice(start).flatMap(entriesOf).map((e) => e.eventId)
    await waitFor("every event of the refused request again", async () => {
      const all = seen()
      return failedRequest.length > 0 && new Set(all).size === 30 && failedRequest.every((id) => all.filter((x) => x === id).length === 2)
    }, 30_000)
    expect(new Set(seen())).toEqual(mine)
    for (const id of mine) expect(seen().filter((x) => x === id).length).toBe(failedRequest.includes(id) ? 2 : 1)
  })
  it("the request log: each request once with its events and answer; a whole request and one event sent again", async () => {
    receiver.reply = () => 200
    const ids = await postRecords(12, "log")
    const start = receiver.received.length
    const { eventIds } = await confirmBatch(node.databaseUrl, ids)
    const mine = [...eventIds.values()]
    const [sent] = (await receiver.waitFor(start + 1, 15_000)).slice(start)
    expect(entriesOf(sent!).length).toBe(12)
    const batchId = sent!.headers["x-service-batch-id"]!

    // Found by any record it carried, once, with its events in order and the receiver's answer.
    const byRecord = await api("GET", `/v1/webhooks/requests?recordId=${ids[7]}`)
    expect(byRecord.status).toBe(200)
    expect(byRecord.json.data.requests.length).toBe(1)
    const [request] = byRecord.json.data.requests
    expect(request).toMatchObject({ id: batchId, event: "anchor.confirmed", url: `${receiver.url}/batched`, statusCode: 200, error: null, eventCount: 12 })
    expect(request.events.map((e: any) => e.eventId)).toEqual(entriesOf(sent!).map((e) => e.eventId))
    expect(request.events.map((e: any) => e.recordId)).toEqual(ids)
    expect(request.events.every((e: any) => e.taken)).toBe(true)

    // One row per HTTP request the receiver got, newest first, paged.
    const all: Array<any> = []
    for (let cursor: string | null = null;;) {
      const page: any = await api("GET", `/v1/webhooks/requests?limit=3${cursor === null ? "" : `&cursor=${cursor}`}`)
      all.push(...page.json.data.requests)
      cursor = page.json.data.nextCursor
      if (cursor === null) break
    }
    expect(all.length).toBe(receiver.received.length)
    // (requests sent at once are logged in the order their answers came)
    expect(all.map((r) => r.id).sort()).toEqual(receiver.received.map((r) => r.headers["x-service-batch-id"]).sort())
    // The first test's partial answer: the three named events not taken, then sent again in a request of their own.
    const partial = all.find((r) => r.statusCode === 200 && r.events.some((e: any) => !e.taken))
    expect(partial.events.filter((e: any) => !e.taken).length).toBe(3)
    const named = partial.events.find((e: any) => !e.taken).eventId
    expect((await api("GET", `/v1/webhooks/requests?eventId=${named}`)).json.data.requests.length).toBe(2)
    // The refused request (503): by its id, none of its events taken; each of them found again in the request that took it.
    const refused = all.find((r) => r.statusCode === 503)
    const attempts = await api("GET", `/v1/webhooks/requests/${refused.id}`)
    expect(attempts.status).toBe(200)
    expect(attempts.json.data.requests.at(-1).statusCode).toBe(503)
    expect(attempts.json.data.requests.at(-1).events.every((e: any) => !e.taken)).toBe(true)
    const retried = (await api("GET", `/v1/webhooks/requests?eventId=${refused.events[0].eventId}`)).json.data.requests
    expect(retried.map((r: any) => r.statusCode)).toEqual([200, 503])
    expect(retried[0].events.find((e: any) => e.eventId === refused.events[0].eventId).taken).toBe(true)

    // The whole request again: every event of it, once more.
    const again = await api("POST", `/v1/webhooks/requests/${batchId}/redeliver`, {})
    expect(again.status).toBe(202)
    expect(again.json.data.deliveries.map((d: any) => d.eventId).sort()).toEqual([...mine].sort())
    expect(again.json.data.deliveries.every((d: any) => d.status === "PENDING" && d.round === 1)).toBe(true)
    const resent = () => receiver.received.slice(start + 1).flatMap(entriesOf).map((e) => e.eventId)
    await waitFor("the request's events again", async () => new Set(resent()).size === 12 || undefined, 15_000)
    expect(resent().sort()).toEqual([...mine].sort())
    // One event of it alone: its delivery redelivered, a request of one.
    const one = again.json.data.deliveries[4]
    const before = receiver.received.length
    expect((await api("POST", `/v1/webhooks/deliveries/${one.id}/redeliver`, {})).status).toBe(202)
    const [single] = (await receiver.waitFor(before + 1, 15_000)).slice(before)
    expect(entriesOf(single!).map((e) => e.eventId)).toEqual([one.eventId])

    // Refusals in the documented body, nothing changed.
    expectError(await api("GET", `/v1/webhooks/requests/whb_${"0".repeat(32)}`), 404, "NOT_FOUND", /No webhook request/)
    expectError(await api("POST", `/v1/webhooks/requests/whb_${"0".repeat(32)}/redeliver`, {}), 404, "NOT_FOUND", /No webhook request/)
    expectError(await api("GET", "/v1/webhooks/requests/dlv_123"), 400, "VALIDATION_ERROR", /requestId/)
    expectError(await api("GET", "/v1/webhooks/requests?cursor=bm90LWEtY3Vyc29y"), 400, "VALIDATION_ERROR", /cursor/)
  })

  it("maxWaitMs: events committed apart go out in one request, held at most that long; a full batch goes at once", async () => {
    receiver.reply = () => 200
    const put = await api("PUT", "/v1/webhooks", { events: ["anchor.confirmed", "record.deleted"], delivery: { maxEvents: 25, maxWaitMs: 1500 } })
    expect(put.json.data.delivery).toEqual({ mode: "batch", maxEvents: 25, maxWaitMs: 1500 })
    const ids = await postRecords(45, "held")
    const deleteEvents = (part: Array<string>) =>
      query(node.databaseUrl, `
        INSERT INTO events (event_id, account_id, record_id, kind, payload)
        SELECT 'evt_' || substr(md5(id || random()::text), 1, 24), account_id, id, 'record.deleted',
          jsonb_build_object('recordId', id, 'hash', hash, 'status', status, 'mode', 'soft')
        FROM records WHERE id = ANY($1) ORDER BY id`, [part])
    const start = receiver.received.length
    const t0 = performance.now()
    // three commits of 5, 300 ms apart: one request of 15 once the first has waited 1.5 s
    for (const k of [0, 1, 2]) {
      await deleteEvents(ids.slice(5 * k, 5 * k + 5))
      if (k < 2) await new Promise((r) => setTimeout(r, 300))
    }
    const [held] = await receiver.waitFor(start + 1, 10_000).then((all) => all.slice(start))
    expect(entriesOf(held!).length).toBe(15)
    expect(held!.at - t0).toBeGreaterThanOrEqual(1_400)
    // 30 in one commit: a full request of 25 goes at once, the other 5 once they have waited 1.5 s
    const next = receiver.received.length
    const t1 = performance.now()
    await deleteEvents(ids.slice(15, 45))
    const [full, rest] = (await receiver.waitFor(next + 2, 10_000)).slice(next)
    expect(entriesOf(full!).length).toBe(25)
    expect(full!.at - t1).toBeLessThan(1_400)
    expect(entriesOf(rest!).length).toBe(5)
    expect(rest!.at - t1).toBeGreaterThanOrEqual(1_400)
  })
})
