import { Config, Effect, Layer } from "effect"
import { BatchStore } from "../anchoring/BatchStore.ts"
import { type FabricNetworkConfig, type FabricNetworkJson, fabricFromJson, FabricNetworks } from "../fabric/config.ts"
import { FabricDevPeer } from "./FabricDevPeer.ts"
import type { DevPeer } from "./fabric-peer/index.ts"
import { FabricStore } from "../fabric/FabricStore.ts"

/** A dev peer as a configured network: exactly what FABRIC_NETWORKS would give for it. */
export const devPeerNetwork = (peer: DevPeer, overrides: Partial<FabricNetworkJson> = {}): FabricNetworkConfig =>
  fabricFromJson({
    networkId: "fabric-dev",
    environment: "test",
    peerEndpoint: peer.address,
    mspId: peer.mspId,
    certPath: peer.clientIdentity.certPath!,
    keyPath: peer.clientIdentity.keyPath!,
    channel: peer.channel,
    chaincode: peer.chaincode,
    ...overrides
  })

/**
 * `anchord dev`: FABRIC_NETWORKS when set; otherwise the dev peer (FabricDevPeer) as network
 * `fabric-dev` (test), with its client identity. A dev peer whose ledger is younger than the
 * database's checkpoint (its data directory was deleted) is a fresh network: its batches are dropped
 * and their records re-queued.
 */
export const FabricDevNetworkLayer = Layer.unwrap(Effect.gen(function*() {
  const configured = yield* FabricNetworks.config
  if (configured._tag === "Some" && configured.value.trim() !== "") return FabricNetworks.layer
  return Layer.effect(FabricNetworks, Effect.gen(function*() {
    const peer = yield* FabricDevPeer
    const window = yield* Config.Int("DEV_BATCH_WINDOW_MS").pipe(Config.withDefault(1000))
    const networkId = "fabric-dev"
    const store = yield* FabricStore
    // At startup a database failure here is fatal (as the node's own migrations would be).
    const checkpoint = yield* store.checkpoint(networkId).pipe(Effect.orDie)
    if (checkpoint !== undefined && checkpoint.blockNumber >= BigInt(peer.blockHeight())) {
      const requeued = yield* store.resetNetwork(networkId).pipe(Effect.orDie)
      yield* Effect.logInfo("fabric dev peer is fresh: records re-queued for anchoring", { requeued })
    }
    return FabricNetworks.of({
      networks: [devPeerNetwork(peer, { networkId, batchWindowMs: window })]
    })
  }).pipe(Effect.provide(FabricStore.layer.pipe(Layer.provide(BatchStore.layer)))))
}))
