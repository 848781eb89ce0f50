/**
 * The renderer decodes every stored event with the outbox's schema (src/outbox/events.ts). A row that
 * no producer could have written is never sent: each attempt is a failed one in the delivery log, on
 * the ladder, and the dispatcher carries on with the other deliveries.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { query } from "../support/db.ts"
import { call } from "../support/node.ts"
import { deliveryRow, type Receiver, startReceiver, startWebhookNode, waitFor, type WebhookNode } from "./support.ts"

describe("webhook events that do not decode", () => {
  let node: WebhookNode
  let receiver: Receiver
  let key: string

  beforeAll(async () => {
    receiver = await startReceiver()
    node = await startWebhookNode({ env: { WEBHOOK_RETRY_SCALE: "0.0001", WEBHOOK_POLL_MS: "500" } })
    key = await node.createKey(await node.createAccount())
  })
  afterAll(async () => {
    await node?.stop()
    await receiver?.close()
  })

  it("are not sent: their attempts fail with the schema's complaint, the ladder runs out, other deliveries go", async () => {
    const bad = (await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { bad: 1 }, webhookUrl: `${receiver.url}/bad` } })).json.data
    const good = (await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { good: 1 }, webhookUrl: `${receiver.url}/good` } })).json.data
    // record.updated without status and changes: not an event of the outbox schema
    await query(node.databaseUrl, `
      INSERT INTO events (event_id, account_id, record_id, kind, payload)
      SELECT 'evt_undecodable0000000001', account_id, id, 'record.updated', jsonb_build_object('recordId', id, 'hash', hash)
      FROM records WHERE id = $1`, [bad.recordId])
    expect((await call(node.baseUrl, "PATCH", `/v1/records/${good.recordId}`, { key, body: { metadata: { go: 1 } } })).status).toBe(200)
    await receiver.waitFor(1, 10_000, (r) => r.path === "/good")

    await waitFor("the undecodable delivery FAILED", async () => (await deliveryRow(node.databaseUrl, { recordId: bad.recordId }))?.state === "FAILED", 20_000)
    const log = (await call(node.baseUrl, "GET", `/v1/webhooks/deliveries?recordId=${bad.recordId}`, { key })).json.data.deliveries[0]
    expect(log.attempts.map((a: { attempt: number }) => a.attempt)).toEqual([0, 1, 2, 3, 4, 5])
    for (const a of log.attempts) {
      expect(a).toMatchObject({ statusCode: null,
        error: expect.stringMatching(/^internal error: event evt_undecodable0000000001 \(record\.updated\) does not match the outbox schema/) })
    }
    expect(receiver.received.filter((r) => r.path === "/bad")).toEqual([])
  }, 40_000)
})
