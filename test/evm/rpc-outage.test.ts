// The RPC endpoint goes away for a while (a TCP proxy in front of anvil is closed, then reopened), or
// hangs (the proxy accepts and never answers): the node keeps accepting records, reports the endpoint
// down within its bound, and catches up when the endpoint is back.
//   npx vitest run test/evm/rpc-outage.test.ts
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startAnvil, type Anvil } from "./anvil.ts"
import { allAnchored, call, deploy, network, rpcProxy, startEvmNode, statusesOf, waitFor, type EvmTestNode } from "./support.ts"

describe("RPC outage", () => {
  let anvil: Anvil
  let proxy: Awaited<ReturnType<typeof rpcProxy>>
  let node: EvmTestNode
  let key: string
  beforeAll(async () => {
    anvil = await startAnvil()
    const pk = await anvil.fundedKey()
    const d = await deploy(anvil.rpcUrl, pk)
    proxy = await rpcProxy({ host: "127.0.0.1", port: anvil.port })
    node = await startEvmNode({
      networks: [network({
        networkId: "anvil-outage",
        rpcUrl: proxy.url,
        chainId: d.chainId,
        contractAddress: d.address,
        confirmations: 1,
        batchWindowMs: 200,
        pollIntervalMs: 150,
        rpcTimeoutMs: 1_500
      }, pk)]
    })
    key = await node.createKey(await node.createAccount())
  }, 60_000)
  afterAll(async () => {
    await node?.stop()
    await proxy?.close()
    await anvil?.stop()
  })

  it("keeps accepting records while the chain is unreachable, then anchors them", async () => {
    const first = (await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { before: true } } })).json.data.recordId
    await waitFor("ANCHORED before the outage", allAnchored(node.databaseUrl, [first]))

    await proxy.down()
    const ids: Array<string> = []
    for (let i = 0; i < 20; i++) {
      const r = await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { during: i } } })
      expect(r.status).toBe(202)
      ids.push(r.json.data.recordId)
    }
    // The node has had its chance during the outage: every record is in a batch and the node has tried
    // the endpoint and found it unreachable (health). An outage does not count as a batch's attempt.
    await waitFor("the records batched and the endpoint found unreachable", async () => {
      const statuses = await statusesOf(node.databaseUrl, ids)
      const health = (await call(node.baseUrl, "GET", "/v1/health")).json.data
      return [...statuses.values()].every((s) => s !== "QUEUED") &&
        health.networks.some((n: { networkId: string; status: string }) => n.networkId === "anvil-outage" && n.status === "unreachable")
    })
    const during = await statusesOf(node.databaseUrl, ids)
    expect([...during.values()].every((s) => s === "QUEUED" || s === "BATCHING")).toBe(true)
    const health = await call(node.baseUrl, "GET", `/v1/records/${ids[0]}`, { key })
    expect(health.status).toBe(200)

    await proxy.up()
    await waitFor("ANCHORED after the outage", allAnchored(node.databaseUrl, ids), 20_000)
  }, 60_000)

  it("an endpoint that accepts connections and never answers is reported down within its bound, and ingest keeps answering", async () => {
    const health = async () =>
      (await call(node.baseUrl, "GET", "/v1/health")).json.data.networks.find((n: { networkId: string }) => n.networkId === "anvil-outage")
    await waitFor("the network up before the stall", async () => (await health()).status === "up")
    proxy.freeze()
    const frozenAt = performance.now()
    const ids: Array<string> = []
    // rpcTimeoutMs is 1,500 here: the next call of the watcher (every 150 ms) runs into it, and the loop
    // reports the endpoint at once (no retries of a call that hit its bound).
    await waitFor("the network reported unreachable", async () => {
      const started = performance.now()
      const r = await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { stalled: ids.length } } })
      expect(r.status).toBe(202)
      expect(performance.now() - started, "ingest answers while the chain hangs").toBeLessThan(1_500)
      ids.push(r.json.data.recordId)
      return (await health()).status === "unreachable"
    }, 15_000, 100)
    const reportedMs = performance.now() - frozenAt
    expect(reportedMs, "reported within the RPC bound plus a watcher period").toBeLessThan(1_500 + 150 + 2_000)
    proxy.thaw()
    await waitFor("ANCHORED after the stall", allAnchored(node.databaseUrl, ids), 30_000)
  }, 60_000)
})
