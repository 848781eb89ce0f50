/**
 * Fabric anchoring: the Fabric implementation of the chain seam (src/anchoring/AnchorChain.ts), and the
 * layer that supervises one leader-elected pipeline per configured network (src/anchoring/Pipeline.ts:
 * one writer per channel across nodes, the holder of the advisory lock `anchord:fabric:<networkId>`).
 * See docs/anchoring-fabric.md.
 *
 * - batcher + writer (src/fabric/writer.ts) in one fiber;
 * - indexer (src/fabric/indexer.ts), long running, restarted after a failure.
 */
import { Effect, Layer } from "effect"
import type { SqlError } from "effect/sql"
import type { AnchorChain } from "../anchoring/AnchorChain.ts"
import { BatchStore } from "../anchoring/BatchStore.ts"
import type { Environment } from "../anchoring/model.ts"
import { NetworkHealth } from "../anchoring/NetworkHealth.ts"
import { chooseFabricNetwork, fabricOverrides } from "../anchoring/Networks.ts"
import { superviseNetworks } from "../anchoring/Pipeline.ts"
import { makeFabricClient } from "./client.ts"
import { type FabricNetworkConfig, FabricNetworks } from "./config.ts"
import { FabricError, PeerUnavailable } from "./errors.ts"
import { FabricStore } from "./FabricStore.ts"
import { makeIndexer } from "./indexer.ts"
import { makeWriter } from "./writer.ts"

/** The Fabric implementation of the chain seam; `hybridEnvironment`: this network anchors that environment's hybrid records. */
export const fabricChain = (
  config: FabricNetworkConfig,
  hybridEnvironment: Environment | undefined
): AnchorChain<FabricError | SqlError.SqlError, BatchStore | FabricStore | NetworkHealth> => ({
  chainType: "fabric",
  target: {
    networkId: config.networkId,
    batchMaxSize: config.batchMaxSize,
    batchWindowMs: config.batchWindowMs,
    meta: { chainType: "fabric", channel: config.channel, chaincode: config.chaincode },
    hybridEnvironment
  },
  isUnavailable: (e) => e instanceof FabricError && e.reason instanceof PeerUnavailable,
  connect: Effect.gen(function*() {
    const health = yield* NetworkHealth
    const client = yield* makeFabricClient(config)
    yield* health.update(config.networkId, { rpc: "up" })
    const writer = yield* makeWriter(config, client)
    const watch = yield* makeIndexer(config, client)
    return { submit: writer.tick, watch, watchPeriod: `${config.retryIntervalMs} millis` }
  })
})

/** One leader-elected pipeline per configured Fabric network, for as long as the layer lives. */
export const layer = Layer.effectDiscard(Effect.gen(function*() {
  const { networks } = yield* FabricNetworks
  const overrides = yield* fabricOverrides
  yield* superviseNetworks("fabric", networks, (network) => {
    // This network anchors the hybrid records of its environment when it is that environment's Fabric network.
    const chosen = chooseFabricNetwork(networks, network.environment, overrides[network.environment])
    return fabricChain(network, chosen === network.networkId ? network.environment : undefined)
  },
    "no Fabric network configured (FABRIC_NETWORKS): this node anchors no Fabric records (refused with CHAIN_NOT_CONFIGURED unless FABRIC_TEST_NETWORK_ID / FABRIC_LIVE_NETWORK_ID name a network another node serves)")
})).pipe(Layer.provide(FabricStore.layer.pipe(Layer.provideMerge(BatchStore.layer))))
