/**
 * Secret rotation (SPEC 5.5): the old secret keeps signing x-webhook-signature until the account
 * confirms or 24 h pass, with the new secret's signature in x-webhook-signature-next meanwhile; a
 * receiver still on the old secret and one already on the new one both accept every delivery.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { query } from "../support/db.ts"
import { call } from "../support/node.ts"
import { deliveriesSettled, hmacHex, type Receiver, startReceiver, startWebhookNode, verifySignature, type WebhookNode } from "./support.ts"

describe("webhook secret rotation", () => {
  let node: WebhookNode
  let receiver: Receiver
  let key: string
  let account: string
  let oldSecret: string
  let newSecret = ""
  const accepted: Array<{ path: string; ok: boolean }> = []
  const api = (method: string, path: string, body?: unknown) => call(node.baseUrl, method, path, { key, body })

  beforeAll(async () => {
    receiver = await startReceiver((r) => {
      // /old verifies with the secret it has always had; /new was updated to the rotated secret and,
      // as docs/webhooks.md advises, accepts either header signed with it.
      const ok = r.path === "/old"
        ? verifySignature(oldSecret, r.body, r.headers["x-webhook-signature"])
        : verifySignature(newSecret, r.body, r.headers["x-webhook-signature-next"]) ||
          verifySignature(newSecret, r.body, r.headers["x-webhook-signature"])
      accepted.push({ path: r.path, ok })
      return ok ? 200 : 401
    })
    node = await startWebhookNode({ env: { WEBHOOK_RETRY_SCALE: "1", WEBHOOK_POLL_MS: "500" } })
    account = await node.createAccount()
    key = await node.createKey(account)
    oldSecret = await node.secretOf(account)
  })
  afterAll(async () => {
    await node?.stop()
    await receiver?.close()
  })

  /** One record.updated event to each path; returns the requests as received. */
  const fire = async (paths: Array<string>) => {
    const n = receiver.received.length
    for (const path of paths) {
      const rec = (await api("POST", "/v1/anchor", { data: { path, t: Date.now() }, webhookUrl: `${receiver.url}${path}` })).json.data
      await api("PATCH", `/v1/records/${rec.recordId}`, { metadata: { fired: true } })
    }
    return (await receiver.waitFor(n + paths.length)).slice(n)
  }

  it("before, during (both receivers accept), after confirmation, and after the 24 h overlap", async () => {
    const [before] = await fire(["/old"])
    expect(before.headers["x-webhook-signature-next"]).toBeUndefined()
    expect(accepted.at(-1)).toEqual({ path: "/old", ok: true })

    const rotated = await api("POST", "/v1/webhooks/secret/rotate", {})
    expect(rotated.status).toBe(200)
    newSecret = rotated.json.data.secret
    expect(newSecret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/)
    expect(newSecret).not.toBe(oldSecret)
    const expires = Date.parse(rotated.json.data.previousSecretExpiresAt)
    expect(Math.abs(expires - (Date.now() + 24 * 3600_000))).toBeLessThan(60_000)
    expect((await api("GET", "/v1/webhooks")).json.data).toMatchObject({ secret: newSecret,
      rotation: { previousSecretExpiresAt: rotated.json.data.previousSecretExpiresAt } })

    const during = await fire(["/old", "/new"])
    for (const r of during) {
      expect(r.headers["x-webhook-signature"]).toBe(`sha256=${hmacHex(oldSecret, r.body)}`)
      expect(r.headers["x-webhook-signature-next"]).toBe(`sha256=${hmacHex(newSecret, r.body)}`)
      // form A's inner signature: made with the signing (old) secret during the overlap
      const { signature, ...rest } = JSON.parse(r.body)
      expect(signature).toBe(`sha256=${hmacHex(oldSecret, JSON.stringify(rest))}`)
    }
    expect(accepted.slice(-2).map((a) => a.ok)).toEqual([true, true])

    // a second rotation inside the overlap replaces the pending secret; the old one still signs
    const again = await api("POST", "/v1/webhooks/secret/rotate", {})
    expect(again.json.data.previousSecretExpiresAt).toBe(rotated.json.data.previousSecretExpiresAt)
    newSecret = again.json.data.secret
    const [during2] = await fire(["/new"])
    expect(during2.headers["x-webhook-signature"]).toBe(`sha256=${hmacHex(oldSecret, during2.body)}`)
    expect(accepted.at(-1)).toEqual({ path: "/new", ok: true })

    const confirmed = await api("POST", "/v1/webhooks/secret/confirm", {})
    expect(confirmed.status).toBe(200)
    expect(confirmed.json.data).toMatchObject({ secret: newSecret, rotation: null })
    const after = await fire(["/new", "/old"])
    for (const r of after) {
      expect(r.headers["x-webhook-signature"]).toBe(`sha256=${hmacHex(newSecret, r.body)}`)
      expect(r.headers["x-webhook-signature-next"]).toBeUndefined()
    }
    expect(accepted.slice(-2)).toEqual([{ path: "/new", ok: true }, { path: "/old", ok: false }])
    // the old-secret receiver's 401 is a failed attempt, in the log, with a retry scheduled (1 min).
    // The receiver has both requests before the node has read the answers and written the outcomes:
    // until then /new's delivery is PENDING too (claimed), so read the log once both are recorded.
    await deliveriesSettled(node.databaseUrl, account)
    const failed = (await api("GET", "/v1/webhooks/deliveries?status=PENDING")).json.data.deliveries
    expect(failed).toHaveLength(1)
    expect(failed[0]).toMatchObject({ lastStatusCode: 401, nextAttempt: 1 })
    expect(Date.parse(failed[0].nextAttemptAt) - Date.now()).toBeGreaterThan(50_000)

    // without confirmation, the overlap ends by itself after 24 h
    const third = (await api("POST", "/v1/webhooks/secret/rotate", {})).json.data.secret
    await query(node.databaseUrl, "UPDATE webhook_settings SET rotated_at = now() - interval '25 hours' WHERE account_id = $1", [account])
    expect((await api("GET", "/v1/webhooks")).json.data.rotation).toBeNull()
    const [late] = await fire(["/late"])
    expect(late.headers["x-webhook-signature"]).toBe(`sha256=${hmacHex(third, late.body)}`)
    expect(late.headers["x-webhook-signature-next"]).toBeUndefined()
  })
})
