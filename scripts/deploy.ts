// Deploys AnchorRegistry (the committed artifact src/evm/AnchorRegistry.artifact.json) and
// records the deployment in deployments/<networkId>.json.
//
// Any JSON-RPC endpoint, no Hardhat involved:
//   EVM_RPC_URL=http://127.0.0.1:8545 EVM_PRIVATE_KEY=0x... [EVM_NETWORK_ID=sepolia] \
//     node scripts/deploy.ts
// A network of hardhat.config.ts (deployer = the network's first account):
//   npx hardhat run scripts/deploy.ts --network localhost
//
// networkId defaults to EVM_NETWORK_ID, else the Hardhat network name, else `chain-<chainId>`.
// DEPLOYMENTS_DIR overrides the output directory (default: deployments/ at the project root).
import { mkdirSync, writeFileSync } from "node:fs"
import path from "node:path"
import { fileURLToPath } from "node:url"
import type { Hex } from "viem"
import {
  anchorRegistryAbi,
  anchorRegistryAbiHash,
  anchorRegistryBytecode,
  anchorRegistryBytecodeHash,
  deployAnchorRegistry,
  type AnchorRegistryDeployment
} from "../src/evm/deploy.ts"

const ROOT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

export interface DeploymentRecord extends AnchorRegistryDeployment {
  readonly networkId: string
  readonly contract: "AnchorRegistry"
  readonly abiHash: string
  readonly bytecodeHash: string
  readonly deployedAt: string
}

const NETWORK_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

async function deployWithRpc(rpcUrl: string): Promise<AnchorRegistryDeployment> {
  const privateKey = process.env.EVM_PRIVATE_KEY
  if (privateKey === undefined || !/^0x[0-9a-fA-F]{64}$/.test(privateKey)) {
    throw new Error("EVM_PRIVATE_KEY must be set to a 0x-prefixed 32-byte hex private key")
  }
  return await deployAnchorRegistry({ rpcUrl, privateKey: privateKey as Hex })
}

async function deployWithHardhat(): Promise<AnchorRegistryDeployment & { networkName: string }> {
  const { network } = await import("hardhat")
  const connection = await network.create()
  const [wallet] = await connection.viem.getWalletClients()
  if (wallet === undefined) throw new Error(`network ${connection.networkName} has no accounts`)
  const publicClient = await connection.viem.getPublicClient()
  const txHash = await wallet.deployContract({ abi: anchorRegistryAbi, bytecode: anchorRegistryBytecode })
  const receipt = await publicClient.waitForTransactionReceipt({ hash: txHash })
  if (receipt.status !== "success" || receipt.contractAddress == null) {
    throw new Error(`AnchorRegistry deployment ${txHash} failed`)
  }
  const result = {
    address: receipt.contractAddress,
    blockNumber: Number(receipt.blockNumber),
    txHash,
    chainId: await publicClient.getChainId(),
    deployer: wallet.account.address,
    networkName: connection.networkName
  }
  await connection.close()
  return result
}

async function main(): Promise<void> {
  const rpcUrl = process.env.EVM_RPC_URL
  let deployment: AnchorRegistryDeployment
  let networkName: string | undefined
  if (rpcUrl !== undefined && rpcUrl !== "") {
    deployment = await deployWithRpc(rpcUrl)
  } else {
    const { networkName: name, ...rest } = await deployWithHardhat()
    deployment = rest
    networkName = name
  }

  const networkId = process.env.EVM_NETWORK_ID || networkName || `chain-${deployment.chainId}`
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
  const dir = process.env.DEPLOYMENTS_DIR || path.join(ROOT_DIR, "deployments")
  mkdirSync(dir, { recursive: true })
  const file = path.join(dir, `${networkId}.json`)
  writeFileSync(file, JSON.stringify(record, null, 2) + "\n")
  console.log(`AnchorRegistry deployed at ${record.address} on chain ${record.chainId} (block ${record.blockNumber}, tx ${record.txHash})`)
  console.log(`wrote ${path.relative(process.cwd(), file) || file}`)
}

await main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error)
  process.exitCode = 1
})
