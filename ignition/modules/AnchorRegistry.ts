// Hardhat Ignition module: deploys AnchorRegistry (contracts/AnchorRegistry.sol; Hardhat's build is
// byte-identical to the node's artifact src/evm/AnchorRegistry.artifact.json, as the compiler
// settings embed no metadata hash) and gives the admin and anchorer roles to the accounts given.
//
//   npx hardhat ignition deploy ignition/modules/AnchorRegistry.ts --network localhost \
//     [--parameters ignition/parameters.example.json]
//
// Parameters (module "AnchorRegistryModule"): `admin` (DEFAULT_ADMIN_ROLE) and `anchorer`
// (ANCHORER_ROLE, the node's signer), both defaulting to the deployer (the network's first
// account). The constructor makes the deployer admin and anchorer; granting a role an account
// already holds changes nothing (OpenZeppelin AccessControl), so the defaults cost two no-op calls.
// The deployer keeps its roles: docs/contract.md says how to drop them.
//
// The deployment lands in ignition/deployments/chain-<chainId>/deployed_addresses.json, which the
// node reads (EVM_NETWORKS `deployment`, docs/configuration-evm.md).
import { buildModule } from "@nomicfoundation/hardhat-ignition/modules"
import { keccak256, toHex } from "viem"

export const ANCHORER_ROLE = keccak256(toHex("ANCHORER_ROLE"))
export const DEFAULT_ADMIN_ROLE = `0x${"00".repeat(32)}` as const

export default buildModule("AnchorRegistryModule", (m) => {
  const deployer = m.getAccount(0)
  const admin = m.getParameter("admin", deployer)
  const anchorer = m.getParameter("anchorer", deployer)
  const registry = m.contract("AnchorRegistry", [], { from: deployer })
  m.call(registry, "grantRole", [ANCHORER_ROLE, anchorer], { id: "GrantAnchorer", from: deployer })
  m.call(registry, "grantRole", [DEFAULT_ADMIN_ROLE, admin], { id: "GrantAdmin", from: deployer })
  return { registry }
})
