// The node stopped between sending a transaction and its confirmation, then restarted on the same
// database: no record lost, none anchored twice.
//   A: the tx is mined while the node is down (the restarted node adopts it);
//   B: the tx never reached the chain (pool emptied while down: the restarted node re-broadcasts
//      the signed tx it persisted before sending).
//   npx vitest run test/evm/restart.test.ts
import type { Hex } from "viem"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { anchorRegistryAbi } from "../../src/evm/AnchorRegistry.abi.ts"
import { anchoredEvent } from "../../src/evm/chain.ts"
import type { EvmNetworkConfig } from "../../src/evm/config.ts"
import { startAnvil, type Anvil } from "./anvil.ts"
import { allAnchored, call, deploy, freshDatabase, network, publicClient, query, startEvmNode, waitFor, type EvmTestNode } from "./support.ts"

describe("restart between send and confirmation", () => {
  let anvil: Anvil
  let databaseUrl: string
  let net: EvmNetworkConfig
  let contract: Hex
  let node: EvmTestNode | undefined
  let key: string

  beforeAll(async () => {
    anvil = await startAnvil()
    const pk = await anvil.fundedKey()
    const d = await deploy(anvil.rpcUrl, pk)
    contract = d.address
    net = network({
      networkId: "anvil-restart",
      rpcUrl: anvil.rpcUrl,
      chainId: d.chainId,
      contractAddress: d.address,
      confirmations: 1,
      batchWindowMs: 200,
      pollIntervalMs: 150
    }, pk)
    databaseUrl = await freshDatabase()
    node = await startEvmNode({ databaseUrl, networks: [net] })
    key = await node.createKey(await node.createAccount())
  }, 60_000)
  afterAll(async () => {
    await node?.stop()
    await anvil?.stop()
  })

  const submitUntilSent = async (tag: string) => {
    const ids: Array<string> = []
    for (let i = 0; i < 4; i++) {
      ids.push((await call(node!.baseUrl, "POST", "/v1/anchor", { key, body: { data: { tag, i } } })).json.data.recordId)
    }
    const batch = await waitFor("batch SENT", async () => {
      const rows = await query<{ id: string; merkleRoot: Hex; txHash: Hex }>(databaseUrl,
        `SELECT DISTINCT b.id::text AS id, b.merkle_root AS "merkleRoot", b.tx_hash AS "txHash" FROM anchor_batches b JOIN anchors a ON a.batch_id = b.id WHERE a.record_id = ANY($1) AND b.state = 'SENT' AND b.tx_hash IS NOT NULL`,
        [ids])
      return rows[0]
    })
    return { ids, batch }
  }

  const noDoubleAnchoring = async (ids: ReadonlyArray<string>) => {
    const anchors = await query<{ recordId: string; n: number }>(databaseUrl,
      `SELECT record_id AS "recordId", count(*)::int AS n FROM anchors WHERE record_id = ANY($1) GROUP BY record_id`, [ids])
    expect(anchors).toHaveLength(ids.length)
    expect(anchors.every((a) => a.n === 1)).toBe(true)
    const client = publicClient(anvil.rpcUrl)
    const logs = await client.getLogs({ address: contract, event: anchoredEvent, fromBlock: 0n, toBlock: "latest" })
    const roots = logs.map((l) => l.args.root)
    expect(new Set(roots).size).toBe(roots.length)
    const confirmed = await query(databaseUrl, "SELECT 1 FROM anchor_batches WHERE state = 'CONFIRMED'")
    const count = await client.readContract({ address: contract, abi: anchorRegistryAbi, functionName: "batchCount" })
    expect(Number(count)).toBe(confirmed.length)
    const events = await query(databaseUrl, "SELECT 1 FROM all_events WHERE kind = 'anchor.confirmed' AND record_id = ANY($1)", [ids])
    expect(events).toHaveLength(ids.length)
  }

  it("A: the transaction is mined while the node is down", async () => {
    await anvil.rpc("evm_setAutomine", [false])
    const { ids } = await submitUntilSent("A")
    await node!.stop()
    node = undefined
    await anvil.rpc("evm_mine")
    await anvil.rpc("evm_setAutomine", [true])
    node = await startEvmNode({ databaseUrl, networks: [net] })
    await waitFor("ANCHORED after restart", allAnchored(databaseUrl, ids), 20_000)
    await noDoubleAnchoring(ids)
  }, 30_000)

  it("B: the signed transaction never reached the chain", async () => {
    await anvil.rpc("evm_setAutomine", [false])
    const { ids, batch } = await submitUntilSent("B")
    await node!.stop()
    node = undefined
    await anvil.rpc("anvil_dropAllTransactions")
    await anvil.rpc("evm_setAutomine", [true])
    node = await startEvmNode({ databaseUrl, networks: [net] })
    await waitFor("ANCHORED after restart", allAnchored(databaseUrl, ids), 20_000)
    const after = await query<{ txHash: string }>(databaseUrl, `SELECT tx_hash AS "txHash" FROM anchor_batches WHERE id = $1`, [batch.id])
    expect(batch.txHash).toMatch(/^0x[0-9a-f]{64}$/)
    expect(after[0].txHash).toBe(batch.txHash) // the very transaction persisted before the stop
    await noDoubleAnchoring(ids)
  }, 30_000)
})
