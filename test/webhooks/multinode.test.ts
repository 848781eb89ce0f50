/**
 * Several nodes share the deliveries: claims with FOR UPDATE SKIP LOCKED + a lease, so two nodes on
 * one database split a backlog and (with no crash) send each event once.
 */
import { afterAll, describe, expect, it } from "vitest"
import { freshDatabase, query } from "../support/db.ts"
import { call } from "../support/node.ts"
import { startReceiver, startWebhookNode, waitFor, type WebhookNode } from "./support.ts"

describe("webhook dispatch across nodes", () => {
  const nodes: Array<WebhookNode> = []
  afterAll(async () => {
    for (const n of nodes) await n.stop()
  })

  it("two nodes on one database split a backlog of 400 events, each sent exactly once", async () => {
    const receiver = await startReceiver(() => ({ status: 200, delayMs: 10 }))
    try {
      const databaseUrl = await freshDatabase()
      const env = { WEBHOOK_CONCURRENCY: "16", WEBHOOK_CLAIM_BATCH: "8", WEBHOOK_POLL_MS: "500" }
      nodes.push(await startWebhookNode({ env, databaseUrl }))
      nodes.push(await startWebhookNode({ env, databaseUrl }))
      const key = await nodes[0].createKey(await nodes[0].createAccount())
      for (let b = 0; b < 4; b++) {
        const r = await call(nodes[b % 2].baseUrl, "POST", "/v1/anchor/batch", {
          key,
          body: { records: Array.from({ length: 100 }, (_, i) => ({ data: { b, i }, webhookUrl: `${receiver.url}/shared` })) }
        })
        expect(r.status).toBe(202)
      }
      await query(databaseUrl, `
        INSERT INTO events (event_id, account_id, record_id, kind, payload)
        SELECT 'evt_' || substr(md5(id), 1, 24), account_id, id, 'record.deleted',
          jsonb_build_object('recordId', id, 'hash', hash, 'status', status, 'mode', 'soft')
        FROM records`)
      await receiver.waitFor(400, 30_000)
      // every outcome recorded (none claimed or due): nothing is left that could be sent again
      await waitFor("all 400 outcomes recorded", async () =>
        (await query<{ n: number }>(databaseUrl, "SELECT count(*)::int AS n FROM webhook_deliveries WHERE state <> 'SUCCEEDED' OR locked_until IS NOT NULL"))[0]
          .n === 0)
      const ids = receiver.received.map((r) =>
        r.headers["x-service-event-id"]
      )
      expect(new Set(ids).size).toBe(400)
      expect(ids).toHaveLength(400)
      const byNode = await query<{ node_id: string; n: string }>(databaseUrl, "SELECT node_id, count(*) AS n FROM webhook_attempt_log GROUP BY node_id")
      expect(byNode).toHaveLength(2)
      for (const row of byNode) {
        expect(Number(row.n)).toBeGreaterThan(40)
      }
    } finally {
      await receiver.close()
    }
  })
})
