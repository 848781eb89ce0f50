// Hybrid records (chain: "hybrid") on a real EVM chain (anvil) and a real Fabric dev peer (through the
// fabric-gateway client over gRPC): QUEUED until both networks have a batch for them, ANCHORED only
// once both anchors are confirmed, with exactly one anchor.confirmed event: the EVM anchor on top, the
// Fabric one in dualAnchor.
//   npx vitest run test/evm/hybrid.test.ts
import { StandardMerkleTree } from "@openzeppelin/merkle-tree"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { DevPeer } from "../../src/dev/fabric-peer/index.ts"
import { render } from "../../src/webhooks/payload.ts"
import { fabricNetwork, startFabricNode, startTestPeer, type FabricTestNode } from "../fabric-anchoring/support.ts"
import { allEvents } from "../support/events.ts"
import { startAnvil, type Anvil } from "./anvil.ts"
import { allAnchored, call, deploy, network, query, waitFor } from "./support.ts"

// A hybrid record is refused on a node no Fabric network serves (CHAIN_NOT_CONFIGURED). The EVM-only node
// below must accept one and leave its Fabric side waiting: the Fabric network it will get is named here.
process.env.FABRIC_TEST_NETWORK_ID = "fabric-hybrid"

describe("hybrid records", () => {
  let anvil: Anvil
  let peer: DevPeer
  let node: FabricTestNode
  let key: string
  let evmNet: ReturnType<typeof network>
  beforeAll(async () => {
    anvil = await startAnvil()
    peer = await startTestPeer()
    const pk = await anvil.fundedKey()
    const d = await deploy(anvil.rpcUrl, pk)
    evmNet = network({
      networkId: "anvil-hybrid",
      rpcUrl: anvil.rpcUrl,
      chainId: d.chainId,
      contractAddress: d.address,
      confirmations: 1,
      batchWindowMs: 200,
      pollIntervalMs: 150
    }, pk)
    node = await startFabricNode({
      evm: [evmNet],
      fabric: [fabricNetwork(peer, { networkId: "fabric-hybrid", batchWindowMs: 200 })]
    })
    key = await node.createKey()
  }, 60_000)
  afterAll(async () => {
    await node?.stop()
    await peer?.close()
    await anvil?.stop()
  })

  it("is ANCHORED once both anchors are confirmed, with one event carrying both", async () => {
    const ids: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const r = await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { hybrid: i }, chain: "hybrid" } })
      expect(r.status).toBe(202)
      expect(r.json.data.networkId).toBe("anvil-hybrid") // primary: the EVM network
      ids.push(r.json.data.recordId)
    }
    await waitFor("hybrid records ANCHORED", allAnchored(node.databaseUrl, ids), 20_000)

    for (const id of ids) {
      const rec = (await call(node.baseUrl, "GET", `/v1/records/${id}`, { key })).json.data
      expect(rec.status).toBe("ANCHORED")
      expect(rec.chainType).toBe("hybrid")
      const byChain = Object.fromEntries(rec.anchors.map((a: any) => [a.chainType, a]))
      expect(Object.keys(byChain).sort()).toEqual(["evm", "fabric"])
      expect(byChain.evm.txHash).toMatch(/^0x[0-9a-f]{64}$/)
      expect(byChain.fabric.txHash).toMatch(/^[0-9a-f]{64}$/)
      expect(byChain.fabric.networkId).toBe("fabric-hybrid")
      const bundle = (await call(node.baseUrl, "GET", `/v1/records/${id}/proof`, { key })).json.data
      expect(bundle.anchors).toHaveLength(2)
      for (const a of bundle.anchors) expect(StandardMerkleTree.verify(a.merkleRoot, ["bytes32"], [`0x${bundle.hash}`], a.merkleProof)).toBe(true)

      const events = await allEvents(node.databaseUrl, [id])
      expect(events).toHaveLength(1)
      const p = events[0]!.payload
      expect(p).toMatchObject({ networkId: "anvil-hybrid", chainType: "evm", recordChainType: "hybrid", txHash: byChain.evm.txHash })
      expect(p.dualAnchor).toMatchObject({
        chainType: "fabric",
        networkId: "fabric-hybrid",
        txHash: byChain.fabric.txHash,
        batchId: byChain.fabric.batchId,
        blockNumber: null
      })
      expect(p.anchors).toHaveLength(2)

      // What the webhook engineer's renderer makes of it: form B, EVM on top, Fabric in dualAnchor.
      const rendered = render({
        eventId: "evt_test",
        kind: "anchor.confirmed",
        payload: p,
        eventCreatedAt: new Date(),
        format: "multichain",
        signingSecret: "whsec_test",
        nextSecret: null,
        record: { hash: rec.hash, packageMode: "MANAGED", chainType: "hybrid", networkId: "anvil-hybrid", metadata: {}, status: "ANCHORED" },
        anchorPayload: null
      })
      const body = JSON.parse(rendered.body)
      expect(body).toMatchObject({
        type: "ANCHORED",
        chainType: "evm",
        networkId: "anvil-hybrid",
        transactionHash: byChain.evm.txHash,
        anchoredAt: byChain.evm.anchoredAt
      })
      expect(Number.isInteger(body.batchId)).toBe(true)
      expect(body.dualAnchor).toEqual({
        chainType: "fabric",
        networkId: "fabric-hybrid",
        batchId: byChain.fabric.batchId,
        blockNumber: null,
        transactionHash: byChain.fabric.txHash,
        merkleProof: byChain.fabric.merkleProof,
        anchoredAt: byChain.fabric.anchoredAt
      })
      expect(rendered.headers.chain).toBe("evm")
    }
  }, 40_000)

  it("stays QUEUED with only its EVM anchor confirmed, and completes when the Fabric side runs", async () => {
    // The same database without the Fabric network: the EVM anchor is confirmed, the record waits.
    await node.stop()
    const evmOnly = await startFabricNode({ databaseUrl: node.databaseUrl, evm: [evmNet], fabric: [] })
    let id: string
    try {
      const r = await call(evmOnly.baseUrl, "POST", "/v1/anchor", { key, body: { data: { later: true }, chain: "hybrid" } })
      expect(r.status).toBe(202)
      id = r.json.data.recordId
      await waitFor("EVM anchor confirmed", async () =>
        (await query(node.databaseUrl,
          "SELECT 1 FROM anchors a JOIN anchor_batches b ON b.id = a.batch_id WHERE a.record_id = $1 AND a.chain_type = 'evm' AND b.state = 'CONFIRMED'", [id]))
          .length === 1)
      const view = (await call(evmOnly.baseUrl, "GET", `/v1/records/${id}`, { key })).json.data
      expect(view.status).toBe("QUEUED")
      expect(view.anchors.map((a: any) =>
        a.chainType
      )).toEqual(["evm"])
      expect((await call(evmOnly.baseUrl, "GET", `/v1/records/${id}/proof`, { key })).status).toBe(409)
      expect(await query(node.databaseUrl, "SELECT 1 FROM all_events WHERE record_id = $1", [id])).toHaveLength(0)
    } finally {
      await evmOnly.stop()
    }
    // Both networks again: the Fabric batcher claims it, and it completes with exactly one event.
    node = await startFabricNode({
      databaseUrl: node.databaseUrl,
      evm: [evmNet],
      fabric: [fabricNetwork(peer, { networkId: "fabric-hybrid", batchWindowMs: 200 })]
    })
    await waitFor("ANCHORED", allAnchored(node.databaseUrl, [id]), 15_000)
    const events = await allEvents(node.databaseUrl, [id])
    expect(events).toHaveLength(1)
    expect(events[0]!.payload.dualAnchor.chainType).toBe("fabric")
    // The Fabric anchor completed the record, well after the EVM one: the event's top level still
    // carries the EVM anchor's time (as its other top-level members), the Fabric time is in dualAnchor,
    // and the record's own anchoredAt is when it became ANCHORED (the Fabric anchor's time).
    const rec = (await call(node.baseUrl, "GET", `/v1/records/${id}`, { key })).json.data
    const byChain = Object.fromEntries(rec.anchors.map((a: any) => [a.chainType, a]))
    const body = JSON.parse(render({
      eventId: "evt_test",
      kind: "anchor.confirmed",
      payload: events[0]!.payload,
      eventCreatedAt: new Date(),
      format: "multichain",
      signingSecret: "whsec_test",
      nextSecret: null,
      record: { hash: rec.hash, packageMode: "MANAGED", chainType: "hybrid", networkId: rec.networkId, metadata: {}, status: "ANCHORED" },
      anchorPayload: null
    }).body)
    expect(body.anchoredAt).toBe(byChain.evm.anchoredAt)
    expect(body.dualAnchor.anchoredAt).toBe(byChain.fabric.anchoredAt)
    expect(rec.anchoredAt).toBe(byChain.fabric.anchoredAt)
  }, 30_000)
})
