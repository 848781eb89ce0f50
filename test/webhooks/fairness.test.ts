/**
 * A receiver that hangs cannot take every delivery slot: attempts in flight to one receiver
 * (host:port) are capped (WEBHOOK_PER_HOST, counted across nodes), so other receivers' events
 * committed behind a backlog for the hanging one are still delivered at once.
 */
import * as Http from "node:http"
import { afterAll, describe, expect, it } from "vitest"
import { query } from "../support/db.ts"
import { call } from "../support/node.ts"
import { confirmBatch, startReceiver, startWebhookNode, waitFor, type WebhookNode } from "./support.ts"

/** How long the node waits on the hanging receiver (an attempt's timeout). */
const TIMEOUT = 4_000

describe("webhook fairness", () => {
  const nodes: Array<WebhookNode> = []
  afterAll(async () => {
    for (const n of nodes) await n.stop()
  })

  // record.deleted: deliveries made by the events trigger, taken by the claim; anchor.confirmed: a batch
  // event fanned out by the dispatcher itself (migrations 0011, 0012), which applies the cap as it
  // inserts them claimed.
  it.each(["record.deleted", "anchor.confirmed"])("%s: a hanging receiver holds at most its cap of slots; another receiver's events go out at once",
    async (kind) => {
      let open = 0
      let maxOpen = 0
      let slowSeen = 0
      let firstTimedOut: number | undefined // when the node first gave up on a hung attempt (it closes the request)
      const sockets = new Set<Http.ServerResponse>()
      const slow = Http.createServer((req, res) => {
        slowSeen++
        open++
        maxOpen = Math.max(maxOpen, open)
        sockets.add(res)
        res.on("close", () => {
          firstTimedOut ??= performance.now()
          open--
          sockets.delete(res)
        })
        req.resume() // never answers: the node's timeout ends it
      })
      await new Promise<void>((r) => slow.listen(0, "127.0.0.1", r))
      const slowUrl = `http://127.0.0.1:${(slow.address() as { port: number }).port}/slow`
      const fast = await startReceiver()
      try {
        const node = await startWebhookNode({
          env: { WEBHOOK_PER_HOST: "4", WEBHOOK_CLAIM_BATCH: "2", WEBHOOK_CONCURRENCY: "32", WEBHOOK_TIMEOUT_MS: String(TIMEOUT), WEBHOOK_RETRY_SCALE: "1",
            WEBHOOK_POLL_MS: "500" }
        })
        nodes.push(node)
        const key = await node.createKey(await node.createAccount())
        const batch = async (n: number, url: string, tag: string) => {
          const r = await call(node.baseUrl, "POST", "/v1/anchor/batch", { key,
            body: { records: Array.from({ length: n }, (_, i) => ({ data: { tag, i }, webhookUrl: url })) } })
          expect(r.status).toBe(202)
          return r.json.data.results.map((x: any) => x.data.recordId) as Array<string>
        }
        const slowIds = await batch(60, slowUrl, "slow")
        const fastIds = await batch(20, `${fast.url}/fast`, "fast")
        const events = (ids: Array<string>) =>
          kind === "anchor.confirmed" ? confirmBatch(node.databaseUrl, ids) : query(node.databaseUrl, `
        INSERT INTO events (event_id, account_id, record_id, kind, payload)
        SELECT 'evt_' || substr(md5(id || random()::text), 1, 24), account_id, id, $2,
          jsonb_build_object('recordId', id, 'hash', hash, 'status', status, 'mode', 'soft')
        FROM records WHERE id = ANY($1) ORDER BY id`, [ids, kind])
        await events(slowIds) // the backlog for the hanging receiver is committed first ...
        await events(fastIds) // ... and the other receiver's events right behind it
        await fast.waitFor(20, 10_000)
        expect(fast.received.every((r) => r.headers["x-service-event"] === (kind === "anchor.confirmed" ? "ANCHORED" : "DELETED"))).toBe(true)
        const fastDone = Math.max(...fast.received.map((r) => r.at))
        // all of them while the hanging receiver still held its first slots: before any hung attempt timed out
        expect(firstTimedOut === undefined || fastDone < firstTimedOut, "fast deliveries before the first timeout").toBe(true)
        // The cap holds when slots free up too: wait until the first hung attempts timed out and the
        // dispatcher claimed the hanging receiver's next deliveries (more requests than the cap allows at once).
        await waitFor("the hanging receiver's next deliveries claimed", async () => firstTimedOut !== undefined && slowSeen > maxOpen, TIMEOUT * 4)
        expect(slowSeen).toBeGreaterThanOrEqual(4)
        expect(maxOpen).toBeLessThanOrEqual(4 + 2) // the cap, plus at most one claim batch
      } finally {
        for (const res of sockets) res.destroy()
        slow.closeAllConnections()
        slow.close()
        await fast.close()
      }
    }, 60_000)
})
