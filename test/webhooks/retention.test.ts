/**
 * Retention (WEBHOOK_RETENTION_DAYS): finished deliveries (SUCCEEDED / FAILED) whose last change is
 * older than the retention are deleted with their attempt logs by the dispatcher's sweep; recent ones,
 * pending ones and the events stay. The sweep runs every WEBHOOK_RETENTION_SWEEP_MS (1 s here).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { query } from "../support/db.ts"
import { expectError } from "../support/expect.ts"
import { call } from "../support/node.ts"
import { waitFor } from "../support/wait.ts"
import { type Receiver, startReceiver, startWebhookNode, type WebhookNode } from "./support.ts"

describe("webhook delivery retention", () => {
  let node: WebhookNode
  let receiver: Receiver
  let key: string
  const api = (method: string, path: string, body?: unknown) => call(node.baseUrl, method, path, { key, body })

  beforeAll(async () => {
    receiver = await startReceiver((r) => r.path === "/down" ? 500 : 200)
    node = await startWebhookNode({ env: { WEBHOOK_RETENTION_DAYS: "1", WEBHOOK_RETENTION_SWEEP_MS: "1000" } })
    key = await node.createKey(await node.createAccount())
  })
  afterAll(async () => {
    await node?.stop()
    await receiver?.close()
  })

  const deliveryOf = async (recordId: string) =>
    (await query<{ seq: string; id: string; state: string }>(node.databaseUrl,
      "SELECT seq::text AS seq, id, state FROM webhook_deliveries WHERE record_id = $1", [recordId]))[0]
  const attemptsOf = async (seq: string) => (await query(node.databaseUrl, "SELECT 1 FROM webhook_attempt_log WHERE delivery_seq = $1", [seq])).length

  it("deletes finished deliveries past the retention with their attempts; keeps recent and pending ones, and every event", async () => {
    const ids: Record<"old" | "recent" | "pending", string> = { old: "", recent: "", pending: "" }
    for (const which of ["old", "recent", "pending"] as const) {
      const path = which === "pending" ? "/down" : `/${which}`
      const rec = (await api("POST", "/v1/anchor", { data: { which }, webhookUrl: `${receiver.url}${path}` })).json.data
      expect((await api("PATCH", `/v1/records/${rec.recordId}`, { metadata: { which } })).status).toBe(200)
      ids[which] = rec.recordId
    }
    const old = await waitFor("old delivered", async () => (await deliveryOf(ids.old))?.state === "SUCCEEDED" && deliveryOf(ids.old))
    const recent = await waitFor("recent delivered", async () => (await deliveryOf(ids.recent))?.state === "SUCCEEDED" && deliveryOf(ids.recent))
    // The receiver answers 500: attempt 0 failed, the next one is a minute away (the ladder unscaled).
    const pending = await waitFor("pending attempted", async () => (await attemptsOf((await deliveryOf(ids.pending)).seq)) === 1 && deliveryOf(ids.pending))
    expect(pending.state).toBe("PENDING")
    expect(await attemptsOf(old.seq)).toBe(1)
    const eventsBefore = await query(node.databaseUrl, "SELECT id FROM all_events WHERE record_id = ANY($1)", [Object.values(ids)])
    expect(eventsBefore).toHaveLength(3)

    // Two days ago: past the one-day retention (the pending one too, which must stay).
    await query(node.databaseUrl, "UPDATE webhook_deliveries SET updated_at = now() - interval '2 days' WHERE seq = ANY($1::bigint[])", [[old.seq,
      pending.seq]])
    await waitFor("old delivery purged", async () => (await deliveryOf(ids.old)) === undefined, 10_000)

    expect(await attemptsOf(old.seq)).toBe(0)
    expect((await deliveryOf(ids.recent))?.state).toBe("SUCCEEDED")
    expect(await attemptsOf(recent.seq)).toBe(1)
    expect((await deliveryOf(ids.pending))?.state).toBe("PENDING")
    expect(await query(node.databaseUrl, "SELECT id FROM all_events WHERE record_id = ANY($1)", [Object.values(ids)])).toEqual(eventsBefore)
    // Through the API: gone from the log, 404 for its id and for a redelivery; the others are listed.
    expectError(await api("GET", `/v1/webhooks/deliveries/${old.id}`), 404, "NOT_FOUND")
    expectError(await api("POST", `/v1/webhooks/deliveries/${old.id}/redeliver`, {}), 404, "NOT_FOUND")
    const listed = (await api("GET", "/v1/webhooks/deliveries")).json.data.deliveries.map((d: { id: string }) => d.id)
    expect(listed).not.toContain(old.id)
    expect(listed).toEqual(expect.arrayContaining([recent.id, pending.id]))
  }, 40_000)
})
