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
//   `hardhat run` use); `localhost` is a node on http://127.0.0.1:8545 (anvil, hardhat node).
//
// The node itself never runs Hardhat: it deploys src/evm/AnchorRegistry.artifact.json, built
// by `npm run build:contract` with the same compiler and settings (src/evm/solc-settings.ts).
import hardhatViem from "@nomicfoundation/hardhat-viem"
import { defineConfig } from "hardhat/config"
import { createRequire } from "node:module"
import { SOLC_SETTINGS, SOLC_VERSION } from "./src/evm/solc-settings.ts"

const require = createRequire(import.meta.url)

const compiler = {
  version: SOLC_VERSION,
  path: require.resolve("solc/soljson.js"),
  settings: SOLC_SETTINGS
}

export default defineConfig({
  plugins: [hardhatViem],
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
      url: "http://127.0.0.1:8545"
    }
  }
})
