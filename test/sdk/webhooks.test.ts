/**
 * `verifyWebhook` of anchord/client on real deliveries from a real node to a receiver on loopback:
 * both schemes (Standard Webhooks, and the seed's x-webhook-signature as an older node sends it alone),
 * a rotation overlap, replays, tampering, and the raw-body rule.
 *   npx vitest run test/sdk/webhooks.test.ts
 */
import * as Crypto from "node:crypto"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { verifyWebhook } from "../../src/sdk/index.ts"
import { query } from "../support/db.ts"
import { call } from "../support/node.ts"
import { type Received, type Receiver, startReceiver, startWebhookNode, type WebhookNode } from "../webhooks/support.ts"

const STANDARD = ["webhook-id", "webhook-timestamp", "webhook-signature"]
/** The delivery as a node without the Standard Webhooks headers would have sent it. */
const seedOnly = (r: Received) => Object.fromEntries(Object.entries(r.headers).filter(([k]) => !STANDARD.includes(k)))
const headersOf = (r: Received) => r.headers as Record<string, string>

describe("verifyWebhook (anchord/client)", () => {
  let node: WebhookNode
  let receiver: Receiver
  let account: string
  let key: string
  let secret: string

  beforeAll(async () => {
    receiver = await startReceiver()
    node = await startWebhookNode({ env: { WEBHOOK_POLL_MS: "500" } })
    account = await node.createAccount()
    key = await node.createKey(account)
    secret = await node.secretOf(account)
  })
  afterAll(async () => {
    await node?.stop()
    await receiver?.close()
  })

  const fire = async () => {
    const n = receiver.received.length
    const rec = (await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { n }, webhookUrl: `${receiver.url}/hook` } })).json.data
    await call(node.baseUrl, "PATCH", `/v1/records/${rec.recordId}`, { key, body: { metadata: { n } } })
    return (await receiver.waitFor(n + 1)).slice(n)[0]
  }

  it("a delivery verifies by Standard Webhooks; without those headers, by x-webhook-signature; Node headers or fetch Headers, string or bytes", async () => {
    const r = await fire()
    expect(verifyWebhook({ rawBody: r.body, headers: r.headers, secret })).toEqual({
      valid: true,
      scheme: "standard-webhooks",
      eventId: r.headers["x-service-event-id"],
      batchId: null,
      timestamp: Number(r.headers["webhook-timestamp"]),
      events: [{ eventId: r.headers["x-service-event-id"], event: "UPDATED", payload: JSON.parse(r.body) }]
    })
    expect(verifyWebhook({ rawBody: Buffer.from(r.body), headers: new Headers(headersOf(r)), secret })).toMatchObject({ valid: true,
      scheme: "standard-webhooks" })
    expect(verifyWebhook({ rawBody: r.body, headers: seedOnly(r), secret })).toEqual({
      valid: true,
      scheme: "x-webhook-signature",
      eventId: r.headers["x-service-event-id"],
      batchId: null,
      timestamp: null,
      events: [{ eventId: r.headers["x-service-event-id"], event: "UPDATED", payload: JSON.parse(r.body) }]
    })
    // the seed's signature alone proves no freshness: refused when a timestamp is required
    expect(verifyWebhook({ rawBody: r.body, headers: seedOnly(r), secret, requireTimestamp: true }).valid).toBe(false)
  })

  it("refuses another secret, a changed body, changed or missing headers; throws on a parsed body", async () => {
    const r = await fire()
    const other = `whsec_${Crypto.randomBytes(32).toString("base64url")}`
    expect(verifyWebhook({ rawBody: r.body, headers: r.headers, secret: other })).toMatchObject({ valid: false,
      reason: expect.stringMatching(/no webhook-signature matches/) })
    expect(verifyWebhook({ rawBody: r.body, headers: seedOnly(r), secret: other }).valid).toBe(false)
    const changed = r.body.replace(`"n":`, `"n":1`)
    expect(verifyWebhook({ rawBody: changed, headers: r.headers, secret }).valid).toBe(false)
    expect(verifyWebhook({ rawBody: changed, headers: seedOnly(r), secret }).valid).toBe(false)
    expect(verifyWebhook({ rawBody: r.body, headers: { ...r.headers, "webhook-id": "evt_other" }, secret }).valid).toBe(false)
    // the timestamp is signed: moving it (to pass the tolerance check with an old delivery) breaks the signature
    expect(verifyWebhook({ rawBody: r.body, headers: { ...r.headers, "webhook-timestamp": String(Number(r.headers["webhook-timestamp"]) + 1) }, secret }).valid)
      .toBe(false)
    // Standard Webhooks headers present decide alone: a broken one is not rescued by x-webhook-signature
    expect(verifyWebhook({ rawBody: r.body, headers: { ...r.headers, "webhook-signature": "v1,AAAA" }, secret }).valid).toBe(false)
    expect(verifyWebhook({ rawBody: r.body, headers: { ...r.headers, "webhook-id": undefined }, secret })).toMatchObject({ valid: false,
      reason: expect.stringMatching(/incomplete/) })
    expect(verifyWebhook({ rawBody: r.body, headers: { "content-type": "application/json" }, secret }).valid).toBe(false)
    expect(() => verifyWebhook({ rawBody: JSON.parse(r.body), headers: r.headers, secret })).toThrow(/raw request body/)
  })

  it("a replay older than the tolerance is refused (default 300 s, or the one given)", async () => {
    const r = await fire()
    expect(verifyWebhook({ rawBody: r.body, headers: r.headers, secret }).valid).toBe(true)
    // The same request received 6 minutes later (only Date is faked, around synchronous calls).
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 6 * 60_000 })
    try {
      expect(verifyWebhook({ rawBody: r.body, headers: r.headers, secret })).toMatchObject({ valid: false, reason: expect.stringMatching(/more than 300 s/) })
      expect(verifyWebhook({ rawBody: r.body, headers: r.headers, secret, toleranceSeconds: 600 }).valid).toBe(true)
    } finally {
      vi.useRealTimers()
    }
  })

  it("during a rotation overlap either secret verifies, with both schemes", async () => {
    const old = secret
    const rotated = (await call(node.baseUrl, "POST", "/v1/webhooks/secret/rotate", { key, body: {} })).json.data.secret as string
    const r = await fire()
    for (const s of [old, rotated, [old, rotated]]) {
      expect(verifyWebhook({ rawBody: r.body, headers: r.headers, secret: s })).toMatchObject({ valid: true, scheme: "standard-webhooks" })
      // x-webhook-signature carries the old secret's, x-webhook-signature-next the new one's
      expect(verifyWebhook({ rawBody: r.body, headers: seedOnly(r), secret: s })).toMatchObject({ valid: true, scheme: "x-webhook-signature" })
    }
    await call(node.baseUrl, "POST", "/v1/webhooks/secret/confirm", { key, body: {} })
    secret = rotated
    const after = await fire()
    expect(verifyWebhook({ rawBody: after.body, headers: after.headers, secret: old }).valid).toBe(false)
    expect(verifyWebhook({ rawBody: after.body, headers: after.headers, secret: [old, rotated] }).valid).toBe(true)
  })

  it("a secret from before the standard-base64 change (with - or _) verifies as shown", async () => {
    let legacy: string
    do legacy = `whsec_${Crypto.randomBytes(32).toString("base64url")}`
    while (!/[-_]/.test(legacy.slice(6))) // the body: the prefix has its own "_"
    await query(node.databaseUrl, "UPDATE webhook_settings SET secret = $2 WHERE account_id = $1", [account, legacy])
    const r = await fire()
    expect(verifyWebhook({ rawBody: r.body, headers: r.headers, secret: legacy })).toMatchObject({ valid: true, scheme: "standard-webhooks" })
    expect(verifyWebhook({ rawBody: r.body, headers: seedOnly(r), secret: legacy })).toMatchObject({ valid: true, scheme: "x-webhook-signature" })
  })
  it("a batched request verifies as a whole and gives back its events, each with its own id; a changed byte fails it", async () => {
    expect((await call(node.baseUrl, "PUT", "/v1/webhooks", { key, body: { delivery: { mode: "batch", maxEvents: 10 } } })).status).toBe(200)
    const secret = await node.secretOf(account) // the newest (an earlier test rotated it)
    try {
      const n = receiver.received.length
      const recs =
        (await call(node.baseUrl, "POST", "/v1/anchor/batch", { key,
          body: { records: [1, 2, 3].map((i) => ({ data: { batched: i }, webhookUrl: `${receiver.url}/hook` })) } })).json.data.results
      const ids = recs.map((x: any) => x.data.recordId as string)
      // three record.updated events committed at once: claimed together, one request
      const rows = await query<{ id: string }>(node.databaseUrl, `
        INSERT INTO events (event_id, account_id, record_id, kind, payload)
        SELECT 'evt_' || substr(md5(id || random()::text), 1, 24), account_id, id, 'record.deleted',
          jsonb_build_object('recordId', id, 'hash', hash, 'status', status, 'mode', 'soft')
        FROM records WHERE id = ANY($1) ORDER BY id RETURNING event_id AS id`, [ids])
      const got = (await receiver.waitFor(n + 1)).slice(n)
      const events = got.flatMap((r) => {
        const v = verifyWebhook({ rawBody: r.body, headers: r.headers, secret })
        expect(v).toMatchObject({ valid: true, scheme: "standard-webhooks", eventId: null, batchId: r.headers["x-service-batch-id"] })
        expect(verifyWebhook({ rawBody: r.body, headers: seedOnly(r), secret })).toMatchObject({ valid: true, scheme: "x-webhook-signature" })
        expect(verifyWebhook({ rawBody: r.body.replace("DELETED", "DELETEE"), headers: r.headers, secret }).valid).toBe(false)
        return v.valid ? v.events : []
      })
      expect(new Set(events.map((e) => e.eventId))).toEqual(new Set(rows.map((r) => r.id)))
      for (const e of events) {
        expect(e.event).toBe("DELETED")
        expect(ids).toContain((e.payload as { data: { recordId: string } }).data.recordId)
      }
    } finally {
      await call(node.baseUrl, "PUT", "/v1/webhooks", { key, body: { delivery: { mode: "single" } } })
    }
  })
})
