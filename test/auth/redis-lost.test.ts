/**
 * Redis lost while two nodes run (issue 25; docs/operating.md, "Several nodes"): the per-second
 * limits fall back to each node counting alone — no 5xx, no request waiting on Redis beyond its
 * bound — and are shared again once Redis is back. Redis is "lost" by cutting a TCP proxy in front
 * of the machine's Redis (the server itself stays up for the other tests).
 */
import { Option, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { tcpProxy } from "../../scripts/bench/cluster-kit.ts"
import { call, startNode, type TestNode } from "../support/node.ts"
import { probeRedis } from "../support/services.ts"
import { waitFor } from "../support/wait.ts"

const redis = await probeRedis()

type Response = Awaited<ReturnType<typeof call>>

/** Waits for the start of the next one-second window (the in-memory windows are the clock's seconds). */
const freshWindow = () => {
  const next = (Math.floor(Date.now() / 1000) + 1) * 1000
  return waitFor("the next second", async () => Date.now() >= next, 5_000, 5)
}

describe.skipIf(redis.skip)(`Redis lost while the nodes run${redis.nameSuffix}`, () => {
  let proxy: Awaited<ReturnType<typeof tcpProxy>>
  let a: TestNode
  let b: TestNode
  beforeAll(async () => {
    await redis.require()
    proxy = await tcpProxy({ host: new URL(redis.url).hostname, port: Number(new URL(redis.url).port || 6379) })
    const redisUrl = Option.some(Redacted.make(`redis://127.0.0.1:${proxy.port}`))
    a = await startNode({ config: { redisUrl } })
    b = await startNode({ databaseUrl: a.databaseUrl, config: { redisUrl } })
  })
  afterAll(async () => {
    await b?.stop()
    await a?.stop()
    await proxy?.close()
  })

  /** A fresh FREE key (10/s), then `n` requests alternating between the nodes, all at once; each timed. */
  const burst = async (n: number) => {
    const { key } = await a.createKey(await a.createAccount({ plan: "FREE" }))
    await freshWindow()
    return Promise.all(Array.from({ length: n }, async (_, i) => {
      const t0 = performance.now()
      const r: Response = await call(i % 2 ? a.baseUrl : b.baseUrl, "GET", "/v1/usage", { key })
      return { status: r.status, ms: performance.now() - t0 }
    }))
  }
  const ok = (results: ReadonlyArray<{ status: number }>) => results.filter((r) => r.status === 200).length

  it("limits fall back to per-node counting with no 5xx, and are shared again when Redis returns", async () => {
    // Shared: 10 in total across the two nodes.
    await waitFor("a shared window", async () => ok(await burst(14)) === 10, 20_000, 0)

    await proxy.down()
    // Each node counts alone: up to 10 each (a burst straddling a second may give a node a few more).
    const lost = await burst(24)
    console.log(`Redis lost: ${JSON.stringify(lost.map((r) => `${r.status} ${r.ms.toFixed(0)}ms`))}`)
    expect(lost.filter((r) => r.status >= 500)).toEqual([])
    expect(lost.every((r) => r.status === 200 || r.status === 429)).toBe(true)
    expect(ok(lost)).toBeGreaterThan(10)
    expect(Math.max(...lost.map((r) => r.ms))).toBeLessThan(3_000)
    // Still refused past a node's own limit (not failing open): one node alone gives 10 of 14.
    const { key } = await a.createKey(await a.createAccount({ plan: "FREE" }))
    await freshWindow()
    const alone = await Promise.all(Array.from({ length: 14 }, () => call(a.baseUrl, "GET", "/v1/usage", { key })))
    expect(alone.filter((r) => r.status === 429).length).toBeGreaterThanOrEqual(1)

    await proxy.up()
    await waitFor("the window shared again", async () => ok(await burst(14)) === 10, 20_000, 0)
  }, 90_000)
})
