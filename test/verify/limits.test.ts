/**
 * What one POST /v1/verify may cost the node (docs/verifying.md, "What the node's verification costs"):
 * bundles beyond what the node writes are refused before any chain call, a request's chain calls are
 * bounded in number, per account per second, and in time, and a chain endpoint that does not answer
 * is a "could not check" within the budget, never a 503 that blames the database.
 *
 * The node's EVM network points at a JSON-RPC endpoint of this test's own that answers the node's
 * pipeline (chain id, head) and counts the calls verification makes for the bundles' contract; it can
 * be told to hold those calls without answering (an endpoint that accepts and stalls).
 *   npx vitest run test/verify/limits.test.ts
 */
import * as Http from "node:http"
import type * as Net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { leafHash } from "../../src/anchoring/merkle.ts"
import { withinRequestBound } from "../../src/verify/http.ts"
import { call, network, startEvmNode, type EvmTestNode } from "../evm/support.ts"

const CONTRACT = "0x00000000000000000000000000000000000000c0"
const TX = `0x${"ab".repeat(32)}`
const HASH = "cd".repeat(32)
const KEY = `0x${"11".repeat(32)}` as const
/** A one-leaf tree: the proof is empty and folds the leaf to the root, so only the chain can decide. */
const ROOT = leafHash(HASH)

const evmAnchor = (i: number) => ({
  chainType: "evm",
  networkId: "limits",
  chainId: 31337,
  contractAddress: CONTRACT,
  batchId: i,
  merkleRoot: ROOT,
  merkleProof: [],
  leafIndex: 0,
  leafCount: 1,
  txHash: TX,
  blockNumber: 5,
  blockHash: `0x${"ef".repeat(32)}`,
  anchoredAt: "2026-11-28T00:00:00.000Z"
})
const fabricAnchor = (i: number) => ({
  chainType: "fabric",
  networkId: "fabric-nowhere",
  channel: "c",
  chaincode: "cc",
  batchId: `b${i}`,
  merkleRoot: ROOT,
  merkleProof: [],
  leafIndex: 0,
  leafCount: 1,
  txHash: "ab".repeat(32),
  blockNumber: 5,
  blockHash: "ef".repeat(32),
  anchoredAt: "2026-11-28T00:00:00.000Z"
})
const bundle = (anchors: ReadonlyArray<unknown>) => ({ version: 1, recordId: "rec", hash: HASH, anchors })

describe("POST /v1/verify: bounded work", { timeout: 90_000 }, () => {
  let rpc: Http.Server
  let node: EvmTestNode
  /** Calls verification made about the bundles' contract or transaction. */
  let verifyCalls = 0
  let stall = false

  beforeAll(async () => {
    rpc = Http.createServer((req, res) => {
      let body = ""
      req.on("data", (c) => body += c)
      req.on("end", () => {
        const message = JSON.parse(body) as { id: number; method: string } | Array<{ id: number; method: string }>
        const ours = body.includes(CONTRACT.slice(2)) || body.includes(TX.slice(2))
        if (ours) verifyCalls++
        if (ours && stall) return // accepted, never answered
        const answer = (m: { id: number; method: string }) =>
          m.method === "eth_chainId" ?
            { jsonrpc: "2.0", id: m.id, result: "0x7a69" }
            : m.method === "eth_blockNumber" ?
            { jsonrpc: "2.0", id: m.id, result: "0x10" }
            : { jsonrpc: "2.0", id: m.id, error: { code: -32000, message: "not on this test endpoint" } }
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(Array.isArray(message) ? message.map(answer) : answer(message)))
      })
    })
    await new Promise<void>((resolve) => rpc.listen(0, "127.0.0.1", resolve))
    // The chain budget short, each RPC call's own bound long: only the budget can end a stalled request in time.
    process.env.VERIFY_CHAIN_BUDGET_MS = "2000"
    node = await startEvmNode({
      networks: [network({
        networkId: "limits",
        rpcUrl: `http://127.0.0.1:${(rpc.address() as Net.AddressInfo).port}`,
        chainId: 31337,
        contractAddress: "0x00000000000000000000000000000000000000aa",
        confirmations: 1,
        environment: "test",
        pollIntervalMs: 1_000,
        rpcTimeoutMs: 60_000
      }, KEY)]
    })
  }, 60_000)
  afterAll(async () => {
    delete process.env.VERIFY_CHAIN_BUDGET_MS
    rpc?.closeAllConnections()
    await node?.stop()
    await new Promise((resolve) => rpc?.close(resolve))
  })

  const key = async () => node.createKey(await node.createAccount())

  it("a bundle with more anchors than the node ever writes is 400 VALIDATION_ERROR at once, with or without a key, and asks no chain", async () => {
    const k = await key()
    const before = verifyCalls
    const three = await call(node.baseUrl, "POST", "/v1/verify", { key: k, body: { hash: HASH, bundle: bundle([0, 1, 2].map(evmAnchor)) } })
    expect(three.status).toBe(400)
    expect(three.json).toEqual({
      success: false,
      errorCode: "VALIDATION_ERROR",
      error: "bundle: 3 anchors; a proof bundle holds at most 2 (one per network its record is anchored on: an EVM network, a Fabric network, or both)"
    })
    // The report's request: ~1 MB, 2,000 Fabric anchors, no key.
    const started = Date.now()
    const big = bundle(Array.from({ length: 2_000 }, (_, i) => ({ ...fabricAnchor(i), merkleProof: [`0x${"12".repeat(32)}`] })))
    // Just under the node's 1 MiB body limit (MAX_BODY_BYTES), as the report's was.
    expect(JSON.stringify({ hash: HASH, bundle: big }).length).toBeGreaterThan(900_000)
    expect(JSON.stringify({ hash: HASH, bundle: big }).length).toBeLessThan(1024 * 1024)
    const anonymous = await call(node.baseUrl, "POST", "/v1/verify", { body: { hash: HASH, bundle: big } })
    expect(anonymous.status).toBe(400)
    expect(anonymous.json.error).toMatch(/^bundle: 2000 anchors; a proof bundle holds at most 2/)
    expect(Date.now() - started).toBeLessThan(10_000)
    expect(verifyCalls).toBe(before)
  })

  it("two EVM anchors: a bounded number of calls; beyond 8 anchors a second for one account, 429 RATE_LIMIT_EXCEEDED with Retry-After", async () => {
    const k = await key()
    const before = verifyCalls
    const one = await call(node.baseUrl, "POST", "/v1/verify", { key: k, body: { hash: HASH, bundle: bundle([0, 1].map(evmAnchor)) } })
    expect(one.status).toBe(200)
    expect(one.json.data.outcome).toBe("could-not-check")
    // Per anchor: eth_getCode, two eth_call and the receipt name the contract or transaction (chain id and head do not).
    expect(verifyCalls - before).toBeGreaterThan(0)
    expect(verifyCalls - before).toBeLessThanOrEqual(2 * 4)
    const burst = await Promise.all(
      Array.from({ length: 6 }, () => call(node.baseUrl, "POST", "/v1/verify", { key: k, body: { hash: HASH, bundle: bundle([0, 1].map(evmAnchor)) } }))
    )
    const limited = burst.filter((r) => r.status === 429)
    expect(limited.length).toBeGreaterThan(0)
    expect(limited[0]!.json).toMatchObject({ success: false, errorCode: "RATE_LIMIT_EXCEEDED" })
    expect(limited[0]!.json.error).toMatch(/at most 8 anchors are checked against the chains per second/)
    expect(Number(limited[0]!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    expect(burst.every((r) => r.status === 200 || r.status === 429)).toBe(true)
  })

  it("an endpoint that accepts and never answers: 200 could-not-check within the chain budget, not 503 'database unavailable'", async () => {
    const k = await key()
    stall = true
    try {
      const started = Date.now()
      const r = await call(node.baseUrl, "POST", "/v1/verify", { key: k, body: { hash: HASH, bundle: bundle([evmAnchor(0)]) } })
      const took = Date.now() - started
      expect(r.status, JSON.stringify(r.json)).toBe(200)
      expect(r.json.data.outcome).toBe("could-not-check")
      expect(r.json.data.results[0].checks).toContainEqual(expect.objectContaining({
        id: "evm.chain",
        status: "error",
        message: expect.stringMatching(/^not checked: this request's 2000 ms for chain calls ran out/)
      }))
      expect(took).toBeLessThan(15_000)
      // The database was never in question: its health is unchanged.
      const health = await fetch(`${node.baseUrl}/v1/health`)
      expect(health.status).toBe(200)
    } finally {
      stall = false
    }
  })

  it("a lookup by hash checks the newest records whose anchors fit 4 per request, and names the rest", () => {
    const records = (sizes: ReadonlyArray<number>) => sizes.map((n, i) => ({ id: i, anchors: Array.from({ length: n }, () => ({})) }))
    expect(withinRequestBound(records([2, 2, 2, 1])).map((r) => r.id)).toEqual([0, 1])
    expect(withinRequestBound(records([1, 1, 1, 1, 1])).map((r) => r.id)).toEqual([0, 1, 2, 3])
    expect(withinRequestBound(records([1, 2, 2])).map((r) => r.id)).toEqual([0, 1])
    expect(withinRequestBound(records(Array.from({ length: 100 }, () => 2))).length).toBe(2)
    expect(withinRequestBound([])).toEqual([])
  })
})
