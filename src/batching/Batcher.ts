/**
 * The batcher of one network: cuts a batch when N records are queued or the oldest queued record
 * is older than the window. Cutting (claim with FOR UPDATE SKIP LOCKED, tree, batch + proofs,
 * records → BATCHING) is one transaction in AnchorStore.cutBatch; the chain writer sends it after.
 */
import { Effect } from "effect"
import type { EvmNetworkConfig } from "../evm/config.ts"
import { AnchorStore } from "./AnchorStore.ts"

export const batcherTick = (network: EvmNetworkConfig, onCut: Effect.Effect<void>) =>
  Effect.gen(function*() {
    const store = yield* AnchorStore
    // Cut as many full batches as are waiting, then one partial batch once the window has passed.
    for (;;) {
      const q = yield* store.queueState(network.networkId, network.batchMaxSize)
      if (q.count === 0) return
      const due = q.count >= network.batchMaxSize ||
        (q.oldest !== null && Date.now() - q.oldest.getTime() >= network.batchWindowMs)
      if (!due) return
      const cut = yield* store.cutBatch(network.networkId, network.batchMaxSize, {
        chainId: network.chainId,
        contractAddress: network.contractAddress
      })
      if (cut === undefined) return
      yield* Effect.logDebug("batch cut").pipe(Effect.annotateLogs({
        networkId: network.networkId,
        batch: cut.batchId,
        root: cut.root,
        leafCount: cut.leafCount,
        ...(cut.joined ? { joinedExistingBatch: true } : {})
      }))
      yield* onCut
      if (cut.leafCount < network.batchMaxSize) return
    }
  })

/** How often the batcher looks at the queue: a quarter of the window, between 50 ms and 1 s. */
export const batcherPeriodMs = (network: EvmNetworkConfig) => Math.max(50, Math.min(1000, Math.floor(network.batchWindowMs / 4)))
