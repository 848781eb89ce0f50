/**
 * Standard Webhooks headers (SPEC 5.3) on real deliveries to a real receiver on loopback, verified
 * with the npm `standardwebhooks` library as a receiver would use it: `new Webhook(secret).verify(rawBody,
 * headers)`. The seed's headers and signatures stay as they were.
 *   npx vitest run test/webhooks/standard.test.ts
 */
import * as Crypto from "node:crypto"
import { Webhook } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { query } from "../support/db.ts"
import { call } from "../support/node.ts"
import { deliveryRow, type Received, type Receiver, startReceiver, startWebhookNode, verifySignature, waitFor, type WebhookNode } from "./support.ts"

/** What a receiver does with the library: the parsed payload, or the library's error. */
/** A secret of the same form that signed nothing here. */
const otherSecret = () => `whsec_${Crypto.randomBytes(30).toString("base64")}`

const libraryVerify = (secret: string, r: Received): { ok: true; payload: unknown } | { ok: false; error: string } => {
  try {
    return { ok: true, payload: new Webhook(secret).verify(r.body, r.headers as Record<string, string>) }
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e.message : String(e) }
  }
}

describe("Standard Webhooks headers", () => {
  let node: WebhookNode
  let receiver: Receiver
  let account: string
  let key: string
  let secret: string
  const api = (method: string, path: string, body?: unknown) => call(node.baseUrl, method, path, { key, body })

  beforeAll(async () => {
    // /flaky answers 500 to its first request: the retry comes 60 s × 0.03 = 1.8 s later, in another second.
    let flaky = 0
    receiver = await startReceiver((r) => r.path === "/flaky" && flaky++ === 0 ? 500 : 200)
    node = await startWebhookNode({ env: { WEBHOOK_RETRY_SCALE: "0.03", WEBHOOK_POLL_MS: "500" } })
    account = await node.createAccount()
    key = await node.createKey(account)
    secret = await node.secretOf(account)
  })
  afterAll(async () => {
    await node?.stop()
    await receiver?.close()
  })

  /** One record.updated event to `path`; the request as received. */
  const fire = async (path: string) => {
    const n = receiver.received.length
    const before = receiver.received.filter((x) => x.path === path).length
    const rec = (await api("POST", "/v1/anchor", { data: { path, n }, webhookUrl: `${receiver.url}${path}` })).json.data
    expect((await api("PATCH", `/v1/records/${rec.recordId}`, { metadata: { fired: n } })).status).toBe(200)
    const [r] = (await receiver.waitFor(before + 1, 15_000, (x) => x.path === path)).slice(-1)
    return { r, recordId: rec.recordId as string }
  }

  it("new secrets are base64url and base64 at once: the library takes them as shown, with the 32 bytes as key", async () => {
    const secrets = await query<{ s: string }>(node.databaseUrl, "SELECT anchord_webhook_secret() AS s FROM generate_series(1, 200)")
    for (const { s } of secrets) {
      expect(s).toMatch(/^whsec_[A-Za-z0-9]{42}[AEIMQUYcgkosw048]$/)
      expect(Buffer.from((new Webhook(s) as unknown as { key: Uint8Array }).key)).toEqual(Buffer.from(s.slice(6), "base64url"))
    }
  })

  it("every delivery: webhook-id (the event id), webhook-timestamp (the attempt's), webhook-signature the library verifies; the seed's headers unchanged", async () => {
    expect(secret).toMatch(/^whsec_[A-Za-z0-9]{43}$/)
    const { r } = await fire("/std")
    const h = r.headers
    expect(h["webhook-id"]).toBe(h["x-service-event-id"])
    expect(h["webhook-id"]).toMatch(/^evt_[0-9a-f]+$/)
    expect(h["webhook-timestamp"]).toBe(h["x-service-timestamp"])
    expect(h["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/)
    const verified = libraryVerify(secret, r)
    expect(verified).toEqual({ ok: true, payload: JSON.parse(r.body) })
    // the seed's scheme, untouched: sha256=<hex> of the raw body, keyed with the whole secret string
    expect(verifySignature(secret, r.body, h["x-webhook-signature"])).toBe(true)
    expect(h["x-webhook-signature-next"]).toBeUndefined()
    // another secret, a changed body, a changed id: refused by the library
    expect(libraryVerify(otherSecret(), r)).toMatchObject({ ok: false, error: "No matching signature found" })
    expect(libraryVerify(secret, { ...r, body: r.body.replace("fired", "fixed") })).toMatchObject({ ok: false })
    expect(libraryVerify(secret, { ...r, headers: { ...h, "webhook-id": "evt_other" } })).toMatchObject({ ok: false })
  })

  it("signed per attempt: a retry carries its own timestamp and signature (the library verifies both), the seed's signature is the same", async () => {
    const { recordId } = await fire("/flaky")
    const [first, retry] = await receiver.waitFor(2, 30_000, (x) => x.path === "/flaky")
    await waitFor("the retry's outcome recorded", async () => (await deliveryRow(node.databaseUrl, { recordId }))?.state === "SUCCEEDED")
    expect([first.headers["x-service-retry-attempt"], retry.headers["x-service-retry-attempt"]]).toEqual(["0", "1"])
    expect(retry.headers["webhook-id"]).toBe(first.headers["webhook-id"])
    expect(Number(retry.headers["webhook-timestamp"])).toBeGreaterThan(Number(first.headers["webhook-timestamp"]))
    expect(retry.headers["webhook-signature"]).not.toBe(first.headers["webhook-signature"])
    for (const r of [first, retry]) {
      expect(r.headers["webhook-timestamp"]).toBe(r.headers["x-service-timestamp"])
      expect(libraryVerify(secret, r).ok).toBe(true)
    }
    expect(retry.body).toBe(first.body)
    expect(retry.headers["x-webhook-signature"]).toBe(first.headers["x-webhook-signature"])
  })

  it("a rotation overlap: both secrets' signatures; the library accepts with the old secret and with the new; after confirming, the new only", async () => {
    const old = secret
    const rotated = (await api("POST", "/v1/webhooks/secret/rotate", {})).json.data.secret as string
    const { r } = await fire("/rotating")
    const sigs = String(r.headers["webhook-signature"]).split(" ")
    expect(sigs).toHaveLength(2)
    for (const s of sigs) expect(s).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/)
    expect(libraryVerify(old, r).ok).toBe(true)
    expect(libraryVerify(rotated, r).ok).toBe(true)
    expect(libraryVerify(otherSecret(), r).ok).toBe(false)
    // the seed's headers during the overlap, as before: old secret in x-webhook-signature, new in -next
    expect(verifySignature(old, r.body, r.headers["x-webhook-signature"])).toBe(true)
    expect(verifySignature(rotated, r.body, r.headers["x-webhook-signature-next"])).toBe(true)

    expect((await api("POST", "/v1/webhooks/secret/confirm", {})).status).toBe(200)
    const { r: after } = await fire("/rotated")
    expect(String(after.headers["webhook-signature"]).split(" ")).toHaveLength(1)
    expect(libraryVerify(rotated, after).ok).toBe(true)
    expect(libraryVerify(old, after)).toMatchObject({ ok: false, error: "No matching signature found" })
    secret = rotated
  })

  it("a replay after the library's tolerance (5 min) is refused for its timestamp, though its signature is good", async () => {
    const { r } = await fire("/replayed")
    expect(libraryVerify(secret, r).ok).toBe(true)
    // The same request received 6 minutes later. Only Date is faked, around one synchronous call: the
    // node sharing this process runs nothing in between.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 6 * 60_000 })
    let later: ReturnType<typeof libraryVerify>
    try {
      later = libraryVerify(secret, r)
    } finally {
      vi.useRealTimers()
    }
    expect(later).toEqual({ ok: false, error: "Message timestamp too old" })
  })

  it("a secret made before this change (with - or _): the same key bytes; the library needs it in standard base64", async () => {
    let legacy: string
    do legacy = `whsec_${Crypto.randomBytes(32).toString("base64url")}`
    while (!/[-_]/.test(legacy.slice(6))) // the body: the prefix has its own "_"
    await query(node.databaseUrl, "UPDATE webhook_settings SET secret = $2 WHERE account_id = $1", [account, legacy])
    const { r } = await fire("/legacy")
    expect(verifySignature(legacy, r.body, r.headers["x-webhook-signature"])).toBe(true)
    expect(() => new Webhook(legacy)).toThrow(/incorrect characters/)
    const asBase64 = `whsec_${Buffer.from(legacy.slice(6), "base64url").toString("base64")}`
    expect(libraryVerify(asBase64, r).ok).toBe(true)
  })
})
