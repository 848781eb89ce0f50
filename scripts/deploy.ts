// Deploys AnchorRegistry (the committed artifact src/evm/AnchorRegistry.artifact.json) and
// records the deployment in deployments/<networkId>.json.
//
// Any JSON-RPC endpoint, no Hardhat involved (`npm run anchord -- deploy` does the same):
//   EVM_RPC_URL=http://127.0.0.1:8545 EVM_PRIVATE_KEY=0x... [EVM_NETWORK_ID=sepolia] \
//     npx node scripts/deploy.ts
// (`npx node`: the project's Node 24, which runs TypeScript; Node 20 cannot.)
// A network of hardhat.config.ts (deployer = the network's first account; localhost's URL is
// ANCHORD_RPC_URL, default http://127.0.0.1:8545):
//   npx hardhat run scripts/deploy.ts --network localhost
//
// networkId defaults to EVM_NETWORK_ID, else the Hardhat network name, else `chain-<chainId>`.
// DEPLOYMENTS_DIR overrides the output directory (default: deployments/ at the project root).
import path from "node:path"
import { fileURLToPath } from "node:url"
import type { Hex } from "viem"
import { anchorRegistryAbi, anchorRegistryBytecode, deployAnchorRegistry, writeDeploymentRecord, type AnchorRegistryDeployment } from "../src/evm/deploy.ts"

const ROOT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

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
  const file = writeDeploymentRecord(process.env.DEPLOYMENTS_DIR || path.join(ROOT_DIR, "deployments"), networkId, deployment)
  console.log(`AnchorRegistry deployed at ${deployment.address} on chain ${deployment.chainId} (block ${deployment.blockNumber}, tx ${deployment.txHash})`)
  console.log(`wrote ${path.relative(process.cwd(), file) || file}`)
}

await main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error)
  process.exitCode = 1
})
