/**
 * One writer per channel across nodes: two nodes over one database and one Fabric network; exactly one
 * holds the network's advisory lock; when it stops, the other takes over and anchoring goes on.
 *   npx vitest run test/fabric-anchoring/leader.test.ts
 */
import { afterAll, describe, expect, it } from "vitest"
import type { DevPeer } from "../../src/dev/fabric-peer/index.ts"
import { allAnchored, call, fabricNetwork, freshDatabase, query, sleep, startFabricNode, startTestPeer, waitFor, type FabricTestNode } from "./support.ts"

describe("Fabric leadership", () => {
  let peer: DevPeer | undefined
  const nodes: Array<FabricTestNode> = []
  afterAll(async () => {
    for (const n of nodes) await n.stop().catch(() => undefined)
    await peer?.close()
  })

  it("one node writes and indexes; the other takes over when it stops", async () => {
    peer = await startTestPeer()
    const databaseUrl = await freshDatabase()
    const config = fabricNetwork(peer, { batchWindowMs: 100 })
    const a = await startFabricNode({ databaseUrl, fabric: [config] })
    nodes.push(a)
    const b = await startFabricNode({ databaseUrl, fabric: [config] })
    nodes.push(b)
    await waitFor("a leader", async () => (await a.isLeader()) || (await b.isLeader()), 20_000)
    // Kept sleep: the other node has tried the lock and failed by now, but nothing outside it shows that
    // (a failed try leaves no trace; it tries again every 2 s). A loaded machine can only make this check
    // weaker (PostgreSQL's lock makes a second leader impossible anyway), never fail it wrongly.
    await sleep(300)
    expect([await a.isLeader(), await b.isLeader()].filter(Boolean)).toHaveLength(1)
    const [leader, follower] = (await a.isLeader()) ? [a, b] : [b, a]

    const key = await follower.createKey()
    const first = (await call(follower.baseUrl, "POST", "/v1/anchor", { key, body: { data: { n: 1 }, chain: "fabric" } })).json.data.recordId
    await waitFor("first ANCHORED", allAnchored(databaseUrl, [first]), 20_000)

    await leader.stop()
    nodes.splice(nodes.indexOf(leader), 1)
    await waitFor("the follower leads", () => follower.isLeader(), 20_000)
    const second = (await call(follower.baseUrl, "POST", "/v1/anchor", { key, body: { data: { n: 2 }, chain: "fabric" } })).json.data.recordId
    await waitFor("second ANCHORED", allAnchored(databaseUrl, [second]), 20_000)
    const events = await query<{ n: number }>(databaseUrl, "SELECT count(*)::int AS n FROM all_events WHERE kind = 'anchor.confirmed'")
    expect(events[0]!.n).toBe(2)
  }, 60_000)
})
