/**
 * Chunk rows (migration 0023): a fan-out chunk's first-attempt successes are kept in one
 * `webhook_chunk_deliveries` row per receiver, its failures in delivery rows of their own; the delivery log
 * shows one delivery per record as before (list with its filters and keyset paging, get, attempts),
 * redelivery splits an entry out first, a hard delete erases the record's entry, retention deletes chunk
 * rows whole. A real receiver on loopback; the batch confirmed as the pipeline does (support.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { query } from "../support/db.ts"
import { expectError } from "../support/expect.ts"
import { call } from "../support/node.ts"
import { confirmBatch, deliveriesSettled, type Receiver, startReceiver, startWebhookNode, waitFor, type WebhookNode } from "./support.ts"

describe("chunk rows in the delivery log", () => {
  let node: WebhookNode
  let receiver: Receiver
  let accountId: string
  let key: string
  const api = (method: string, path: string, body?: unknown) => call(node.baseUrl, method, path, { key, body })

  beforeAll(async () => {
    receiver = await startReceiver((r) => r.path === "/fail" ? 500 : 200)
    node = await startWebhookNode({ env: { WEBHOOK_RETENTION_DAYS: "1", WEBHOOK_RETENTION_SWEEP_MS: "500" } })
    accountId = await node.createAccount()
    key = await node.createKey(accountId)
  })
  afterAll(async () => {
    await node?.stop()
    await receiver?.close()
  })

  const listAll = async (params: string, limit = 100) => {
    const all: Array<any> = []
    let cursor: string | null = null
    do {
      const page = await api("GET", `/v1/webhooks/deliveries?limit=${limit}${params}${cursor === null ? "" : `&cursor=${cursor}`}`)
      expect(page.status).toBe(200)
      all.push(...page.json.data.deliveries)
      cursor = page.json.data.nextCursor
    } while (cursor !== null)
    return all
  }

  it("one delivery per record: list, filters, paging, get, redelivery, hard delete, retention", async () => {
    expect((await api("PUT", "/v1/webhooks", { url: `${receiver.url}/global`, events: ["anchor.confirmed", "record.updated"], enabled: true })).status).toBe(
      200
    )
    const post = async (webhookUrl?: string) =>
      (await api("POST", "/v1/anchor", { data: { n: Math.random() }, ...(webhookUrl === undefined ? {} : { webhookUrl }) })).json.data.recordId as string
    const global: Array<string> = []
    for (let i = 0; i < 5; i++) global.push(await post())
    const ok = [await post(`${receiver.url}/ok`), await post(`${receiver.url}/ok`), await post(`${receiver.url}/ok`)]
    const failing = [await post(`${receiver.url}/fail`), await post(`${receiver.url}/fail`)]
    // Interleaved: the two receivers' chunk rows then have interleaved seq ranges (a cursor straddles a row).
    const ids = [global[0], ok[0], global[1], ok[1], failing[0], global[2], ok[2], global[3], failing[1], global[4]]
    // A record.updated first: a delivery row older than the chunk's entries, in the same log.
    expect((await api("PATCH", `/v1/records/${global[0]}`, { metadata: { a: 1 } })).status).toBe(200)
    const { eventIds } = await confirmBatch(node.databaseUrl, ids)
    await receiver.waitFor(ids.length + 1, 15_000)
    await deliveriesSettled(node.databaseUrl, accountId)
    await waitFor("the failures on the ladder",
      async () => (await query(node.databaseUrl, "SELECT 1 FROM webhook_deliveries WHERE record_id = ANY($1) AND attempts = 1", [failing])).length === 2)

    // Storage: one chunk row per receiver with successes, a delivery row per failure, none per success.
    const chunks = await query<{ url: string; n: number; target: string }>(node.databaseUrl,
      "SELECT url, cardinality(ids) AS n, target FROM webhook_chunk_deliveries WHERE account_id = $1 ORDER BY url", [accountId])
    expect(chunks).toEqual([
      { url: `${receiver.url}/global`, n: 5, target: "account" },
      { url: `${receiver.url}/ok`, n: 3, target: "record" }
    ])
    expect(await query(node.databaseUrl, "SELECT 1 FROM webhook_deliveries WHERE record_id = ANY($1) AND batch_event_id IS NOT NULL", [[...global, ...ok]]))
      .toEqual([])

    // The list: one delivery per record, newest first, as before.
    const all = await listAll("")
    expect(all).toHaveLength(ids.length + 1)
    const confirmed = all.filter((d) => d.event === "anchor.confirmed")
    expect(new Set(confirmed.map((d) => d.recordId))).toEqual(new Set(ids))
    expect(new Set(all.map((d) => d.id)).size).toBe(all.length)
    expect(all[all.length - 1]).toMatchObject({ event: "record.updated", recordId: global[0] })
    for (const d of confirmed.filter((x) => !failing.includes(x.recordId))) {
      expect(d).toMatchObject({
        id: expect.stringMatching(/^dlv_[0-9a-f]{32}$/),
        eventId: eventIds.get(d.recordId),
        status: "SUCCEEDED",
        round: 0,
        nextAttempt: null,
        nextAttemptAt: null,
        lastStatusCode: 200,
        lastError: null,
        target: global.includes(d.recordId) ? "account" : "record",
        url: global.includes(d.recordId) ? `${receiver.url}/global` : `${receiver.url}/ok`
      })
      // The times read in order: begun (the first attempt's start at the latest), then delivered.
      expect(Date.parse(d.createdAt)).toBeLessThanOrEqual(Date.parse(d.attempts[0].startedAt))
      expect(Date.parse(d.deliveredAt)).toBeGreaterThanOrEqual(Date.parse(d.createdAt))
      expect(d.attempts).toEqual([{ attempt: 0, round: 0, startedAt: expect.any(String), statusCode: 200, latencyMs: expect.any(Number), error: null,
        retryInMs: null }])
    }
    for (const d of confirmed.filter((x) => failing.includes(x.recordId))) {
      expect(d).toMatchObject({ status: "PENDING", nextAttempt: 1, lastStatusCode: 500 })
      expect(d.attempts).toEqual([expect.objectContaining({ attempt: 0, round: 0, statusCode: 500, retryInMs: expect.any(Number) })])
    }
    // Keyset paging by seq gives the same deliveries in the same order, whatever the page size.
    for (const limit of [1, 2, 3, 4]) expect((await listAll("", limit)).map((d) => d.id)).toEqual(all.map((d) => d.id))

    // Filters: by record, by event, by state.
    const entry = confirmed.find((d) => d.recordId === ok[1])!
    expect((await listAll(`&recordId=${ok[1]}`)).map((d) => d.id)).toEqual([entry.id])
    expect((await listAll(`&eventId=${entry.eventId}`)).map((d) => d.id)).toEqual([entry.id])
    expect((await listAll(`&recordId=${global[0]}`)).map((d) => d.event)).toEqual(["anchor.confirmed", "record.updated"])
    expect(await listAll(`&recordId=${global[0]}&eventId=${entry.eventId}`)).toEqual([])
    expect((await listAll("&status=SUCCEEDED")).map((d) => d.id)).toEqual(all.filter((d) => d.status === "SUCCEEDED").map((d) => d.id))
    expect((await listAll("&status=PENDING")).map((d) => d.recordId).sort()).toEqual([...failing].sort())
    expect((await listAll("&status=SUCCEEDED", 2)).map((d) => d.id)).toEqual(all.filter((d) => d.status === "SUCCEEDED").map((d) => d.id))

    // Get by id: the same delivery, attempts and all.
    const got = await api("GET", `/v1/webhooks/deliveries/${entry.id}`)
    expect(got.status).toBe(200)
    expect(got.json.data).toEqual(entry)
    // Another environment's key sees none of it.
    const liveKey = await node.createKey(accountId, "live")
    expectError(await call(node.baseUrl, "GET", `/v1/webhooks/deliveries/${entry.id}`, { key: liveKey }), 404, "NOT_FOUND")
    expect((await call(node.baseUrl, "GET", `/v1/webhooks/deliveries?recordId=${ok[1]}`, { key: liveKey })).json.data.deliveries).toEqual([])

    // Redelivery: the entry is split out (same id, same place in the list), its success moves to the attempt log.
    const before = receiver.received.length
    const redelivered = await api("POST", `/v1/webhooks/deliveries/${entry.id}/redeliver`, {})
    expect(redelivered.status).toBe(202)
    await receiver.waitFor(before + 1, 10_000)
    expect(receiver.received.slice(before).map((r) => r.headers["x-service-event-id"])).toEqual([entry.eventId])
    await deliveriesSettled(node.databaseUrl, accountId)
    const after = (await api("GET", `/v1/webhooks/deliveries/${entry.id}`)).json.data
    expect(after).toMatchObject({ id: entry.id, eventId: entry.eventId, status: "SUCCEEDED", round: 1, lastStatusCode: 200 })
    expect(after.attempts.map((a: any) => [a.round, a.attempt, a.statusCode])).toEqual([[0, 0, 200], [1, 0, 200]])
    expect(after.attempts[0].startedAt).toBe(entry.attempts[0].startedAt)
    expect(
      (await query<{ n: number }>(node.databaseUrl, "SELECT cardinality(ids) AS n FROM webhook_chunk_deliveries WHERE account_id = $1 AND target = 'record'", [
        accountId
      ]))[0].n
    ).toBe(2)
    expect((await listAll("")).map((d) => d.id)).toEqual(all.map((d) => d.id))

    // A hard delete: the record's entry leaves its chunk row and is erased as any delivery (URL cut, no redelivery).
    const erased = confirmed.find((d) => d.recordId === ok[2])!
    expect((await api("DELETE", `/v1/records/${ok[2]}?mode=hard`)).status).toBe(200)
    const gone = (await api("GET", `/v1/webhooks/deliveries/${erased.id}`)).json.data
    expect(gone).toMatchObject({ id: erased.id, status: "SUCCEEDED", url: receiver.url, attempts: erased.attempts })
    expectError(await api("POST", `/v1/webhooks/deliveries/${erased.id}/redeliver`, {}), 404, "NOT_FOUND")
    expect(await query(node.databaseUrl, "SELECT 1 FROM webhook_chunk_deliveries WHERE $1 = ANY (record_ids)", [ok[2]])).toEqual([])

    // Retention: a chunk row past it goes whole, its entries with it.
    const globalIds = confirmed.filter((d) => global.includes(d.recordId)).map((d) => d.id)
    await query(node.databaseUrl, "UPDATE webhook_chunk_deliveries SET delivered_at = now() - interval '2 days' WHERE account_id = $1 AND target = 'account'", [
      accountId
    ])
    await waitFor("the old chunk row purged",
      async () =>
        (await query(node.databaseUrl, "SELECT 1 FROM webhook_chunk_deliveries WHERE account_id = $1 AND target = 'account'", [accountId])).length === 0,
      10_000)
    const left = await listAll("")
    expect(left.filter((d) => globalIds.includes(d.id))).toEqual([])
    // (the hard delete's own record.deleted added one)
    expect(left).toHaveLength(all.length - 5 + 1)
    expectError(await api("GET", `/v1/webhooks/deliveries/${globalIds[0]}`), 404, "NOT_FOUND")
  }, 60_000)
})
