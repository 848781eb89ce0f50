/**
 * SSRF rules (SPEC 5.6): at request time for live keys (https only, no loopback / private /
 * link-local / metadata targets), and again at delivery time, on the address actually connected to,
 * so a name that resolves elsewhere later (DNS rebinding) is refused. DNS is stood in for by the
 * node's WebhookResolver: `rebind.test` resolves to 127.0.0.1 here.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { query } from "../support/db.ts"
import { expectError } from "../support/expect.ts"
import { call } from "../support/node.ts"
import { type Receiver, startReceiver, startWebhookNode, waitFor, type WebhookNode } from "./support.ts"

describe("webhook SSRF rules", () => {
  let node: WebhookNode
  let receiver: Receiver
  let account: string
  let live: string
  let test: string
  const lookups: Array<string> = []

  beforeAll(async () => {
    receiver = await startReceiver()
    node = await startWebhookNode({
      env: { WEBHOOK_RETRY_SCALE: "0.0001", WEBHOOK_POLL_MS: "500" },
      resolve: async (hostname) => {
        lookups.push(hostname)
        if (hostname === "rebind.test") return [{ address: "127.0.0.1", family: 4 }]
        if (hostname === "public.test") return [{ address: "93.184.216.34", family: 4 }]
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

  it("live keys: private, loopback, link-local, metadata and plain-http targets are refused at request time", async () => {
    const bad = ["http://example.com/h", "https://127.0.0.1/h", "https://10.1.2.3/h", "https://172.16.0.1/h", "https://192.168.0.10/h",
      "https://169.254.169.254/latest/meta-data", "https://[::1]/h", "https://[fd00::1]/h", "https://[::ffff:127.0.0.1]/h",
      "https://localhost/h", "https://metadata.google.internal/computeMetadata", "https://100.64.0.1/h", "https://0.0.0.0/h",
      "https://user:pw@example.com/h", "gopher://example.com/"]
    const rec = (await call(node.baseUrl, "POST", "/v1/anchor", { key: live, body: { data: { l: 1 } } })).json.data
    for (const url of bad) {
      expectError(await call(node.baseUrl, "POST", "/v1/anchor", { key: live, body: { data: { x: 1 }, webhookUrl: url } }), 400, "INVALID_WEBHOOK_URL")
      expectError(await call(node.baseUrl, "PATCH", `/v1/records/${rec.recordId}`, { key: live, body: { webhookUrl: url } }), 400, "INVALID_WEBHOOK_URL")
      expectError(await call(node.baseUrl, "PUT", "/v1/webhooks", { key: live, body: { url, enabled: true } }), 400, "INVALID_WEBHOOK_URL")
    }
    // test keys may use http:// and loopback
    expect((await call(node.baseUrl, "POST", "/v1/anchor", { key: test, body: { data: { t: 1 }, webhookUrl: `${receiver.url}/t` } })).status).toBe(202)
  })

  it("delivery time: a live target whose name now resolves to loopback is refused before connecting; the test-key control goes through the same resolver", async () => {
    // The record passed the request-time check; then its name starts resolving to 127.0.0.1 (rebinding).
    const liveRec = (await call(node.baseUrl, "POST", "/v1/anchor", { key: live, body: { data: { rebind: 1 } } })).json.data
    await query(node.databaseUrl, "UPDATE records SET webhook_url = $2 WHERE id = $1", [liveRec.recordId, `https://rebind.test:${receiver.port}/live`])
    // An IP literal stored before the rules existed, and an http:// URL, are refused as well.
    const literal = (await call(node.baseUrl, "POST", "/v1/anchor", { key: live, body: { data: { literal: 1 } } })).json.data
    await query(node.databaseUrl, "UPDATE records SET webhook_url = $2 WHERE id = $1", [literal.recordId, `https://127.0.0.1:${receiver.port}/literal`])
    const plain = (await call(node.baseUrl, "POST", "/v1/anchor", { key: live, body: { data: { plain: 1 } } })).json.data
    await query(node.databaseUrl, "UPDATE records SET webhook_url = $2 WHERE id = $1", [plain.recordId, `http://public.test:${receiver.port}/plain`])
    for (const id of [liveRec.recordId, literal.recordId, plain.recordId]) {
      expect((await call(node.baseUrl, "PATCH", `/v1/records/${id}`, { key: live, body: { metadata: { go: 1 } } })).status).toBe(200)
    }

    // control: a test-key record to the same name is delivered, through the stand-in resolver
    const testRec = (await call(node.baseUrl, "POST", "/v1/anchor", {
      key: test, body: { data: { control: 1 }, webhookUrl: `http://rebind.test:${receiver.port}/control` }
    })).json.data
    await call(node.baseUrl, "PATCH", `/v1/records/${testRec.recordId}`, { key: test, body: { metadata: { go: 1 } } })
    await receiver.waitFor(1, 10_000, (r) => r.path === "/control")
    expect(lookups).toContain("rebind.test")

    // the refused ones: attempts logged with the reason, retried on the ladder, never reaching the receiver
    const rows = await waitFor("two refused attempts of each", async () => {
      const rows = await query<{ record_id: string; attempts: number; last_error: string }>(node.databaseUrl,
        "SELECT record_id, attempts, last_error FROM webhook_deliveries WHERE record_id = ANY($1)", [[liveRec.recordId, literal.recordId, plain.recordId]])
      return rows.length === 3 && rows.every((r) => r.attempts >= 2) && rows
    })
    const byRecord = new Map(rows.map((r) => [r.record_id, r]))
    expect(byRecord.get(liveRec.recordId)!.last_error).toMatch(/^refused: rebind\.test resolves to a loopback, private, link-local or metadata address \(127\.0\.0\.1\)/)
    expect(byRecord.get(literal.recordId)!.last_error).toMatch(/^refused: .*127\.0\.0\.1/)
    expect(byRecord.get(plain.recordId)!.last_error).toMatch(/^refused: .*https/)
    expect(receiver.received.filter((r) => ["/live", "/literal", "/plain"].includes(r.path))).toEqual([])
    const log = (await call(node.baseUrl, "GET", `/v1/webhooks/deliveries?recordId=${liveRec.recordId}`, { key: live })).json.data.deliveries[0]
    expect(log.attempts[0]).toMatchObject({ attempt: 0, statusCode: null, error: expect.stringMatching(/^refused:/) })
  })

  it("a global webhook set with a test key to loopback never receives the account's live events", async () => {
    expect((await call(node.baseUrl, "PUT", "/v1/webhooks", { key: test, body: { url: `${receiver.url}/global`, enabled: true } })).status).toBe(200)
    const t = (await call(node.baseUrl, "POST", "/v1/anchor", { key: test, body: { data: { g: "test" } } })).json.data
    const l = (await call(node.baseUrl, "POST", "/v1/anchor", { key: live, body: { data: { g: "live" } } })).json.data
    await call(node.baseUrl, "DELETE", `/v1/records/${l.recordId}`, { key: live })
    await call(node.baseUrl, "DELETE", `/v1/records/${t.recordId}`, { key: test })
    const [got] = await receiver.waitFor(1, 10_000, (r) => r.path === "/global")
    expect(JSON.parse(got.body).data.recordId).toBe(t.recordId)
    // The test key set the test environment's webhook only (migration 0013): the live event, committed
    // before the test one, has no delivery at all (the live webhook has no URL).
    expect(await query(node.databaseUrl, "SELECT 1 FROM webhook_deliveries WHERE record_id = $1", [l.recordId])).toEqual([])
    expect(receiver.received.filter((r) => r.path === "/global")).toHaveLength(1)
  })
})
