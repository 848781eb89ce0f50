/**
 * EVM anchoring: the EVM implementation of the chain seam (src/anchoring/AnchorChain.ts), an
 * AnchorRegistry contract over JSON-RPC, and the layer that supervises one leader-elected pipeline per
 * configured network (src/anchoring/Pipeline.ts: advisory lock, batcher, loops, NetworkHealth):
 *
 * - batcher + chain writer (src/evm/writer.ts) in one fiber;
 * - chain watcher (src/evm/watcher.ts): `Anchored` logs by ranged eth_getLogs from a cursor kept in
 *   PostgreSQL, reorg detection by block hash, confirmation at the configured depth.
 */
import { Effect, Layer, Schedule } from "effect"
import type { SqlError } from "effect/sql"
import type { AnchorChain } from "../anchoring/AnchorChain.ts"
import { BatchStore } from "../anchoring/BatchStore.ts"
import { NetworkHealth } from "../anchoring/NetworkHealth.ts"
import { superviseNetworks } from "../anchoring/Pipeline.ts"
import { makeChain } from "./chain.ts"
import { type EvmNetworkConfig, EvmNetworks } from "./config.ts"
import { EvmError, RpcUnavailable, WrongChain } from "./errors.ts"
import { EvmStore } from "./EvmStore.ts"
import { makeWatcher } from "./watcher.ts"
import { makeWriter } from "./writer.ts"

/** The EVM implementation of the chain seam. */
export const evmChain = (network: EvmNetworkConfig): AnchorChain<EvmError | SqlError.SqlError, BatchStore | EvmStore | NetworkHealth> => ({
  chainType: "evm",
  target: {
    networkId: network.networkId,
    batchMaxSize: network.batchMaxSize,
    batchWindowMs: network.batchWindowMs,
    meta: { chainType: "evm", chainId: network.chainId, contractAddress: network.contractAddress }
  },
  isUnavailable: (e) => e instanceof EvmError && e.reason instanceof RpcUnavailable,
  connect: Effect.gen(function*() {
    const health = yield* NetworkHealth
    const chain = makeChain(network)
    const chainId = yield* chain.chainId.pipe(
      Effect.tapError((e) => health.update(network.networkId, { rpc: "down", lastError: e.message })),
      Effect.retry(Schedule.spaced("1 second"))
    )
    yield* health.update(network.networkId, { rpc: "up" })
    if (chainId !== network.chainId) {
      return yield* new EvmError({
        networkId: network.networkId,
        operation: "eth_chainId",
        reason: new WrongChain({ message: `endpoint is chain ${chainId}, configured ${network.chainId}` })
      })
    }
    const writer = yield* makeWriter(chain)
    const watch = yield* makeWatcher(chain)
    return { submit: writer.tick, watch, watchPeriod: `${network.pollIntervalMs} millis` }
  })
})

/** One leader-elected pipeline per configured EVM network, for as long as the layer lives. */
export const layer = Layer.effectDiscard(Effect.gen(function*() {
  const { networks } = yield* EvmNetworks
  yield* superviseNetworks("evm", networks, evmChain,
    "no EVM network configured (EVM_NETWORKS): this node anchors no EVM records (refused with CHAIN_NOT_CONFIGURED unless EVM_TEST_NETWORK_ID / EVM_LIVE_NETWORK_ID name a network another node serves)")
})).pipe(Layer.provide(EvmStore.layer.pipe(Layer.provideMerge(BatchStore.layer))))
