/**
 * Test and live are separate worlds for webhooks (issue 23, finding 2; migration 0013): each environment
 * has its own global webhook, secret and rotation. A test key reads and changes only the test ones; live
 * deliveries are routed by the live settings and signed with the live secret, test ones with the test
 * secret.
 *
 * Test deliveries reach a real receiver on loopback. A live delivery cannot (the URL policy refuses
 * loopback and plain http for live, at delivery too), so a live one is checked where the node records
 * it: its delivery row's URL, and the body and x-webhook-signature rendered and stored before its first
 * attempt (which is refused: `live-hooks.test` resolves to 127.0.0.1 from the moment any live event
 * exists; before, only while the live key sets the URL, it answers a public address no test connects to).
 *   npx vitest run test/webhooks/environments.test.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { query } from "../support/db.ts"
import { call } from "../support/node.ts"
import { confirmBatch, type Receiver, startReceiver, startWebhookNode, verifySignature, waitFor, type WebhookNode } from "./support.ts"

describe("webhook settings per environment", () => {
  let node: WebhookNode
  let receiver: Receiver
  let account: string
  let live: string
  let test: string
  /** What `live-hooks.test` resolves to: a public address only while the live key sets its URL. */
  let liveHooksAt = "127.0.0.1"

  beforeAll(async () => {
    receiver = await startReceiver()
    node = await startWebhookNode({
      env: { WEBHOOK_RETRY_SCALE: "0.0001", WEBHOOK_POLL_MS: "500" },
      resolve: async (hostname) => {
        if (hostname === "live-hooks.test") return [{ address: liveHooksAt, family: 4 }]
        throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" })
      }
    })
    account = await node.createAccount()
    live = await node.createKey(account, "live")
    test = await node.createKey(account, "test")
  })
  afterAll(async () => {
    await node?.stop()
    await receiver?.close()
  })

  const settings = async (key: string) => {
    const r = await call(node.baseUrl, "GET", "/v1/webhooks", { key })
    expect(r.status).toBe(200)
    return r.json.data
  }

  /** The delivery of this record's event, once its first attempt is recorded (body and signature stored before it). */
  const attempted = (recordId: string, eventId?: string) =>
    waitFor(`the delivery of ${recordId} attempted`, async () => {
      const rows = await query<
        { url: string; target: string; environment: string; body: string; signature: string; attempts: number; last_error: string | null }
      >(
        node.databaseUrl,
        "SELECT url, target, environment, body, signature, attempts, last_error FROM webhook_deliveries WHERE record_id = $1 AND ($2::text IS NULL OR event_id = $2)",
        [recordId, eventId ?? null]
      )
      return rows.length === 1 && rows[0].attempts >= 1 && rows[0]
    })

  it("a test key can neither read, set nor rotate the live settings; live events go where the live key said, signed with the live secret", async () => {
    const liveUrl = "https://live-hooks.test/live"
    liveHooksAt = "93.184.216.34"
    const set = await call(node.baseUrl, "PUT", "/v1/webhooks", { key: live, body: { url: liveUrl, enabled: true, events: ["record.updated"] } })
    liveHooksAt = "127.0.0.1"
    expect(set.status).toBe(200)
    const liveBefore = await settings(live)
    expect(liveBefore).toMatchObject({ url: liveUrl, enabled: true, events: ["record.updated"], rotation: null })

    // GET with the test key: the test settings only (a new account's: no URL, a secret of its own).
    const testView = await settings(test)
    expect(testView).toMatchObject({ url: null, enabled: false, rotation: null })
    expect(testView.secret).toMatch(/^whsec_/)
    expect(testView.secret).not.toBe(liveBefore.secret)

    // PUT, rotate and confirm with the test key change the test settings only.
    const testUrl = `${receiver.url}/test-hook`
    const put = await call(node.baseUrl, "PUT", "/v1/webhooks", { key: test, body: { url: testUrl, enabled: true, events: ["record.updated"] } })
    expect(put.status).toBe(200)
    expect(put.json.data.url).toBe(testUrl)
    const rotated = await call(node.baseUrl, "POST", "/v1/webhooks/secret/rotate", { key: test, body: {} })
    expect(rotated.status).toBe(200)
    const testSecret: string = rotated.json.data.secret
    expect(testSecret).not.toBe(testView.secret)
    expect(testSecret).not.toBe(liveBefore.secret)
    expect((await call(node.baseUrl, "POST", "/v1/webhooks/secret/confirm", { key: test, body: {} })).status).toBe(200)
    expect(await settings(live)).toEqual(liveBefore)
    expect(await settings(test)).toMatchObject({ url: testUrl, secret: testSecret, rotation: null })
    expect(await node.secretOf(account, "live")).toBe(liveBefore.secret)
    expect(await node.secretOf(account, "test")).toBe(testSecret)

    // A record.updated of each environment, to its own environment's global webhook.
    const liveRec = (await call(node.baseUrl, "POST", "/v1/anchor", { key: live, body: { data: { env: "live" } } })).json.data
    const testRec = (await call(node.baseUrl, "POST", "/v1/anchor", { key: test, body: { data: { env: "test" } } })).json.data
    expect((await call(node.baseUrl, "PATCH", `/v1/records/${liveRec.recordId}`, { key: live, body: { metadata: { n: 1 } } })).status).toBe(200)
    expect((await call(node.baseUrl, "PATCH", `/v1/records/${testRec.recordId}`, { key: test, body: { metadata: { n: 1 } } })).status).toBe(200)

    // The test event reaches the receiver the test key set, signed with the test secret (not the live one).
    const [got] = await receiver.waitFor(1, 10_000, (r) => r.path === "/test-hook")
    expect(JSON.parse(got.body).data.recordId).toBe(testRec.recordId)
    expect(verifySignature(testSecret, got.body, got.headers["x-webhook-signature"])).toBe(true)
    expect(verifySignature(liveBefore.secret, got.body, got.headers["x-webhook-signature"])).toBe(false)
    expect(got.headers["x-webhook-signature-next"]).toBeUndefined()

    // The live event went to the live key's URL (refused there: it resolves to loopback), signed with the live secret.
    const delivery = await attempted(liveRec.recordId)
    expect(delivery).toMatchObject({ url: liveUrl, target: "account", environment: "live" })
    // (its attempt failed: refused by the policy here; a connection refused on loopback where an operator allowlist admits it)
    expect(delivery.last_error).not.toBeNull()
    expect(JSON.parse(delivery.body).data.recordId).toBe(liveRec.recordId)
    expect(verifySignature(liveBefore.secret, delivery.body, delivery.signature)).toBe(true)
    expect(verifySignature(testSecret, delivery.body, delivery.signature)).toBe(false)
    // Nothing of the live record reached the test receiver.
    await attempted(testRec.recordId)
    expect(receiver.received.filter((r) => r.body.includes(liveRec.recordId))).toEqual([])
  })

  it("a live record's own webhookUrl is signed with the live secret, a test record's with the test secret", async () => {
    const liveSecret = await node.secretOf(account, "live")
    const testSecret = await node.secretOf(account, "test")
    expect(liveSecret).not.toBe(testSecret)
    const testRec =
      (await call(node.baseUrl, "POST", "/v1/anchor", { key: test, body: { data: { own: "test" }, webhookUrl: `${receiver.url}/own-test` } })).json.data
    const liveRec = (await call(node.baseUrl, "POST", "/v1/anchor", { key: live, body: { data: { own: "live" } } })).json.data
    // A URL stored as a live key would set it (no connection: it resolves to loopback, refused at delivery).
    await query(node.databaseUrl, "UPDATE records SET webhook_url = 'https://live-hooks.test/own-live' WHERE id = $1", [liveRec.recordId])
    await call(node.baseUrl, "PATCH", `/v1/records/${testRec.recordId}`, { key: test, body: { metadata: { own: 1 } } })
    await call(node.baseUrl, "PATCH", `/v1/records/${liveRec.recordId}`, { key: live, body: { metadata: { own: 1 } } })

    const [got] = await receiver.waitFor(1, 10_000, (r) => r.path === "/own-test")
    expect(verifySignature(testSecret, got.body, got.headers["x-webhook-signature"])).toBe(true)
    expect(verifySignature(liveSecret, got.body, got.headers["x-webhook-signature"])).toBe(false)
    const delivery = await attempted(liveRec.recordId)
    expect(delivery).toMatchObject({ url: "https://live-hooks.test/own-live", target: "record", environment: "live" })
    expect(verifySignature(liveSecret, delivery.body, delivery.signature)).toBe(true)
    expect(verifySignature(testSecret, delivery.body, delivery.signature)).toBe(false)
  })

  it("a rotation with the test key leaves the live deliveries' signature alone; the live key's rotation signs live with both secrets", async () => {
    const liveSecret = await node.secretOf(account, "live")
    expect((await call(node.baseUrl, "POST", "/v1/webhooks/secret/rotate", { key: test, body: {} })).status).toBe(200)
    const newTest = await node.secretOf(account, "test")
    const liveRec = (await call(node.baseUrl, "POST", "/v1/anchor", { key: live, body: { data: { after: "test rotation" } } })).json.data
    await call(node.baseUrl, "PATCH", `/v1/records/${liveRec.recordId}`, { key: live, body: { metadata: { r: 1 } } })
    const first = await attempted(liveRec.recordId)
    expect(verifySignature(liveSecret, first.body, first.signature)).toBe(true)
    expect(verifySignature(newTest, first.body, first.signature)).toBe(false)
    const nextOfFirst = await query<{ signature_next: string | null }>(node.databaseUrl, "SELECT signature_next FROM webhook_deliveries WHERE record_id = $1", [
      liveRec.recordId
    ])
    expect(nextOfFirst[0].signature_next).toBeNull()

    // The live key's own rotation: the overlap of the live secret, seen by the live key only.
    const rotated = await call(node.baseUrl, "POST", "/v1/webhooks/secret/rotate", { key: live, body: {} })
    expect(rotated.status).toBe(200)
    const newLive: string = rotated.json.data.secret
    expect((await settings(test)).rotation).not.toBeNull() // the test rotation above, still unconfirmed
    expect((await settings(live)).rotation).toMatchObject({ previousSecretExpiresAt: rotated.json.data.previousSecretExpiresAt })
    const again = (await call(node.baseUrl, "POST", "/v1/anchor", { key: live, body: { data: { after: "live rotation" } } })).json.data
    await call(node.baseUrl, "PATCH", `/v1/records/${again.recordId}`, { key: live, body: { metadata: { r: 2 } } })
    await attempted(again.recordId)
    const [row] = await query<{ body: string; signature: string; signature_next: string }>(node.databaseUrl,
      "SELECT body, signature, signature_next FROM webhook_deliveries WHERE record_id = $1", [again.recordId])
    expect(verifySignature(liveSecret, row.body, row.signature)).toBe(true)
    expect(verifySignature(newLive, row.body, row.signature_next)).toBe(true)
  })

  it("anchor.confirmed of batch events with records of both environments: each by its environment's subscription, URL and secret", async () => {
    // (the rotations above end: each environment's newest secret signs alone)
    for (const key of [live, test]) expect((await call(node.baseUrl, "POST", "/v1/webhooks/secret/confirm", { key, body: {} })).status).toBe(200)
    const liveSecret = await node.secretOf(account, "live")
    const testSecret = await node.secretOf(account, "test")
    const subscribe = async (key: string, events: Array<string>) =>
      expect((await call(node.baseUrl, "PUT", "/v1/webhooks", { key, body: { events } })).status).toBe(200)
    const pair = async (tag: string) => ({
      live: (await call(node.baseUrl, "POST", "/v1/anchor", { key: live, body: { data: { batch: tag, env: "live" } } })).json.data.recordId as string,
      test: (await call(node.baseUrl, "POST", "/v1/anchor", { key: test, body: { data: { batch: tag, env: "test" } } })).json.data.recordId as string
    })
    const deliveriesOf = (recordId: string) => query(node.databaseUrl, "SELECT 1 FROM webhook_deliveries WHERE record_id = $1", [recordId])

    // Only test subscribes to anchor.confirmed: one batch_events row for the account (both records), the
    // fan-out trigger picks each record's environment's settings: the test record is delivered, the live one not.
    await subscribe(test, ["anchor.confirmed"])
    const first = await pair("first")
    const one = await confirmBatch(node.databaseUrl, [first.live, first.test])
    const [got] = await receiver.waitFor(1, 10_000, (r) => r.path === "/test-hook" && r.body.includes(first.test))
    expect(got.headers["x-service-event-id"]).toBe(one.eventIds.get(first.test))
    expect(verifySignature(testSecret, got.body, got.headers["x-webhook-signature"])).toBe(true)
    expect(verifySignature(liveSecret, got.body, got.headers["x-webhook-signature"])).toBe(false)
    // (fanned out with the test record: one step, one transaction)
    expect(await deliveriesOf(first.live)).toEqual([])

    // Only live subscribes: the live record goes to the live URL with the live secret, the test one nowhere.
    await subscribe(test, ["record.updated"])
    await subscribe(live, ["anchor.confirmed"])
    const second = await pair("second")
    const two = await confirmBatch(node.databaseUrl, [second.live, second.test])
    const delivery = await attempted(second.live, two.eventIds.get(second.live))
    expect(delivery).toMatchObject({ url: "https://live-hooks.test/live", target: "account", environment: "live" })
    expect(JSON.parse(delivery.body)).toMatchObject({ type: "ANCHORED", recordId: second.live })
    expect(verifySignature(liveSecret, delivery.body, delivery.signature)).toBe(true)
    expect(verifySignature(testSecret, delivery.body, delivery.signature)).toBe(false)
    expect(await deliveriesOf(second.test)).toEqual([])
    expect(receiver.received.filter((r) => r.body.includes(first.live) || r.body.includes(second.live) || r.body.includes(second.test))).toEqual([])
  })
})
