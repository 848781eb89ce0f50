// The end-to-end suite of test/evm/suite.ts on Hardhat's network: the EDR chain of `anchord dev`
// (src/evm/devChain.ts), in process, served over JSON-RPC HTTP.
//   npx vitest run test/evm/anchor-hardhat.test.ts
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, it } from "vitest"
import { serveEdrChain } from "../../src/dev/evmChain.ts"
import { anchorSuite, type SuiteChain } from "./suite.ts"

/** Hardhat's well-known development account #1 (a test key with 10,000 ETH on EDR). */
const HARDHAT_KEY_1 = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d" as const

let scope: Scope.Closeable
const chain: SuiteChain = {
  name: "hardhat",
  start: async () => {
    scope = await Effect.runPromise(Scope.make())
    const server = await Effect.runPromise(Scope.provide(serveEdrChain({ host: "127.0.0.1", port: 0 }), scope))
    return { rpcUrl: server.rpcUrl, privateKey: HARDHAT_KEY_1, chainId: 31337 }
  },
  stop: () => Effect.runPromise(Scope.close(scope, Exit.void))
}

describe("EVM anchoring on Hardhat (EDR)", () => {
  anchorSuite(chain, { beforeAll, afterAll, it })
})
