// Deploys AnchorRegistry from the committed artifact (src/evm/AnchorRegistry.artifact.json),
// with viem only: no Hardhat, no compiler at run time. The node calls this at startup for its
// local dev chain; scripts/deploy.ts uses it for any network.
import { createHash } from "node:crypto"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { createPublicClient, createWalletClient, http, keccak256, toHex, type Hex } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { anchorRegistryAbi } from "./AnchorRegistry.abi.ts"
import artifact from "./AnchorRegistry.artifact.json" with { type: "json" }

export { anchorRegistryAbi }

export const anchorRegistryBytecode = artifact.bytecode as Hex

/** sha256 of the ABI JSON, so a deployment file says which interface it was made with. */
export const anchorRegistryAbiHash: string = createHash("sha256").update(JSON.stringify(artifact.abi)).digest("hex")

/** sha256 of the creation bytecode. */
export const anchorRegistryBytecodeHash: string = createHash("sha256").update(artifact.bytecode).digest("hex")

export interface DeployAnchorRegistryOptions {
  /** JSON-RPC endpoint, e.g. http://127.0.0.1:8545. */
  readonly rpcUrl: string
  /** 0x-prefixed 32-byte hex key of the deployer; it becomes admin and anchorer. */
  readonly privateKey: Hex
  /** Confirmations to wait for (default 1). */
  readonly confirmations?: number
  /** Receipt wait timeout in ms (default 120 s). */
  readonly timeoutMs?: number
}

export interface AnchorRegistryDeployment {
  readonly address: Hex
  readonly blockNumber: number
  readonly txHash: Hex
  readonly chainId: number
  readonly deployer: Hex
}

/** Read and write clients for an RPC endpoint, on whatever chain it serves (the deploy tools run against any chain). */
const clientsFor = async (rpcUrl: string, privateKey: Hex) => {
  const account = privateKeyToAccount(privateKey)
  const transport = http(rpcUrl, { retryCount: 2 })
  const publicClient = createPublicClient({ transport })
  const chainId = await publicClient.getChainId()
  const walletClient = createWalletClient({
    account,
    transport,
    chain: {
      id: chainId,
      name: `chain-${chainId}`,
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [rpcUrl] } }
    }
  })
  return { account, publicClient, walletClient, chainId }
}

export async function deployAnchorRegistry(options: DeployAnchorRegistryOptions): Promise<AnchorRegistryDeployment> {
  const { account, publicClient, walletClient, chainId } = await clientsFor(options.rpcUrl, options.privateKey)
  const txHash = await walletClient.deployContract({ abi: anchorRegistryAbi, bytecode: anchorRegistryBytecode })
  const receipt = await publicClient.waitForTransactionReceipt({
    hash: txHash,
    confirmations: options.confirmations ?? 1,
    timeout: options.timeoutMs ?? 120_000
  })
  if (receipt.status !== "success" || receipt.contractAddress == null) {
    throw new Error(`AnchorRegistry deployment ${txHash} failed (status ${receipt.status})`)
  }
  return {
    address: receipt.contractAddress,
    blockNumber: Number(receipt.blockNumber),
    txHash,
    chainId,
    deployer: account.address
  }
}

/**
 * True when `address` holds exactly the AnchorRegistry runtime code of the committed artifact.
 * Lets the node reuse a deployment recorded earlier instead of deploying again.
 */
export async function isAnchorRegistryDeployed(rpcUrl: string, address: Hex): Promise<boolean> {
  const publicClient = createPublicClient({ transport: http(rpcUrl) })
  const code = await publicClient.getCode({ address })
  return code !== undefined && code.toLowerCase() === artifact.deployedBytecode.toLowerCase()
}

export const ANCHORER_ROLE: Hex = keccak256(toHex("ANCHORER_ROLE"))
export const DEFAULT_ADMIN_ROLE: Hex = `0x${"00".repeat(32)}`

/**
 * Grants `role` on the registry at `address` to `account`, sent by `privateKey` (which must hold
 * DEFAULT_ADMIN_ROLE); nothing is sent when the account already holds it. Resolves to whether a
 * transaction was sent.
 */
export async function grantRole(options: {
  readonly rpcUrl: string
  readonly privateKey: Hex
  readonly address: Hex
  readonly role: Hex
  readonly account: Hex
  readonly timeoutMs?: number
}): Promise<boolean> {
  const { publicClient, walletClient } = await clientsFor(options.rpcUrl, options.privateKey)
  const has = await publicClient.readContract({
    address: options.address,
    abi: anchorRegistryAbi,
    functionName: "hasRole",
    args: [options.role, options.account]
  })
  if (has) return false
  const hash = await walletClient.writeContract({
    address: options.address,
    abi: anchorRegistryAbi,
    functionName: "grantRole",
    args: [options.role, options.account]
  })
  const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: options.timeoutMs ?? 120_000 })
  if (receipt.status !== "success") throw new Error(`grantRole ${hash} failed (status ${receipt.status})`)
  return true
}

/** What scripts/deploy.ts and `anchord deploy` write to `deployments/<networkId>.json` (src/evm/deploymentFile.ts reads it). */
export interface DeploymentRecord extends AnchorRegistryDeployment {
  readonly networkId: string
  readonly contract: "AnchorRegistry"
  readonly abiHash: string
  readonly bytecodeHash: string
  readonly deployedAt: string
}

const NETWORK_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

/** Writes `<dir>/<networkId>.json`; returns the file's path. */
export function writeDeploymentRecord(dir: string, networkId: string, deployment: AnchorRegistryDeployment): string {
  if (!NETWORK_ID_RE.test(networkId)) throw new Error(`invalid network id ${JSON.stringify(networkId)}`)
  const record: DeploymentRecord = {
    networkId,
    contract: "AnchorRegistry",
    address: deployment.address,
    chainId: deployment.chainId,
    deployer: deployment.deployer,
    blockNumber: deployment.blockNumber,
    txHash: deployment.txHash,
    abiHash: anchorRegistryAbiHash,
    bytecodeHash: anchorRegistryBytecodeHash,
    deployedAt: new Date().toISOString()
  }
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `${networkId}.json`)
  writeFileSync(file, JSON.stringify(record, null, 2) + "\n")
  return file
}
