/**
 * The block indexer resumes from its PostgreSQL checkpoint without gaps or double processing: the node
 * is stopped while blocks keep coming (another client anchors on the same channel), the peer itself is
 * restarted under a running node (its block stream breaks), and a new node picks up where the old one
 * stopped. Every block is processed exactly once (fabric_blocks has one row per block, 0..height-1, and
 * its primary key refuses a second), and every record gets exactly one anchor.confirmed event.
 *   npx vitest run test/fabric-anchoring/restart.test.ts
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { startDevPeer, type DevPeer } from "../../src/dev/fabric-peer/index.ts"
import { connectGateway, randomRoot } from "../fabric/helpers.ts"
import { allAnchored, call, fabricNetwork, freshDatabase, query, sleep, startFabricNode, waitFor, type FabricTestNode } from "./support.ts"

describe("Fabric indexer restart", () => {
  const dir = mkdtempSync(join(tmpdir(), "anchord-fabric-restart-"))
  let peer: DevPeer | undefined
  let node: FabricTestNode | undefined
  let stopTraffic = false
  afterAll(async () => {
    stopTraffic = true
    await node?.stop()
    await peer?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  /** Another client anchoring on the channel every ~40 ms: blocks keep coming whatever the node does.
   *  (Its sleeps pace the load; nothing waits on them.) */
  const traffic = async () => {
    while (!stopTraffic) {
      const p = peer
      if (p === undefined) {
        await sleep(20)
        continue
      }
      const connection = connectGateway(p)
      try {
        const contract = connection.gateway.getNetwork(p.channel).getContract(p.chaincode)
        while (!stopTraffic && peer === p) {
          await contract.submitAsync("anchor", { arguments: [randomRoot(), "1", "traffic"] }).catch(() => undefined)
          await sleep(40)
        }
      } finally {
        connection.close()
      }
    }
  }

  it("misses no block and processes none twice across node and peer restarts", async () => {
    peer = await startDevPeer({ dataDir: dir, blockIntervalMs: 30 })
    const port = peer.port
    const config = fabricNetwork(peer, { batchWindowMs: 100, retryIntervalMs: 100 })
    const databaseUrl = await freshDatabase()
    node = await startFabricNode({ databaseUrl, fabric: [config] })
    const key = await node.createKey()
    const background = traffic()
    const post = async (n: number, tag: string) => {
      const ids: Array<string> = []
      for (let i = 0; i < n; i++) {
        const r = await call(node!.baseUrl, "POST", "/v1/anchor", { key, body: { data: { tag, i }, chain: "fabric" } })
        expect(r.status).toBe(202)
        ids.push(r.json.data.recordId)
        await sleep(15) // pacing: the records spread over several batches (nothing waits on it)
      }
      return ids
    }

    const first = await post(10, "first")
    await waitFor("first ANCHORED", allAnchored(databaseUrl, first), 15_000)
    const second = await post(10, "second")
    // Stop the node mid-stream (its indexer and writer are interrupted wherever they are).
    await node.stop()
    node = undefined
    // blocks go by meanwhile (the other client's traffic): wait for some
    const stoppedAt = peer.blockHeight()
    await waitFor("blocks while the node is stopped", async () => peer!.blockHeight() >= stoppedAt + 10, 15_000, 20)

    node = await startFabricNode({ databaseUrl, fabric: [config] })
    const third = await post(5, "third")
    // Restart the peer under the running node: the block stream breaks, the indexer resumes from its checkpoint.
    const old = peer
    peer = undefined
    await old.close()
    const running = node
    await waitFor("the node to find the peer unreachable",
      async () => (await call(running.baseUrl, "GET", "/v1/health")).json.data.networks.some((n: { status: string }) => n.status === "unreachable"), 15_000, 20)
    peer = await startDevPeer({ dataDir: dir, blockIntervalMs: 30, port })
    const fourth = await post(5, "fourth")

    const all = [...first, ...second, ...third, ...fourth]
    await waitFor("all ANCHORED", allAnchored(databaseUrl, all), 20_000)
    stopTraffic = true
    await background
    const height = peer.blockHeight()
    await waitFor("indexer at the head", async () => {
      const rows = await query<{ b: string }>(databaseUrl, "SELECT block_number::text AS b FROM fabric_checkpoints WHERE network_id = 'fabric-dev'")
      return rows[0] !== undefined && Number(rows[0].b) === peer!.blockHeight() - 1
    }, 10_000)
    expect(height).toBeGreaterThan(20)

    const blocks = await query<{ n: number; min: string; max: string; distinct: number }>(databaseUrl, `
      SELECT count(*)::int AS n, min(block_number)::text AS min, max(block_number)::text AS max,
        count(DISTINCT block_number)::int AS distinct FROM fabric_blocks WHERE network_id = 'fabric-dev'`)
    expect(blocks[0]).toEqual({ n: peer.blockHeight(), min: "0", max: String(peer.blockHeight() - 1), distinct: peer.blockHeight() })
    // The hash chain the indexer checked: each stored block's hash is what the next one chains to (verified on the way in).
    const events = await query<{ recordId: string; n: number }>(databaseUrl, `
      SELECT record_id AS "recordId", count(*)::int AS n FROM all_events WHERE kind = 'anchor.confirmed' GROUP BY record_id`)
    expect(events).toHaveLength(all.length)
    for (const e of events) expect(e.n).toBe(1)
  }, 60_000)
})
