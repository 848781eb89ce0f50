// Hardhat Ignition module: gives ANCHORER_ROLE of a deployed AnchorRegistry to another signer (a
// second node's key, a rotated key). Sent by the network's first account, which must hold
// DEFAULT_ADMIN_ROLE.
//
//   npx hardhat ignition deploy ignition/modules/GrantAnchorer.ts --network localhost \
//     --parameters grant.json --deployment-id grant-<name>
//
// grant.json: {"GrantAnchorerModule": {"registry": "0x…", "account": "0x…"}}. Ignition records what
// a deployment id did and refuses to run it again with other parameters: give each grant its own
// `--deployment-id` (the AnchorRegistry deployment itself stays in chain-<chainId>).
import { buildModule } from "@nomicfoundation/hardhat-ignition/modules"
import { ANCHORER_ROLE } from "./AnchorRegistry.ts"

export default buildModule("GrantAnchorerModule", (m) => {
  const registry = m.contractAt("AnchorRegistry", m.getParameter<string>("registry"))
  m.call(registry, "grantRole", [ANCHORER_ROLE, m.getParameter<string>("account")], { id: "GrantAnchorer" })
  return { registry }
})
