/**
 * Webhook deliveries end to end: a real receiver on loopback verifies every signature with
 * node:crypto and checks every header; events come from PATCH / DELETE and from anchoring
 * (inserted as the EVM pipeline does: status change + outbox row in one transaction).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { query } from "../support/db.ts"
import { expectError } from "../support/expect.ts"
import { call } from "../support/node.ts"
import { confirmAnchor, deliveryRow, expectDeliveryHeaders, type Receiver, startReceiver, startWebhookNode, verifyInnerSignature, verifySignature, waitFor,
  type WebhookNode } from "./support.ts"

// Fabric and hybrid records are refused on a node no Fabric network serves (CHAIN_NOT_CONFIGURED);
// naming one here, served by no node of this test, keeps them accepted and QUEUED, as this file needs.
process.env.FABRIC_TEST_NETWORK_ID = "fabric-unserved"
process.env.FABRIC_LIVE_NETWORK_ID = "fabric-unserved"

const POLL_MS = 60_000

describe("webhook delivery", () => {
  let node: WebhookNode
  let receiver: Receiver
  let accountId: string
  let key: string
  let secret: string
  const api = (method: string, path: string, body?: unknown) => call(node.baseUrl, method, path, { key, body })

  beforeAll(async () => {
    receiver = await startReceiver()
    // The polling fallback far longer than any wait here: whatever is delivered promptly was woken by NOTIFY.
    node = await startWebhookNode({ env: { WEBHOOK_POLL_MS: String(POLL_MS) } })
    accountId = await node.createAccount()
    key = await node.createKey(accountId)
    secret = await node.secretOf(accountId)
  })
  afterAll(async () => {
    await node?.stop()
    await receiver?.close()
  })

  const eventsOf = (recordId: string) =>
    query<{ event_id: string; kind: string }>(node.databaseUrl, "SELECT event_id, kind FROM all_events WHERE record_id = $1 ORDER BY id", [recordId])

  it("record.updated and record.deleted from PATCH / DELETE reach the record's webhookUrl, form A, signed", async () => {
    const url = `${receiver.url}/per-record?x=1`
    const rec = (await api("POST", "/v1/anchor", { data: { n: 1 }, webhookUrl: url, packageMode: "IN_PLACE" })).json.data
    // Members in an order jsonb would change (it sorts shorter keys first): the receiver gets the client's.
    const patched = await api("PATCH", `/v1/records/${rec.recordId}`, { metadata: { my_key: "v", z: { yy: 1, b: 2 } } })
    expect(patched.status).toBe(200)
    const [updated] = await receiver.waitFor(1, 10_000, (r) => r.path === "/per-record?x=1")
    const events = await eventsOf(rec.recordId)
    expectDeliveryHeaders(updated, {
      event: "UPDATED",
      hash: rec.hash,
      packageMode: "IN_PLACE",
      chain: "evm",
      network: "hardhat-local",
      attempt: 0,
      eventId: events[0].event_id
    })
    expect(verifySignature(secret, updated.body, updated.headers["x-webhook-signature"])).toBe(true)
    expect(verifySignature(secret + "x", updated.body, updated.headers["x-webhook-signature"])).toBe(false)
    expect(updated.headers["x-webhook-signature-next"]).toBeUndefined()
    const body = JSON.parse(updated.body)
    expect(Object.keys(body)).toEqual(["event", "timestamp", "data", "signature"])
    expect(body.event).toBe("record.updated")
    expect(body.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    // the client's own metadata keys arrive untouched (no name transform)
    expect(body.data).toEqual({
      recordId: rec.recordId,
      hash: rec.hash,
      txHash: null,
      blockNumber: null,
      status: "QUEUED",
      changes: { metadata: { my_key: "v", z: { yy: 1, b: 2 } } }
    })
    expect(updated.body).toContain("\"changes\":{\"metadata\":{\"my_key\":\"v\",\"z\":{\"yy\":1,\"b\":2}}}")
    expect(verifyInnerSignature(secret, updated.body)).toBe(true)

    expect((await api("DELETE", `/v1/records/${rec.recordId}?mode=hard`)).status).toBe(200)
    const [, deleted] = await receiver.waitFor(2, 10_000, (r) => r.path === "/per-record?x=1")
    expectDeliveryHeaders(deleted, { event: "DELETED", hash: rec.hash, packageMode: "IN_PLACE", chain: "evm", network: "hardhat-local", attempt: 0 })
    expect(verifySignature(secret, deleted.body, deleted.headers["x-webhook-signature"])).toBe(true)
    const d = JSON.parse(deleted.body)
    expect(d.event).toBe("record.deleted")
    expect(d.data).toEqual({ recordId: rec.recordId, hash: rec.hash, txHash: null, blockNumber: null, status: "DELETED", mode: "hard" })
    expect(verifyInnerSignature(secret, deleted.body)).toBe(true)
    expect(deleted.headers["x-service-event-id"]).not.toBe(updated.headers["x-service-event-id"])
  })

  it("GET/PUT /v1/webhooks: the global webhook, its validation, and its subscribed kinds", async () => {
    const got = await api("GET", "/v1/webhooks")
    expect(got.status).toBe(200)
    expect(got.json.data).toEqual({
      url: null,
      events: ["anchor.confirmed", "anchor.failed", "record.updated", "record.deleted"],
      payloadFormat: "multichain",
      enabled: false,
      secret,
      rotation: null,
      delivery: { mode: "single", maxEvents: 100, maxWaitMs: 0 }
    })
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/)
    expectError(await api("PUT", "/v1/webhooks", { enabled: true }), 400, "VALIDATION_ERROR", /url/)
    expectError(await api("PUT", "/v1/webhooks", { events: ["anchor.exploded"] }), 400, "VALIDATION_ERROR", /events/)
    expectError(await api("PUT", "/v1/webhooks", { payloadFormat: "xml" }), 400, "VALIDATION_ERROR", /payloadFormat/)
    expectError(await api("PUT", "/v1/webhooks", { url: "ftp://x" }), 400, "INVALID_WEBHOOK_URL")
    expectError(await api("PUT", "/v1/webhooks", { colour: "red" }), 400, "VALIDATION_ERROR")
    const put = await api("PUT", "/v1/webhooks", { url: `${receiver.url}/global`, enabled: true, events: ["anchor.confirmed", "record.deleted"] })
    expect(put.status).toBe(200)
    expect(put.json.data).toMatchObject({ url: `${receiver.url}/global`, enabled: true, events: ["anchor.confirmed", "record.deleted"],
      payloadFormat: "multichain" })

    // not subscribed to record.updated: no delivery; record.deleted: delivered to the global url
    const rec = (await api("POST", "/v1/anchor", { data: { g: 1 } })).json.data
    await api("PATCH", `/v1/records/${rec.recordId}`, { metadata: { a: 1 } })
    await api("DELETE", `/v1/records/${rec.recordId}`)
    const [del] = await receiver.waitFor(1, 10_000, (r) => r.path === "/global")
    expect(JSON.parse(del.body)).toMatchObject({ event: "record.deleted", data: { recordId: rec.recordId, mode: "soft" } })
    // Deliveries are created with their event (same transaction): the record has only the one, and once
    // its outcome is recorded nothing is left to send.
    const rows = await query<{ n: string }>(node.databaseUrl, "SELECT count(*) AS n FROM webhook_deliveries WHERE record_id = $1", [rec.recordId])
    expect(Number(rows[0].n)).toBe(1)
    await waitFor("the delivery's outcome recorded", async () => (await deliveryRow(node.databaseUrl, { recordId: rec.recordId }))?.state !== "PENDING")
    expect(receiver.received.filter((r) => r.path === "/global")).toHaveLength(1)
  })

  it("anchor.confirmed: form B exactly (multichain), form A with envelope; anchor facts in later form A events", async () => {
    const rec = (await api("POST", "/v1/anchor", { data: { anchor: 1 }, metadata: { ref: "A-1", snake_case: true } })).json.data
    const before = receiver.received.length
    const { eventId, anchoredAt } = await confirmAnchor(node.databaseUrl, rec.recordId, { txHash: `0x${"12".repeat(32)}`, blockNumber: 1234, batchId: 9 })
    const [confirmed] = (await receiver.waitFor(before + 1)).slice(before)
    expect(confirmed.path).toBe("/global")
    expectDeliveryHeaders(confirmed, { event: "ANCHORED", hash: rec.hash, packageMode: "MANAGED", chain: "evm", network: "hardhat-local", attempt: 0, eventId })
    expect(verifySignature(secret, confirmed.body, confirmed.headers["x-webhook-signature"])).toBe(true)
    expect(confirmed.body).toBe(JSON.stringify({
      type: "ANCHORED",
      hash: rec.hash,
      recordId: rec.recordId,
      chainType: "evm",
      networkId: "hardhat-local",
      blockNumber: 1234,
      transactionHash: `0x${"12".repeat(32)}`,
      batchId: 9,
      anchoredAt,
      merkleProof: [`0x${"ef".repeat(32)}`],
      metadata: { ref: "A-1", snake_case: true }
    }))

    // a hybrid record: one delivery with both anchors, the secondary in dualAnchor
    const hybrid = (await api("POST", "/v1/anchor", { data: { hybrid: 1 }, chain: "hybrid" })).json.data
    const dual = { chainType: "fabric", networkId: "fabric-byo", batchId: "b-17", blockNumber: 88, txHash: "f".repeat(64), merkleProof: [], anchoredAt }
    const n1 = receiver.received.length
    await confirmAnchor(node.databaseUrl, hybrid.recordId, { dualAnchor: dual })
    const [h] = (await receiver.waitFor(n1 + 1)).slice(n1)
    const hb = JSON.parse(h.body)
    expect(hb.dualAnchor).toEqual({
      chainType: "fabric",
      networkId: "fabric-byo",
      batchId: "b-17",
      blockNumber: null,
      transactionHash: "f".repeat(64),
      merkleProof: [],
      anchoredAt
    })
    expect(h.headers["x-service-chain"]).toBe("evm")
    expect(verifySignature(secret, h.body, h.headers["x-webhook-signature"])).toBe(true)

    // envelope: form A for anchor.confirmed too; anchor.failed carries reason and errorCode
    expect(
      (await api("PUT", "/v1/webhooks", { payloadFormat: "envelope", events: ["anchor.confirmed", "anchor.failed", "record.updated", "record.deleted"] }))
        .status
    ).toBe(200)
    const second = (await api("POST", "/v1/anchor", { data: { anchor: 2 } })).json.data
    const n2 = receiver.received.length
    await confirmAnchor(node.databaseUrl, second.recordId, { txHash: `0x${"34".repeat(32)}`, blockNumber: 77 })
    const [env] = (await receiver.waitFor(n2 + 1)).slice(n2)
    const e = JSON.parse(env.body)
    expect(e.event).toBe("anchor.confirmed")
    expect(e.data).toEqual({ recordId: second.recordId, hash: second.hash, txHash: `0x${"34".repeat(32)}`, blockNumber: 77, status: "ANCHORED" })
    expect(verifyInnerSignature(secret, env.body)).toBe(true)
    expect(verifySignature(secret, env.body, env.headers["x-webhook-signature"])).toBe(true)

    const failing = (await api("POST", "/v1/anchor", { data: { anchor: 3 } })).json.data
    const n3 = receiver.received.length
    await query(node.databaseUrl, `
      WITH r AS (UPDATE records SET status = 'FAILED' WHERE id = $1 RETURNING id, account_id, hash)
      INSERT INTO events (event_id, account_id, record_id, kind, payload)
      SELECT 'evt_' || md5(random()::text), account_id, id, 'anchor.failed', jsonb_build_object('recordId', id, 'hash', hash,
        'status', 'FAILED', 'txHash', NULL, 'blockNumber', NULL, 'networkId', 'hardhat-local', 'chainType', 'evm',
        'reason', 'nonce too low, retries exhausted', 'errorCode', 'ANCHOR_FAILED') FROM r`, [failing.recordId])
    const [fail] = (await receiver.waitFor(n3 + 1)).slice(n3)
    expectDeliveryHeaders(fail, { event: "FAILED", hash: failing.hash, packageMode: "MANAGED", chain: "evm", network: "hardhat-local", attempt: 0 })
    expect(JSON.parse(fail.body).data).toEqual({
      recordId: failing.recordId,
      hash: failing.hash,
      txHash: null,
      blockNumber: null,
      status: "FAILED",
      reason: "nonce too low, retries exhausted",
      errorCode: "ANCHOR_FAILED"
    })

    // record.updated after anchoring: form A data carries the anchor's txHash and blockNumber
    const n4 = receiver.received.length
    await api("PATCH", `/v1/records/${second.recordId}`, { metadata: { after: true } })
    const [upd] = (await receiver.waitFor(n4 + 1)).slice(n4)
    expect(JSON.parse(upd.body).data).toMatchObject({ txHash: `0x${"34".repeat(32)}`, blockNumber: 77, status: "ANCHORED" })
    await api("PUT", "/v1/webhooks", { payloadFormat: "multichain" })
  })

  it("a rolled-back change sends nothing; a committed one is delivered right after COMMIT", async () => {
    const rec = (await api("POST", "/v1/anchor", { data: { tx: 1 } })).json.data
    const n = receiver.received.length
    await query(node.databaseUrl, `
      DO $$ BEGIN
        INSERT INTO events (event_id, account_id, record_id, kind, payload)
        SELECT 'evt_rolledback', account_id, id, 'record.updated', '{}'::jsonb FROM records WHERE id = '${rec.recordId}';
        RAISE EXCEPTION 'roll back';
      EXCEPTION WHEN raise_exception THEN NULL;
      END $$`)
    expect(await query(node.databaseUrl, "SELECT 1 FROM webhook_deliveries WHERE event_id = 'evt_rolledback'")).toEqual([])
    const t0 = performance.now()
    await api("PATCH", `/v1/records/${rec.recordId}`, { metadata: { x: 1 } })
    await receiver.waitFor(n + 1)
    // The dispatcher has run since the rollback (it sent the committed change): the only request is that one.
    const [committed] = await eventsOf(rec.recordId)
    expect(receiver.received.slice(n).map((r) => r.headers["x-service-event-id"])).toEqual([committed.event_id])
    // NOTIFY wakes the dispatcher: well before the polling fallback (60 s here) would; the bound is
    // generous for a loaded machine (it was 400 ms against a 500 ms fallback).
    expect(receiver.received[n].at - t0).toBeLessThan(5_000)
  })

  it("GET /v1/webhooks/deliveries: per attempt status code, latency, error; pagination; redeliver sends the same event again", async () => {
    // The receiver has every request, but the dispatcher records the last outcome just after it answers.
    const page1 = await waitFor("the last outcome recorded", async () => {
      const page = await api("GET", "/v1/webhooks/deliveries?limit=2")
      return page.json.data.deliveries[0]?.status !== "PENDING" && page
    })
    expect(page1.status).toBe(200)
    expect(page1.json.data.deliveries).toHaveLength(2)
    const d0 = page1.json.data.deliveries[0]
    expect(d0).toMatchObject({ status: "SUCCEEDED", round: 0, nextAttempt: null, nextAttemptAt: null, lastStatusCode: 200, lastError: null })
    expect(d0.id).toMatch(/^dlv_[0-9a-f]{32}$/)
    expect(d0.eventId).toMatch(/^evt_/)
    expect(d0.attempts).toEqual([{ attempt: 0, round: 0, startedAt: expect.any(String), statusCode: 200, latencyMs: expect.any(Number), error: null,
      retryInMs: null }])
    const all: Array<any> = [...page1.json.data.deliveries]
    let cursor = page1.json.data.nextCursor
    while (cursor) {
      const page = await api("GET", `/v1/webhooks/deliveries?limit=2&cursor=${cursor}`)
      all.push(...page.json.data.deliveries)
      cursor = page.json.data.nextCursor
    }
    const total = await query<{ n: string }>(node.databaseUrl, "SELECT count(*) AS n FROM webhook_delivery_log WHERE account_id = $1", [accountId])
    expect(all.length).toBe(Number(total[0].n))
    expect(new Set(all.map((d) => d.id)).size).toBe(all.length)
    expectError(await api("GET", "/v1/webhooks/deliveries?cursor=zzz"), 400, "VALIDATION_ERROR")
    expect((await api("GET", `/v1/webhooks/deliveries?eventId=${d0.eventId}`)).json.data.deliveries.map((d: any) => d.id)).toEqual([d0.id])

    // another environment's key sees none of them
    const live = await node.createKey(accountId, "live")
    expect((await call(node.baseUrl, "GET", "/v1/webhooks/deliveries", { key: live })).json.data.deliveries).toEqual([])
    expectError(await call(node.baseUrl, "POST", `/v1/webhooks/deliveries/${d0.id}/redeliver`, { key: live, body: {} }), 404, "NOT_FOUND")

    const n = receiver.received.length
    const original = receiver.received.find((r) => r.headers["x-service-event-id"] === d0.eventId)!
    const re = await api("POST", `/v1/webhooks/deliveries/${d0.id}/redeliver`, {})
    expect(re.status).toBe(202)
    expect(re.json.data).toMatchObject({ id: d0.id, status: "PENDING", round: 1, nextAttempt: 0 })
    const [again] = (await receiver.waitFor(n + 1)).slice(n)
    expect(again.headers["x-service-event-id"]).toBe(d0.eventId)
    expect(again.headers["x-service-retry-attempt"]).toBe("0")
    // same secret and format: the same bytes and signature as the first time
    expect(again.body).toBe(original.body)
    expect(again.headers["x-webhook-signature"]).toBe(original.headers["x-webhook-signature"])
    await waitFor("the redelivery's outcome recorded", async () => (await deliveryRow(node.databaseUrl, { id: d0.id }))?.state !== "PENDING")
    const after = await api("GET", `/v1/webhooks/deliveries/${d0.id}`)
    expect(after.json.data.status).toBe("SUCCEEDED")
    expect(after.json.data.attempts.map((a: any) => `${a.round}:${a.attempt}:${a.statusCode}`)).toEqual(["0:0:200", "1:0:200"])
    expectError(await api("GET", "/v1/webhooks/deliveries/dlv_nope"), 404, "NOT_FOUND")
  })

  it("the webhooks endpoints are in /v1/openapi.json; their POSTs take a JSON body like every POST ({})", async () => {
    const spec = (await call(node.baseUrl, "GET", "/v1/openapi.json")).json
    for (const path of ["/v1/webhooks", "/v1/webhooks/secret/rotate", "/v1/webhooks/secret/confirm", "/v1/webhooks/deliveries",
      "/v1/webhooks/deliveries/{deliveryId}", "/v1/webhooks/deliveries/{deliveryId}/redeliver"])
    {
      expect(Object.keys(spec.paths)).toContain(path)
    }
    expect(Object.keys(spec.paths["/v1/webhooks"]).sort()).toEqual(["get", "put"])
    expectError(await call(node.baseUrl, "POST", "/v1/webhooks/secret/rotate", { key }), 415, "UNSUPPORTED_MEDIA_TYPE")
    expectError(await api("POST", "/v1/webhooks/secret/rotate", { now: true }), 400, "VALIDATION_ERROR")
    expectError(await call(node.baseUrl, "GET", "/v1/webhooks"), 401, "MISSING_API_KEY")
  })
})
