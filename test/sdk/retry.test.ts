/**
 * The SDK's retries against a real node, with the failures caused for real: a key's per-second rate
 * limit (429 + Retry-After), PostgreSQL cut off behind a TCP proxy (503 + Retry-After: 5), and a
 * response lost on the way back (a proxy cuts the connection after the server answered).
 *   npx vitest run test/sdk/retry.test.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AnchordClient, AnchordError } from "../../src/sdk/index.ts"
import { rpcProxy } from "../evm/support.ts"
import { freshDatabase, query } from "../support/db.ts"
import { startNode, type TestNode } from "../support/node.ts"
import { type DroppingProxy, droppingProxy, recordingFetch } from "./support.ts"

/** Each retried exchange came no earlier than the Retry-After of the refusal before it (same call). */
const expectRetryAfterHonoured = (exchanges: ReturnType<typeof recordingFetch>["exchanges"], status: number) => {
  let refusals = 0
  for (const [i, e] of exchanges.entries()) {
    if (e.outcome !== status) continue
    refusals++
    expect(e.retryAfter).toMatch(/^\d+$/)
    const next = exchanges.slice(i + 1).find((x) => x.idempotencyKey === e.idempotencyKey && x.path === e.path)
    expect(next, "a retry after the refusal").toBeDefined()
    // setTimeout may fire a millisecond early against Date.now(): a few ms of slack
    expect(next!.sentAt - e.at).toBeGreaterThanOrEqual(Number(e.retryAfter) * 1000 - 5)
  }
  return refusals
}

describe("anchord/client retries", () => {
  let node: TestNode
  let proxy: Awaited<ReturnType<typeof rpcProxy>>
  let databaseUrl: string

  beforeAll(async () => {
    // The node reaches its database through a TCP proxy, so a test can take the database away.
    databaseUrl = await freshDatabase()
    const db = new URL(databaseUrl)
    proxy = await rpcProxy({ host: db.hostname, port: Number(db.port) })
    const viaProxy = new URL(databaseUrl)
    viaProxy.port = new URL(proxy.url).port
    node = await startNode({ databaseUrl: viaProxy.toString() })
  })
  afterAll(async () => {
    await node?.stop()
    await proxy?.close()
  })

  const recordsOf = async (accountId: string) =>
    (await query<{ n: number }>(databaseUrl, "SELECT count(*)::int AS n FROM records WHERE account_id = $1", [accountId]))[0].n

  it("429 RATE_LIMIT_EXCEEDED (a key limited to 1/s): retried after Retry-After, each call creates one record", async () => {
    const account = await node.createAccount({ ratePerSecond: 1 })
    const { key } = await node.createKey(account)
    const rec = recordingFetch()
    const client = new AnchordClient({ baseUrl: node.baseUrl, apiKey: key, fetch: rec.fetch, retries: 5 })
    // Three at once against 1 per second: at least two are refused at first (whatever window they land in).
    const results = await Promise.all([1, 2, 3].map((n) => client.anchor({ burst: n })))
    expect(results.map((r) => r.status)).toEqual(["QUEUED", "QUEUED", "QUEUED"])
    expect(new Set(results.map((r) => r.recordId)).size).toBe(3)
    expect(expectRetryAfterHonoured(rec.exchanges, 429)).toBeGreaterThanOrEqual(1)
    expect(rec.exchanges.filter((e) => e.outcome === 202)).toHaveLength(3)
    expect(await recordsOf(account)).toBe(3)

    // with retries off the 429 is the caller's, with the wait the server asked for
    const once = new AnchordClient({ baseUrl: node.baseUrl, apiKey: key, retries: 0 })
    let refused: AnchordError | undefined
    for (let i = 0; i < 5 && refused === undefined; i++) {
      const outcomes = await Promise.allSettled([once.anchor({ again: i }), once.anchor({ again: i, twin: true })])
      refused = outcomes.flatMap((o) => o.status === "rejected" ? [o.reason as AnchordError] : [])[0]
    }
    expect(refused).toBeInstanceOf(AnchordError)
    expect([refused!.status, refused!.errorCode]).toEqual([429, "RATE_LIMIT_EXCEEDED"])
    expect(refused!.retryAfterSeconds).toBeGreaterThanOrEqual(1)
  }, 60_000)

  it("503 while the database is unreachable: the POST is sent again after Retry-After (5 s) with the same Idempotency-Key, once the database is back",
    async () => {
      const account = await node.createAccount()
      const { key } = await node.createKey(account)
      let restored = false
      const rec = recordingFetch(async (e) => {
        // The outage ends once the client has been refused (it then waits out Retry-After).
        if (e.outcome === 503 && !restored) {
          restored = true
          await proxy.up()
        }
      })
      const client = new AnchordClient({ baseUrl: node.baseUrl, apiKey: key, fetch: rec.fetch, retries: 3 })
      await proxy.down()
      try {
        const record = await client.anchor({ during: "outage" })
        expect(record.status).toBe("QUEUED")
      } finally {
        if (!restored) await proxy.up()
      }
      expect(rec.exchanges[0]).toMatchObject({ outcome: 503, retryAfter: "5" })
      expect(expectRetryAfterHonoured(rec.exchanges, 503)).toBeGreaterThanOrEqual(1)
      expect(rec.exchanges.at(-1)!.outcome).toBe(202)
      expect(new Set(rec.exchanges.map((e) => e.idempotencyKey)).size).toBe(1)
      expect(await recordsOf(account)).toBe(1)
    }, 60_000)

  describe("a response lost on the way back", () => {
    let lossy: DroppingProxy
    beforeAll(async () => {
      lossy = await droppingProxy({ host: "127.0.0.1", port: Number(new URL(node.baseUrl).port) })
    })
    afterAll(() => lossy?.close())

    it("a POST is sent again with its Idempotency-Key and answered with the first response: one record", async () => {
      const account = await node.createAccount()
      const { key } = await node.createKey(account)
      const rec = recordingFetch()
      const client = new AnchordClient({ baseUrl: lossy.url, apiKey: key, fetch: rec.fetch })
      lossy.dropNextResponse()
      const record = await client.anchor({ lost: "answer" })
      expect(lossy.dropped()).toBe(1)
      expect(rec.exchanges.map((e) => typeof e.outcome)).toEqual(["string", "number"])
      expect(rec.exchanges[1].outcome).toBe(202)
      expect(rec.exchanges[0].idempotencyKey).toMatch(/^[0-9a-f-]{36}$/)
      expect(rec.exchanges[1].idempotencyKey).toBe(rec.exchanges[0].idempotencyKey)
      expect(await recordsOf(account)).toBe(1)
      expect(await client.get(record.recordId)).toMatchObject({ recordId: record.recordId, data: { lost: "answer" } })

      // GET and PATCH are repeated too (a repeated PATCH changes nothing more)
      lossy.dropNextResponse()
      expect((await client.update(record.recordId, { metadata: { v: 1 } })).metadata).toEqual({ v: 1 })
      const events = await query<{ n: number }>(databaseUrl, "SELECT count(*)::int AS n FROM all_events WHERE record_id = $1", [record.recordId])
      expect(events[0].n).toBe(1)
    })

    it("a DELETE is not repeated (a repeat of a delete that happened would answer 410): NETWORK_ERROR", async () => {
      const { key } = await node.createKey(await node.createAccount())
      const client = new AnchordClient({ baseUrl: lossy.url, apiKey: key })
      const record = await client.anchor({ to: "delete" })
      lossy.dropNextResponse()
      const e = await client.delete(record.recordId).then(() => undefined, (x: unknown) => x)
      expect(e).toBeInstanceOf(AnchordError)
      expect([(e as AnchordError).status, (e as AnchordError).errorCode]).toEqual([0, "NETWORK_ERROR"])
      // it did happen
      const gone = await client.get(record.recordId).then(() => undefined, (x: unknown) => x)
      expect((gone as AnchordError).errorCode).toBe("RECORD_DELETED")
    })
  })
})
