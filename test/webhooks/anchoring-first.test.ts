/**
 * Anchoring first: while the node's anchoring pipeline reports a lag (AnchoringLag, what the batcher sees
 * when deliveries take its CPU), the dispatcher starts deliveries at a limited rate; they keep flowing
 * (never below MIN_RATE) and catch up at full rate once the lag is gone, nothing lost.
 */
import { Effect } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { AnchoringLag } from "../../src/anchoring/AnchoringLag.ts"
import { MIN_RATE } from "../../src/webhooks/governor.ts"
import { query } from "../support/db.ts"
import { call } from "../support/node.ts"
import { sleep } from "../support/wait.ts"
import { confirmBatch, startReceiver, startWebhookNode, waitFor, type WebhookNode } from "./support.ts"

const EVENTS = 600
const WATCH_MS = 3_000

describe("webhook deliveries yield to anchoring", () => {
  const nodes: Array<WebhookNode> = []
  afterAll(async () => {
    for (const n of nodes) await n.stop()
  })

  it.each(["record.deleted", "anchor.confirmed"])("%s: limited while anchoring lags, all delivered at full rate after", async (kind) => {
    const receiver = await startReceiver()
    try {
      const node = await startWebhookNode({ env: { WEBHOOK_POLL_MS: "200", WEBHOOK_RETRY_SCALE: "1" } })
      nodes.push(node)
      const reportLag = (ms: number) => node.runtime.runPromise(Effect.flatMap(AnchoringLag, (lag) => lag.report("bench-net", ms)))
      const clearLag = () => node.runtime.runPromise(Effect.flatMap(AnchoringLag, (lag) => lag.clear("bench-net")))
      const key = await node.createKey(await node.createAccount())
      const ids: Array<string> = []
      for (let start = 0; start < EVENTS; start += 100) {
        const r = await call(node.baseUrl, "POST", "/v1/anchor/batch", {
          key,
          body: { records: Array.from({ length: 100 }, (_, i) => ({ data: { kind, i: start + i }, webhookUrl: `${receiver.url}/hook` })) }
        })
        expect(r.status).toBe(202)
        ids.push(...r.json.data.results.map((x: any) => x.data.recordId as string))
      }

      // The pipeline is 5 s behind, and keeps saying so while the events are committed and delivered.
      await reportLag(5_000)
      let lagging = true
      const keepReporting = (async () => {
        while (lagging) {
          await reportLag(5_000)
          await sleep(250)
        }
      })()
      // Long enough for the dispatcher's governor to have seen the lag (it steps every 250 ms).
      await sleep(600)
      if (kind === "anchor.confirmed") await confirmBatch(node.databaseUrl, ids)
      else {
        await query(node.databaseUrl, `
          INSERT INTO events (event_id, account_id, record_id, kind, payload)
          SELECT 'evt_' || substr(md5(id || random()::text), 1, 24), account_id, id, 'record.deleted',
            jsonb_build_object('recordId', id, 'hash', hash, 'status', status, 'mode', 'soft')
          FROM records WHERE id = ANY($1) ORDER BY id`, [ids])
      }
      const committed = performance.now()
      await receiver.waitFor(1, 10_000)
      await sleep(WATCH_MS)
      const whileLagging = receiver.received.filter((x) => x.at - committed <= WATCH_MS).length
      lagging = false
      await keepReporting
      await clearLag()
      // Flowing, at about MIN_RATE: far fewer than the 600 an unlimited dispatcher sends in well under a second here
      // (a claim batch and the bucket's quarter second of slack on top).
      expect(whileLagging).toBeGreaterThanOrEqual(1)
      expect(whileLagging).toBeLessThanOrEqual(Math.ceil(MIN_RATE * WATCH_MS / 1000 * 2) + 50)

      // Caught up once the lag is gone: every event delivered once.
      await receiver.waitFor(EVENTS, 30_000)
      const released = performance.now()
      await sleep(300)
      expect(receiver.received.length).toBe(EVENTS)
      expect(new Set(receiver.received.map((x) => x.headers["x-service-event-id"])).size).toBe(EVENTS)
      expect(released - committed).toBeLessThan(30_000)

      // /metrics: the limit is back at 0 (none) once deliveries run at full rate again.
      await waitFor("the governor to release", async () => {
        const m = await fetch(`${node.baseUrl}/metrics`).catch(() => undefined)
        return m === undefined || m.status === 404 || /anchord_webhook_rate_limit_events_per_second 0\b/.test(await m.text())
      }, 10_000)
    } finally {
      await receiver.close()
    }
  }, 90_000)
})
