/** The end-to-end anchoring suite, run against each local chain (anvil, Hardhat EDR). */
import { StandardMerkleTree } from "@openzeppelin/merkle-tree"
import { createHash } from "node:crypto"
import type { Hex } from "viem"
import { expect } from "vitest"
import { anchorRegistryAbi } from "../../src/evm/AnchorRegistry.abi.ts"
import { allEvents } from "../support/events.ts"
import { allAnchored, call, deploy, network, publicClient, startEvmNode, waitFor, type EvmTestNode } from "./support.ts"

export interface SuiteChain {
  readonly name: string
  readonly start: () => Promise<{ rpcUrl: string; privateKey: Hex; chainId: number }>
  readonly stop: () => Promise<void>
}

interface Hooks {
  beforeAll: (f: () => Promise<void>, timeout?: number) => void
  afterAll: (f: () => Promise<void>) => void
  it: (name: string, f: () => Promise<void>, timeout?: number) => void
}

export const anchorSuite = (chain: SuiteChain, { beforeAll, afterAll, it }: Hooks) => {
  let node: EvmTestNode
  let key: string
  let rpcUrl: string
  let contract: Hex
  let chainId: number
  const networkId = `local-${chain.name}`

  beforeAll(async () => {
    const c = await chain.start()
    rpcUrl = c.rpcUrl
    const d = await deploy(c.rpcUrl, c.privateKey)
    contract = d.address
    chainId = d.chainId
    node = await startEvmNode({
      networks: [network({
        networkId,
        rpcUrl,
        chainId,
        contractAddress: contract,
        confirmations: 1,
        environment: "test",
        batchMaxSize: 50,
        batchWindowMs: 300,
        pollIntervalMs: 200
      }, c.privateKey)]
    })
    key = await node.createKey(await node.createAccount())
  }, 60_000)
  afterAll(async () => {
    await node?.stop()
    await chain.stop()
  })

  it("anchors records submitted over HTTP, and their proofs verify off and on chain", async () => {
    const ids: Array<string> = []
    for (let i = 0; i < 7; i++) {
      const r = await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { n: i, chain: chain.name } } })
      expect(r.status).toBe(202)
      expect(r.json.data.networkId).toBe(networkId)
      ids.push(r.json.data.recordId)
    }
    const before = await call(node.baseUrl, "GET", `/v1/records/${ids[0]}/proof`, { key })
    if (before.json?.data === undefined) {
      expect(before.status).toBe(409)
      expect(before.json.errorCode).toBe("NOT_ANCHORED")
    }
    await waitFor("records ANCHORED", allAnchored(node.databaseUrl, ids), 20_000)

    const client = publicClient(rpcUrl)
    for (const id of ids) {
      const view = await call(node.baseUrl, "GET", `/v1/records/${id}`, { key })
      expect(view.status).toBe(200)
      const rec = view.json.data
      expect(rec.status).toBe("ANCHORED")
      expect(rec.anchoredAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      expect(rec.anchors).toHaveLength(1)
      const a = rec.anchors[0]
      expect(a.chainType).toBe("evm")
      expect(a.networkId).toBe(networkId)
      expect(Number.isInteger(a.batchId)).toBe(true)
      expect(a.batchId).toBeGreaterThan(0)
      expect(a.txHash).toMatch(/^0x[0-9a-f]{64}$/)
      expect(a.blockNumber).toBeGreaterThan(0)
      expect(a.contractAddress.toLowerCase()).toBe(contract.toLowerCase())
      expect(a.chainId).toBe(chainId)
      expect(a.anchoredAt).toBe(rec.anchoredAt)
      for (const p of a.merkleProof) expect(p).toMatch(/^0x[0-9a-f]{64}$/)

      const bundle = await call(node.baseUrl, "GET", `/v1/records/${id}/proof`, { key })
      expect(bundle.status).toBe(200)
      const b = bundle.json.data
      expect(b.version).toBe(1)
      expect(b.recordId).toBe(id)
      expect(b.hash).toBe(rec.hash)
      const ba = b.anchors[0]
      expect(ba.blockHash).toMatch(/^0x[0-9a-f]{64}$/)
      expect(ba.merkleRoot).toBe(a.merkleRoot)
      // Off chain: OpenZeppelin's own verifier.
      expect(StandardMerkleTree.verify(ba.merkleRoot, ["bytes32"], [`0x${b.hash}`], ba.merkleProof)).toBe(true)
      // On chain: the contract's verify (inclusion + root anchored here).
      const ok = await client.readContract({
        address: ba.contractAddress,
        abi: anchorRegistryAbi,
        functionName: "verify",
        args: [`0x${b.hash}`, ba.merkleProof, ba.merkleRoot]
      })
      expect(ok).toBe(true)
      // The tx is really the one that anchored this root.
      const receipt = await client.getTransactionReceipt({ hash: ba.txHash })
      expect(receipt.blockHash).toBe(ba.blockHash)
    }

    // Outbox: one anchor.confirmed event per record, with the anchor facts.
    const events = (await allEvents(node.databaseUrl, ids)).filter((e) => e.kind === "anchor.confirmed")
    expect(events).toHaveLength(ids.length)
    for (const e of events) {
      expect(e.payload.status).toBe("ANCHORED")
      expect(e.payload.txHash).toMatch(/^0x/)
      expect(e.payload.merkleRoot).toMatch(/^0x/)
    }
  }, 40_000)

  it("anchors a hash submitted twice in separate batches (same root joins the anchored batch)", async () => {
    const hash = createHash("sha256").update(`dup-${chain.name}`).digest("hex")
    const first = await call(node.baseUrl, "POST", "/v1/anchor/hash", { key, body: { hash } })
    await waitFor("first ANCHORED", allAnchored(node.databaseUrl, [first.json.data.recordId]), 20_000)
    const second = await call(node.baseUrl, "POST", "/v1/anchor/hash", { key, body: { hash } })
    await waitFor("second ANCHORED", allAnchored(node.databaseUrl, [second.json.data.recordId]), 20_000)
    const a = (await call(node.baseUrl, "GET", `/v1/records/${first.json.data.recordId}`, { key })).json.data.anchors[0]
    const b = (await call(node.baseUrl, "GET", `/v1/records/${second.json.data.recordId}`, { key })).json.data.anchors[0]
    expect(b.merkleRoot).toBe(a.merkleRoot)
    expect(b.txHash).toBe(a.txHash)
  }, 40_000)

  it("GET /v1/health reports the network this node leads", async () => {
    const health = await call(node.baseUrl, "GET", "/v1/health")
    expect(health.status).toBe(200)
    expect(health.json.data.networks).toContainEqual({ networkId, chainType: "evm", status: "up" })
  })

  it("GET /v1/proof/{hash} lists anchors too", async () => {
    const r = await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { lookup: chain.name } } })
    await waitFor("ANCHORED", allAnchored(node.databaseUrl, [r.json.data.recordId]), 20_000)
    const p = await call(node.baseUrl, "GET", `/v1/proof/${r.json.data.hash}`, { key })
    expect(p.status).toBe(200)
    expect(p.json.data.records[0].anchors[0].txHash).toMatch(/^0x/)
  }, 30_000)
}
