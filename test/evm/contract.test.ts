// AnchorRegistry deployed from the committed artifact to a throwaway anvil, driven with viem:
// on-chain verification of proofs from src/evm/merkle.ts, lookups, errors, gas, deploy script.
//   npx vitest run test/evm/contract.test.ts
import { execFile } from "node:child_process"
import { createHash } from "node:crypto"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { BaseError, ContractFunctionRevertedError, createPublicClient, createWalletClient, encodeFunctionData, http, parseEventLogs, type Hex,
  type PublicClient, type WalletClient } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { anchorRegistryAbi, anchorRegistryAbiHash, deployAnchorRegistry, isAnchorRegistryDeployed,
  type AnchorRegistryDeployment } from "../../src/evm/deploy.ts"
import { buildTree, leafHash } from "../../src/anchoring/merkle.ts"
import { startAnvil, type Anvil } from "./anvil.ts"

const ROOT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")

const hashesFrom = (seed: string, count: number): Array<string> =>
  Array.from({ length: count }, (_, i) => createHash("sha256").update(`${seed}:${i}`).digest("hex"))
const h0x = (h: string): Hex => `0x${h}`

let anvil: Anvil
let deployment: AnchorRegistryDeployment
let publicClient: PublicClient
let wallet: WalletClient & { account: ReturnType<typeof privateKeyToAccount> }

const chainOf = (id: number, rpcUrl: string) => ({
  id,
  name: "anvil",
  nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
  rpcUrls: { default: { http: [rpcUrl] } }
})

const walletFor = (key: Hex) =>
  createWalletClient({ account: privateKeyToAccount(key), transport: http(anvil.rpcUrl), chain: chainOf(deployment.chainId, anvil.rpcUrl) })

const anchor = async (root: Hex, leafCount: number, by = wallet) => {
  const hash = await by.writeContract({
    address: deployment.address,
    abi: anchorRegistryAbi,
    functionName: "anchor",
    args: [root, leafCount],
    account: by.account,
    chain: by.chain
  })
  const receipt = await publicClient.waitForTransactionReceipt({ hash })
  expect(receipt.status).toBe("success")
  return receipt
}

const read = <
  F extends "verify" | "verifyAnchored" | "getAnchor" | "batchCount" | "leafHash" | "verifyProof" | "hasRole" | "ANCHORER_ROLE" | "DEFAULT_ADMIN_ROLE"
>(
  functionName: F,
  args: ReadonlyArray<unknown> = []
) => publicClient.readContract({ address: deployment.address, abi: anchorRegistryAbi, functionName, args } as never) as Promise<unknown>

/** The custom error name of a reverted simulation, or undefined. */
const revertName = async (root: Hex, leafCount: number, key?: Hex): Promise<string | undefined> => {
  try {
    await publicClient.simulateContract({
      address: deployment.address,
      abi: anchorRegistryAbi,
      functionName: "anchor",
      args: [root, leafCount],
      account: key === undefined ? wallet.account : privateKeyToAccount(key)
    })
    return undefined
  } catch (e) {
    const revert = e instanceof BaseError ? e.walk((x) => x instanceof ContractFunctionRevertedError) : undefined
    return revert instanceof ContractFunctionRevertedError ? revert.data?.errorName : `not a revert: ${String(e)}`
  }
}

beforeAll(async () => {
  anvil = await startAnvil()
  const key = await anvil.fundedKey()
  deployment = await deployAnchorRegistry({ rpcUrl: anvil.rpcUrl, privateKey: key })
  publicClient = createPublicClient({ transport: http(anvil.rpcUrl) })
  wallet = walletFor(key)
}, 30_000)

afterAll(async () => {
  await anvil?.stop()
})

describe("AnchorRegistry on anvil", () => {
  it("deploys from the artifact; the deployer is admin and anchorer", async () => {
    expect(deployment.address).toMatch(/^0x[0-9a-fA-F]{40}$/)
    expect(deployment.chainId).toBe(31337)
    expect(deployment.blockNumber).toBeGreaterThan(0)
    expect(await isAnchorRegistryDeployed(anvil.rpcUrl, deployment.address)).toBe(true)
    expect(await isAnchorRegistryDeployed(anvil.rpcUrl, wallet.account.address)).toBe(false)
    const anchorerRole = (await read("ANCHORER_ROLE")) as Hex
    expect(await read("hasRole", [anchorerRole, deployment.deployer])).toBe(true)
    expect(await read("hasRole", [await read("DEFAULT_ADMIN_ROLE"), deployment.deployer])).toBe(true)
  })

  it("verifies proofs from src/evm/merkle.ts on chain with one eth_call", async () => {
    const hashes = hashesFrom("onchain", 57)
    const tree = buildTree(hashes)
    const before = (await read("batchCount")) as bigint
    const receipt = await anchor(tree.root, hashes.length)

    const [event] = parseEventLogs({ abi: anchorRegistryAbi, logs: receipt.logs, eventName: "Anchored" })
    expect(event?.args).toEqual({ batchId: before + 1n, root: tree.root, submitter: wallet.account.address, leafCount: 57 })

    const block = await publicClient.getBlock({ blockNumber: receipt.blockNumber })
    expect(await read("getAnchor", [tree.root])).toEqual([before + 1n, receipt.blockNumber, block.timestamp, 57])

    for (const i of [0, 1, 28, 55, 56]) {
      expect(await read("verify", [h0x(hashes[i]!), tree.proofs[i], tree.root])).toBe(true)
    }
    expect(await read("verifyAnchored", [h0x(hashes[3]!), tree.proofs[3], tree.root])).toEqual([
      true,
      before + 1n,
      receipt.blockNumber,
      block.timestamp,
      57
    ])
    expect(await read("leafHash", [h0x(hashes[0]!)])).toBe(tree.leaves[0])

    // Tampered record hash, tampered proof, unanchored root.
    expect(await read("verify", [h0x(hashes[1]!), tree.proofs[0], tree.root])).toBe(false)
    const badProof = [...tree.proofs[5]!]
    badProof[2] = `0x${"00".repeat(32)}`
    expect(await read("verify", [h0x(hashes[5]!), badProof, tree.root])).toBe(false)
    const other = buildTree(hashesFrom("never-anchored", 8))
    expect(await read("verifyProof", [h0x(hashesFrom("never-anchored", 8)[2]!), other.proofs[2], other.root])).toBe(true)
    expect(await read("verify", [h0x(hashesFrom("never-anchored", 8)[2]!), other.proofs[2], other.root])).toBe(false)
    expect(await read("verifyAnchored", [h0x(hashes[0]!), tree.proofs[0], other.root])).toEqual([false, 0n, 0n, 0n, 0])
    expect(await read("getAnchor", [other.root])).toEqual([0n, 0n, 0n, 0])
  })

  it("verifies a proof from a 10,000-record batch (13-14 proof elements)", async () => {
    const hashes = hashesFrom("big-batch", 10_000)
    const tree = buildTree(hashes)
    await anchor(tree.root, hashes.length)
    const i = 4321
    const args = [h0x(hashes[i]!), tree.proofs[i]!, tree.root] as const
    expect(await read("verify", args)).toBe(true)
    const gas = await publicClient.estimateGas({
      to: deployment.address,
      data: encodeFunctionData({ abi: anchorRegistryAbi, functionName: "verify", args }),
      account: wallet.account
    })
    console.log(`verify() with a ${tree.proofs[i]!.length}-element proof, as a transaction: ${gas} gas (free as eth_call)`)
  })

  it("verifies a single-record batch (root = leaf, empty proof)", async () => {
    const [h] = hashesFrom("single", 1)
    const tree = buildTree([h!])
    expect(tree.root).toBe(leafHash(h!))
    await anchor(tree.root, 1)
    expect(await read("verify", [h0x(h!), [], tree.root])).toBe(true)
  })

  it("batch ids increase by one per anchor", async () => {
    const start = (await read("batchCount")) as bigint
    for (let i = 1n; i <= 3n; i++) {
      const receipt = await anchor(buildTree(hashesFrom(`seq${i}`, 3)).root, 3)
      const [event] = parseEventLogs({ abi: anchorRegistryAbi, logs: receipt.logs, eventName: "Anchored" })
      expect(event?.args.batchId).toBe(start + i)
    }
    expect(await read("batchCount")).toBe(start + 3n)
  })

  it("rejects duplicate roots, the zero root, zero leaves and non-anchorers", async () => {
    const root = buildTree(hashesFrom("dup-root", 4)).root
    await anchor(root, 4)
    expect(await revertName(root, 4)).toBe("RootAlreadyAnchored")
    expect(await revertName(`0x${"00".repeat(32)}`, 4)).toBe("ZeroRoot")
    expect(await revertName(buildTree(hashesFrom("zero-leaves", 2)).root, 0)).toBe("ZeroLeafCount")
    const stranger = await anvil.fundedKey()
    expect(await revertName(buildTree(hashesFrom("stranger", 2)).root, 2, stranger)).toBe("AccessControlUnauthorizedAccount")
  })

  it("anchor() gas does not depend on the leaf count", async () => {
    const gas: Array<{ leafCount: number; gasUsed: bigint }> = []
    for (const leafCount of [1, 100, 1000, 10_000]) {
      const receipt = await anchor(buildTree(hashesFrom(`gas${leafCount}`, 2)).root, leafCount)
      gas.push({ leafCount, gasUsed: receipt.gasUsed })
    }
    console.log(
      "anchor() transaction gas: " +
        gas.map(({ leafCount, gasUsed }) => `leafCount ${leafCount}: ${gasUsed} (${(Number(gasUsed) / leafCount).toFixed(2)}/record)`).join(", ")
    )
    const values = gas.map((g) => Number(g.gasUsed))
    // Only the calldata bytes of leafCount differ (16 gas per non-zero byte).
    expect(Math.max(...values) - Math.min(...values)).toBeLessThanOrEqual(64)
    // Regression guard: 21,000 base + ~700 calldata + 22,100 new root slot + 5,000 counter slot
    // + ~2,100 event + ~850 execution. See docs/contract.md.
    expect(Math.max(...values)).toBeLessThanOrEqual(52_000)
  })

  it("anchorWithLogRoot() adds a constant ~2,000 gas for the RFC 9162 root (calldata + LogRootAnchored log)", async () => {
    const rows: Array<string> = []
    for (const leafCount of [1, 1000, 10_000]) {
      const plain = await anchor(buildTree(hashesFrom(`plain${leafCount}`, 2)).root, leafCount)
      const hash = await wallet.writeContract({
        address: deployment.address,
        abi: anchorRegistryAbi,
        functionName: "anchorWithLogRoot",
        args: [buildTree(hashesFrom(`log${leafCount}`, 2)).root, leafCount, buildTree(hashesFrom(`logroot${leafCount}`, 2)).root],
        account: wallet.account,
        chain: wallet.chain
      })
      const withLog = await publicClient.waitForTransactionReceipt({ hash })
      expect(withLog.status).toBe("success")
      const added = Number(withLog.gasUsed - plain.gasUsed)
      rows.push(`leafCount ${leafCount}: anchor ${plain.gasUsed}, anchorWithLogRoot ${withLog.gasUsed} (+${added})`)
      // 32 calldata bytes (~500) + a LOG2 (1,125) + a few hundred of execution; docs/contract.md.
      expect(added).toBeGreaterThan(1_000)
      expect(added).toBeLessThan(2_600)
    }
    console.log(`anchorWithLogRoot() transaction gas: ${rows.join(", ")}`)
  })
})

describe("scripts/deploy.ts", () => {
  it("deploys with EVM_RPC_URL/EVM_PRIVATE_KEY and writes deployments/<networkId>.json", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "anchord-deployments-"))
    try {
      const key = await anvil.fundedKey()
      const { stdout } = await promisify(execFile)(process.execPath, [path.join(ROOT_DIR, "scripts/deploy.ts")], {
        cwd: ROOT_DIR,
        env: { ...process.env, EVM_RPC_URL: anvil.rpcUrl, EVM_PRIVATE_KEY: key, EVM_NETWORK_ID: "anvil-test", DEPLOYMENTS_DIR: dir },
        timeout: 30_000
      })
      expect(stdout).toContain("AnchorRegistry deployed at")
      const record = JSON.parse(readFileSync(path.join(dir, "anvil-test.json"), "utf8")) as Record<string, unknown>
      expect(record).toMatchObject({
        networkId: "anvil-test",
        contract: "AnchorRegistry",
        chainId: 31337,
        deployer: privateKeyToAccount(key).address,
        abiHash: anchorRegistryAbiHash
      })
      expect(record.txHash).toMatch(/^0x[0-9a-f]{64}$/)
      expect(await isAnchorRegistryDeployed(anvil.rpcUrl, record.address as Hex)).toBe(true)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
