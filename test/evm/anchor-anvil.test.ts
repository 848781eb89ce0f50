// End to end on anvil: HTTP submit → BATCHING → ANCHORED, views, proof bundle verified with
// @openzeppelin/merkle-tree and the contract's verify (eth_call).
//   npx vitest run test/evm/anchor-anvil.test.ts
import { afterAll, beforeAll, describe, it } from "vitest"
import { startAnvil, type Anvil } from "./anvil.ts"
import { anchorSuite, type SuiteChain } from "./suite.ts"

let anvil: Anvil
const chain: SuiteChain = {
  name: "anvil",
  start: async () => {
    anvil = await startAnvil()
    return { rpcUrl: anvil.rpcUrl, privateKey: await anvil.fundedKey(), chainId: 31337 }
  },
  stop: () => anvil.stop()
}

describe("EVM anchoring on anvil", () => {
  anchorSuite(chain, { beforeAll, afterAll, it })
})
