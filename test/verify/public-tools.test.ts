// docs/verifying.md, "with public tools only": a proof bundle checked with viem / plain fetch
// JSON-RPC and @openzeppelin/merkle-tree. No anchord code is used for the checks (the node and the
// chain are only set up with it).
//   npx vitest run test/verify/public-tools.test.ts
import { StandardMerkleTree } from "@openzeppelin/merkle-tree"
import { createHash } from "node:crypto"
import { Effect, Exit, Scope } from "effect"
import { createPublicClient, decodeFunctionResult, encodeFunctionData, http, parseAbi, parseEventLogs } from "viem"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { serveEdrChain } from "../../src/dev/evmChain.ts"
import { startVerifyEnv, type Anchored, type VerifyEnv } from "./support.ts"

const HARDHAT_KEY_3 = "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6" as const

/** The contract's public interface, as an auditor would write it from docs/contract.md. */
const abi = parseAbi([
  "function verify(bytes32 recordHash, bytes32[] proof, bytes32 root) view returns (bool)",
  "function getAnchor(bytes32 root) view returns (uint64 batchId, uint64 blockNumber, uint64 timestamp, uint32 leafCount)",
  "event Anchored(uint64 indexed batchId, bytes32 indexed root, address indexed submitter, uint32 leafCount)"
])

/** RFC 8785 for plain data (ASCII strings, integers, objects, arrays): members sorted, no whitespace. */
const jcs = (v: unknown): string =>
  Array.isArray(v)
    ? `[${v.map(jcs).join(",")}]`
    : v !== null && typeof v === "object"
    ? `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${jcs((v as Record<string, unknown>)[k])}`).join(",")}}`
    : JSON.stringify(v)

let scope: Scope.Closeable
let env: VerifyEnv
let record: Anchored

beforeAll(async () => {
  scope = await Effect.runPromise(Scope.make())
  const server = await Effect.runPromise(Scope.provide(serveEdrChain({ host: "127.0.0.1", port: 0 }), scope))
  env = await startVerifyEnv({ rpcUrl: server.rpcUrl, privateKey: HARDHAT_KEY_3 }, "public")
  ;[record] = await env.anchor([{ data: { order: 42, items: ["a", "b"], customer: { id: 7 } } }, { data: { order: 43 } }])
}, 60_000)
afterAll(async () => {
  await env?.node.stop()
  if (scope) await Effect.runPromise(Scope.close(scope, Exit.void))
})

describe("verifying a bundle with public tools only", () => {
  it("sha256(JCS(data)), StandardMerkleTree.verify, eth_call verify (fetch and viem), the Anchored log, the block", async () => {
    const bundle = record.bundle
    const a = bundle.anchors[0]
    const rpc = async (method: string, params: unknown[]) => {
      const r = await fetch(env.rpcUrl, { method: "POST", headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) })
      return ((await r.json()) as { result: any }).result
    }

    // 1. The hash of the data.
    const hash = createHash("sha256").update(jcs(record.data)).digest("hex")
    expect(hash).toBe(bundle.hash)

    // 2. Off chain: OpenZeppelin's verifier.
    expect(StandardMerkleTree.verify(a.merkleRoot, ["bytes32"], [`0x${hash}`], a.merkleProof)).toBe(true)
    expect(StandardMerkleTree.verify(a.merkleRoot, ["bytes32"], [`0x${"0".repeat(64)}`], a.merkleProof)).toBe(false)

    // 3. On chain, a raw eth_call (what `cast call` or curl sends).
    expect(Number(await rpc("eth_chainId", []))).toBe(a.chainId)
    const data = encodeFunctionData({ abi, functionName: "verify", args: [`0x${hash}`, a.merkleProof, a.merkleRoot] })
    const raw = await rpc("eth_call", [{ to: a.contractAddress, data }, "latest"])
    expect(decodeFunctionResult({ abi, functionName: "verify", data: raw })).toBe(true)
    // ... and with viem's client.
    const client = createPublicClient({ transport: http(env.rpcUrl) })
    expect(await client.readContract({ address: a.contractAddress, abi, functionName: "verify", args: [`0x${hash}`, a.merkleProof, a.merkleRoot] })).toBe(true)
    const [batchId, blockNumber] = await client.readContract({ address: a.contractAddress, abi, functionName: "getAnchor", args: [a.merkleRoot] })
    expect(Number(batchId)).toBe(a.batchId)
    expect(Number(blockNumber)).toBe(a.blockNumber)

    // 4. The stated transaction emitted Anchored(batchId, root) from the contract, in the stated block.
    const receipt = await client.getTransactionReceipt({ hash: a.txHash })
    expect(receipt.blockHash).toBe(a.blockHash)
    const logs = parseEventLogs({ abi, logs: receipt.logs, eventName: "Anchored" })
      .filter((l) => l.address.toLowerCase() === a.contractAddress.toLowerCase())
    expect(logs).toHaveLength(1)
    expect(Number(logs[0]!.args.batchId)).toBe(a.batchId)
    expect(logs[0]!.args.root).toBe(a.merkleRoot)

    // 5. The block is canonical and deep enough.
    const block = await client.getBlock({ blockNumber: BigInt(a.blockNumber) })
    expect(block.hash).toBe(a.blockHash)
    expect(Number(await client.getBlockNumber()) - a.blockNumber + 1).toBeGreaterThanOrEqual(1)

    // Changed data: the contract says no.
    const other = createHash("sha256").update(jcs({ ...record.data, order: 41 })).digest("hex")
    expect(await client.readContract({ address: a.contractAddress, abi, functionName: "verify", args: [`0x${other}`, a.merkleProof, a.merkleRoot] })).toBe(
      false
    )
  }, 30_000)
})
