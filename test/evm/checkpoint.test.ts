// AnchorRegistry's transparency-log checkpoints on a throwaway anvil, deployed from the committed
// artifact and driven with viem: a chain of checkpoints with real RFC 9162 consistency proofs, the
// refusals as a client decodes them, and the gas of a checkpointed batch by log size (docs/contract.md).
//   npx vitest run test/evm/checkpoint.test.ts
import { createHash, randomBytes } from "node:crypto"
import { BaseError, ContractFunctionRevertedError, createPublicClient, createWalletClient, http, parseEventLogs, type Hex, type PublicClient } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { anchorRegistryAbi, deployAnchorRegistry } from "../../src/evm/deploy.ts"
import { toHex } from "../../src/anchoring/rfc9162.ts"
import { consistencyProof, consistencyProofLength, logRoot, rootsFromConsistencyProof } from "../support/consistency.ts"
import { startAnvil, type Anvil } from "./anvil.ts"

const hx = (bytes: Uint8Array): Hex => `0x${toHex(bytes)}`
const random32 = (): Hex => hx(randomBytes(32))
const records = (count: number): Array<Uint8Array> =>
  Array.from({ length: count }, (_, i) => new Uint8Array(createHash("sha256").update(`record:${i}`).digest()))

let anvil: Anvil
let key: Hex
let publicClient: PublicClient

beforeAll(async () => {
  anvil = await startAnvil()
  key = await anvil.fundedKey()
  publicClient = createPublicClient({ transport: http(anvil.rpcUrl) })
}, 30_000)

afterAll(async () => {
  await anvil?.stop()
})

/** A fresh registry and a sender for it. */
async function registry() {
  const deployment = await deployAnchorRegistry({ rpcUrl: anvil.rpcUrl, privateKey: key })
  const chain = {
    id: deployment.chainId,
    name: "anvil",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [anvil.rpcUrl] } }
  }
  const wallet = createWalletClient({ account: privateKeyToAccount(key), transport: http(anvil.rpcUrl), chain })
  const address = deployment.address
  type Args = readonly [Hex, number, Hex, bigint, Hex, ReadonlyArray<Hex>]
  const send = async (functionName: "anchorWithCheckpoint" | "anchorWithLogRoot", args: Args | readonly [Hex, number, Hex]) => {
    const hash = await wallet.writeContract({ address, abi: anchorRegistryAbi, functionName, args: args as never, account: wallet.account, chain })
    const receipt = await publicClient.waitForTransactionReceipt({ hash })
    expect(receipt.status).toBe("success")
    const tx = await publicClient.getTransaction({ hash })
    return { receipt, calldataBytes: (tx.input.length - 2) / 2 }
  }
  const refusal = async (args: Args): Promise<{ name?: string; args?: ReadonlyArray<unknown> }> => {
    try {
      await publicClient.simulateContract({ address, abi: anchorRegistryAbi, functionName: "anchorWithCheckpoint", args, account: wallet.account })
      return {}
    } catch (e) {
      const revert = e instanceof BaseError ? e.walk((x) => x instanceof ContractFunctionRevertedError) : undefined
      if (!(revert instanceof ContractFunctionRevertedError)) throw e
      return { name: revert.data?.errorName, args: revert.data?.args }
    }
  }
  const checkpoint = () => publicClient.readContract({ address, abi: anchorRegistryAbi, functionName: "checkpoint" })
  return { send, refusal, checkpoint }
}

describe("AnchorRegistry checkpoints on anvil", () => {
  it("keeps a chain of checkpoints with real consistency proofs, and refuses stale or forged ones", async () => {
    const { send, refusal, checkpoint } = await registry()
    const leaves = records(40)
    const sizes = [0, 1, 3, 4, 8, 13, 32, 33, 40]
    for (const [i, n] of sizes.slice(1).entries()) {
      const m = sizes[i]!
      const proof = m === 0 ? [] : consistencyProof(leaves.slice(0, n), m).map(hx)
      const newRoot = hx(logRoot(leaves, 0, n))
      const { receipt } = await send("anchorWithCheckpoint", [random32(), n - m, hx(logRoot(leaves, m, n)), BigInt(m), newRoot, proof])
      const logs = parseEventLogs({ abi: anchorRegistryAbi, logs: receipt.logs })
      expect(logs.map((l) => l.eventName)).toEqual(["Anchored", "LogRootAnchored", "Checkpoint"])
      expect(logs[2]!.args).toEqual({ batchId: BigInt(i + 1), size: BigInt(n), root: newRoot })
      expect(await checkpoint()).toEqual([BigInt(n), newRoot])
    }
    const stored = hx(logRoot(leaves))
    const proof = consistencyProof(leaves, 33).map(hx)
    expect(await refusal([random32(), 7, random32(), 33n, stored, proof])).toEqual({ name: "CheckpointMismatch", args: [40n] })
    const forged = consistencyProof([...leaves, ...records(41).slice(40)], 40).map(hx)
    forged[0] = random32()
    expect(await refusal([random32(), 1, random32(), 40n, hx(logRoot([...leaves, ...records(41).slice(40)])), forged]))
      .toEqual({ name: "InconsistentCheckpoint", args: undefined })
    expect(await checkpoint()).toEqual([40n, stored])
  }, 60_000)

  it("measures the gas of a checkpointed batch of 1,000 records at log sizes 1 to 10^9", async () => {
    const batch = 1000
    const rows: Array<string> = []
    const bounds: Array<[number, number]> = []
    for (const m of [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000, 2 ** 30, 2 ** 31 - 1]) {
      const n = m + batch
      // Any hashes of the right count; the contract's check only needs the roots they imply.
      const proof = Array.from({ length: consistencyProofLength(m, n) }, () => randomBytes(32))
      const roots = rootsFromConsistencyProof(m, n, proof, randomBytes(32))!
      const { send, checkpoint } = await registry()
      const first = await send("anchorWithCheckpoint", [random32(), m, hx(roots.oldRoot), 0n, hx(roots.oldRoot), []])
      const plain = await send("anchorWithLogRoot", [random32(), batch, random32()])
      const checked = await send("anchorWithCheckpoint", [random32(), batch, random32(), BigInt(m), hx(roots.newRoot), proof.map(hx)])
      expect(await checkpoint()).toEqual([BigInt(n), hx(roots.newRoot)])
      const gas = Number(checked.receipt.gasUsed)
      const added = gas - Number(plain.receipt.gasUsed)
      const cells = [m, proof.length, checked.calldataBytes, gas, `+${added.toLocaleString("en")}`, (gas / batch).toFixed(1), first.receipt.gasUsed]
      rows.push(`| ${cells.map((c) => (typeof c === "string" ? c : c.toLocaleString("en"))).join(" | ")} |`)
      // ~5,000 for the root slot, ~1,650 for the Checkpoint log, ~1,700 calldata, and per proof hash ~510 calldata + ~500 for
      // the two SHA-256 precompile calls; docs/contract.md.
      bounds.push([added, 13_000 + 1_300 * proof.length])
    }
    console.log(["| log size before | proof hashes | calldata bytes | gas | vs anchorWithLogRoot | gas/record | first checkpoint |", ...rows].join("\n"))
    for (const [added, bound] of bounds) expect(added).toBeLessThan(bound)
  }, 120_000)
})
