// The EVM writer keeps the network's transparency log (docs/design/transparency-log.md) on a real chain:
// each batch goes out with `anchorWithCheckpoint` carrying its range, the watcher publishes the checkpoints it
// confirms, and the contract's checkpoint() is the newest published one. A batch whose nonce is taken by another
// transaction in the middle of three in flight cuts the log: the later batch's transaction reverts, it is signed
// again at the new head (that attempt not counted) and all land. A restarted node continues the same log; a node
// whose database does not hold the contract's log anchors without checkpoints.
//   npx vitest run test/evm/transparency-log.test.ts
import { createWalletClient, type Hex, http } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { anchorRegistryAbi } from "../../src/evm/AnchorRegistry.abi.ts"
import { leafHash } from "../../src/tlog/hash.ts"
import { merkleTreeHash } from "../../src/tlog/memory.ts"
import { startAnvil, type Anvil } from "./anvil.ts"
import { allAnchored, call, deploy, freshDatabase, network, publicClient, query, startEvmNode, waitFor, type EvmTestNode } from "./support.ts"

let anvil: Anvil
let pk: Hex
let contract: Hex
let chainId: number
let databaseUrl: string
const nodes: Array<EvmTestNode> = []
const NET = "anvil-log"

beforeAll(async () => {
  anvil = await startAnvil()
  pk = await anvil.fundedKey()
  const d = await deploy(anvil.rpcUrl, pk)
  contract = d.address
  chainId = d.chainId
  databaseUrl = await freshDatabase()
}, 60_000)
afterAll(async () => {
  for (const n of nodes) await n.stop().catch(() => {})
  await anvil?.stop()
})

const start = async (db = databaseUrl) => {
  const node = await startEvmNode({
    databaseUrl: db,
    networks: [network({
      networkId: NET,
      rpcUrl: anvil.rpcUrl,
      chainId,
      contractAddress: contract,
      confirmations: 1,
      batchMaxSize: 4,
      batchWindowMs: 200,
      pollIntervalMs: 150,
      stuckAfterMs: 1_500
    }, pk)]
  })
  nodes.push(node)
  return node
}

const anchor = async (node: EvmTestNode, key: string, n: number, tag: string) => {
  const r = await call(node.baseUrl, "POST", "/v1/anchor/batch", { key, body: { records: Array.from({ length: n }, (_, i) => ({ data: { tag, i } })) } })
  expect(r.status, JSON.stringify(r.json)).toBeLessThan(300)
  return (r.json.data.results as Array<{ data: { recordId: string } }>).map((x) => x.data.recordId)
}

const chainCheckpoint = async () => {
  const [size, root] = await publicClient(anvil.rpcUrl).readContract({ address: contract, abi: anchorRegistryAbi, functionName: "checkpoint" })
  return { size: Number(size), root: root.slice(2) }
}

interface RangeRow {
  batch_id: string
  start: number
  leaf_count: number
  root_after: string
  published: boolean
  batch_leaves: number
  attempts: number
  sent: number
}

/** The log as stored, every range checked against its batch, the whole against src/tlog over its entries. */
const checkLog = async () => {
  const ranges = await query<RangeRow>(databaseUrl,
    `SELECT lb.batch_id::text, lb.start::int, lb.leaf_count, encode(lb.root_after, 'hex') AS root_after, lb.published,
       b.leaf_count AS batch_leaves, b.attempts, cardinality(b.tx_hashes) AS sent
     FROM log_batches lb JOIN anchor_batches b ON b.id = lb.batch_id WHERE lb.network_id = $1 ORDER BY lb.start`, [NET])
  let size = 0
  for (const r of ranges) {
    expect(r.start, `batch ${r.batch_id} starts where the previous ends`).toBe(size)
    expect(r.leaf_count).toBe(r.batch_leaves)
    size += r.leaf_count
  }
  const entries = await query<{ hash: string }>(databaseUrl,
    `SELECT DISTINCT ON (lb.start + a.log_index) r.hash FROM log_batches lb JOIN anchors a ON a.batch_id = lb.batch_id
     JOIN records r ON r.id = a.record_id WHERE lb.network_id = $1 ORDER BY lb.start + a.log_index`, [NET])
  const hashes = entries.map((e) => leafHash(Buffer.from(e.hash, "hex")))
  expect(hashes.length).toBe(size)
  for (const r of ranges) expect(r.root_after).toBe(Buffer.from(merkleTreeHash(hashes, r.start + r.leaf_count)).toString("hex"))
  const [latest] = await query<{ size: number; root: string }>(databaseUrl,
    "SELECT size::int, encode(root, 'hex') AS root FROM log_checkpoints WHERE network_id = $1 ORDER BY size DESC LIMIT 1", [NET])
  return { ranges, size, latest }
}

/** Every batch's `Checkpoint` event on chain: (size, root) as its range says. */
const checkpointEvents = async () => {
  const logs = await publicClient(anvil.rpcUrl).getContractEvents({ address: contract, abi: anchorRegistryAbi, eventName: "Checkpoint", fromBlock: 0n })
  return logs.map((l) => ({ size: Number(l.args.size), root: l.args.root!.slice(2) }))
}

describe("transparency log on anvil", () => {
  let node: EvmTestNode
  let key: string

  it("each batch carries its checkpoint; the contract's checkpoint() is the newest published one", async () => {
    node = await start()
    key = await node.createKey(await node.createAccount())
    const ids = await anchor(node, key, 10, "first")
    await waitFor("records ANCHORED", allAnchored(databaseUrl, ids), 30_000)
    const log = await waitFor("all ranges published", async () => {
      const l = await checkLog()
      return l.ranges.length >= 3 && l.ranges.every((r) => r.published) ? l : undefined
    }, 20_000)
    expect(log.size).toBe(10)
    expect(await chainCheckpoint()).toEqual(log.latest)
    expect(await checkpointEvents()).toEqual(log.ranges.map((r) => ({ size: r.start + r.leaf_count, root: r.root_after })))
  }, 60_000)

  it("a batch whose nonce is taken in the middle cuts the log: the later batch is signed again (not counted) and all land", async () => {
    await anvil.rpc("evm_setAutomine", [false])
    let middle: { id: string; nonce: number; txHash: Hex } | undefined
    try {
      const ids = await anchor(node, key, 12, "second")
      const sent = await waitFor("three batches sent", async () => {
        const rows = await query<{ id: string; nonce: number; tx_hash: Hex }>(databaseUrl,
          `SELECT b.id::text, b.nonce::int, b.tx_hash FROM anchor_batches b JOIN anchors a ON a.batch_id = b.id
           WHERE a.record_id = ANY($1) AND b.state = 'SENT' GROUP BY b.id ORDER BY b.nonce`, [ids])
        return rows.length === 3 ? rows : undefined
      }, 20_000)
      middle = { id: sent[1]!.id, nonce: sent[1]!.nonce, txHash: sent[1]!.tx_hash }
      // Another transaction takes the middle batch's nonce: its own leaves the pool.
      await anvil.rpc("anvil_dropTransaction", [middle.txHash])
      const account = privateKeyToAccount(pk)
      const wallet = createWalletClient({ account, transport: http(anvil.rpcUrl) })
      await wallet.sendTransaction({ to: account.address, value: 0n, nonce: middle.nonce, chain: null, gas: 21_000n, maxFeePerGas: 10n ** 11n,
        maxPriorityFeePerGas: 10n ** 10n })
    } finally {
      await anvil.rpc("evm_setAutomine", [true])
      await anvil.rpc("evm_mine")
    }
    const log = await waitFor("every batch published again", async () => {
      const [open] = await query<{ n: number }>(databaseUrl,
        "SELECT count(*)::int AS n FROM anchor_batches WHERE network_id = $1 AND state NOT IN ('CONFIRMED', 'DROPPED', 'FAILED')", [NET])
      if (open!.n > 0) return undefined
      const l = await checkLog()
      return l.ranges.every((r) => r.published) ? l : undefined
    }, 40_000)
    expect(log.size).toBe(22)
    expect(await chainCheckpoint()).toEqual(log.latest)
    expect(await checkpointEvents()).toEqual(log.ranges.map((r) => ({ size: r.start + r.leaf_count, root: r.root_after })))
    // The batch after the middle one was cut from the log and signed again; the transaction that reverted for it is not an attempt.
    const later = log.ranges.find((r) => r.batch_id !== middle!.id && r.start >= 10 && r.sent >= 2)
    expect(later, JSON.stringify(log.ranges)).toBeDefined()
    expect(later!.attempts).toBeLessThan(later!.sent)
    const [cut] = await query<{ n: number }>(databaseUrl, "SELECT count(*)::int AS n FROM anchor_batches WHERE last_error LIKE $1", [
      `log cut at batch ${middle!.id}:%`
    ])
    expect(cut!.n).toBeGreaterThan(0)
  }, 90_000)

  it("a restarted node continues the same log", async () => {
    const before = await checkLog()
    await node.stop()
    node = await start()
    const ids = await anchor(node, key, 3, "third")
    await waitFor("records ANCHORED", allAnchored(databaseUrl, ids), 30_000)
    const after = await waitFor("published", async () => {
      const l = await checkLog()
      return l.size === before.size + 3 && l.ranges.every((r) => r.published) ? l : undefined
    }, 20_000)
    expect(after.ranges.slice(0, before.ranges.length)).toEqual(before.ranges)
    expect(await chainCheckpoint()).toEqual(after.latest)
  }, 60_000)

  it("a database whose log is not the contract's anchors without checkpoints rather than not at all", async () => {
    const onChain = await chainCheckpoint()
    const other = await start(await freshDatabase())
    const otherKey = await other.createKey(await other.createAccount())
    const ids = await anchor(other, otherKey, 3, "other")
    await waitFor("records ANCHORED", allAnchored(other.databaseUrl, ids), 30_000)
    expect(await query(other.databaseUrl, "SELECT 1 FROM log_batches")).toHaveLength(0)
    expect(await chainCheckpoint()).toEqual(onChain)
    await other.stop()
  }, 60_000)
})
