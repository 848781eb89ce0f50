// Hardhat 3 configuration for the anchord EVM contract (contracts/AnchorRegistry.sol).
//
// - The compiler is the local npm `solc` package (solcjs, `soljson.js`): Hardhat uses a
//   compiler given by `path` as is and never downloads one (see
//   node_modules/hardhat/src/internal/builtin-plugins/solidity/solidity-hooks.ts: compilers
//   with a `path` are skipped by the downloader).
// - Sources are the `.sol` files under contracts/. Hardhat only ever picks files ending in
//   `.sol`, so the Fabric chaincode in contracts/fabric/ (TypeScript) is not touched.
//   `*.t.sol` files under contracts/ are Solidity tests (`npm run test:contracts`).
// - Networks: `default` is an in-process EDR chain (the one `hardhat test solidity` and
//   `hardhat run` use); `localhost` is a node at ANCHORD_RPC_URL, default http://127.0.0.1:8545
//   (anvil, `hardhat node --port N`: ANCHORD_RPC_URL=http://127.0.0.1:N), read from the
//   environment so a chain on any port works; `sepolia` is an example of a public network whose
//   URL and deployer key are configuration variables (environment or `npx hardhat keystore set`),
//   resolved only when that network is used.
// - Ignition (`npx hardhat ignition deploy ignition/modules/AnchorRegistry.ts --network …`) and
//   hardhat-verify (`npx hardhat verify --network sepolia <address>`): docs/contract.md.
//
// The node itself never runs Hardhat: it deploys src/evm/AnchorRegistry.artifact.json, built
// by `npm run build:contract` with the same compiler and settings (src/evm/solc-settings.ts).
import hardhatIgnitionViem from "@nomicfoundation/hardhat-ignition-viem"
import hardhatVerify from "@nomicfoundation/hardhat-verify"
import hardhatViem from "@nomicfoundation/hardhat-viem"
import { configVariable, defineConfig } from "hardhat/config"
import { createRequire } from "node:module"
import { SOLC_SETTINGS, SOLC_VERSION } from "./src/evm/solc-settings.ts"

const require = createRequire(import.meta.url)

const compiler = {
  version: SOLC_VERSION,
  path: require.resolve("solc/soljson.js"),
  settings: SOLC_SETTINGS
}

export default defineConfig({
  plugins: [hardhatViem, hardhatIgnitionViem, hardhatVerify],
  solidity: {
    profiles: {
      default: compiler,
      production: compiler
    }
  },
  paths: {
    sources: { solidity: ["contracts"] }
  },
  networks: {
    default: {
      type: "edr-simulated",
      chainType: "l1"
    },
    localhost: {
      type: "http",
      chainType: "l1",
      url: process.env.ANCHORD_RPC_URL || "http://127.0.0.1:8545"
    },
    sepolia: {
      type: "http",
      chainType: "l1",
      url: configVariable("SEPOLIA_RPC_URL"),
      accounts: [configVariable("SEPOLIA_PRIVATE_KEY")]
    }
  },
  verify: {
    etherscan: { apiKey: configVariable("ETHERSCAN_API_KEY") }
  }
})
