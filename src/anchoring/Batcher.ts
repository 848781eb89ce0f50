/**
 * The batcher of one network: cuts a batch when N records are queued or the oldest queued record
 * is older than the window. Cutting (the queue read from the network's cursor, the batch with its stored trees, its anchors,
 * the cursor moved; the records then read BATCHING, nothing written to them) is one transaction in
 * BatchStore.cutBatch; the chain writer sends it after.
 * The same for every chain: an `AnchorChain` (src/anchoring/AnchorChain.ts) gives its `BatchTarget`.
 */
import { Clock, Effect } from "effect"
import { metricsHandle, observeBatchSize } from "../metrics/metrics.ts"
import { BatchStore } from "./BatchStore.ts"
import type { BatchMeta, Environment } from "./model.ts"

/** What the batcher needs to know about a network. */
export interface BatchTarget {
  readonly networkId: string
  readonly batchMaxSize: number
  readonly batchWindowMs: number
  /** Where its batches go (stored with the batch). */
  readonly meta: BatchMeta
  /** Fabric: the environment whose hybrid records this network anchors (their second anchor). */
  readonly hybridEnvironment?: Environment | undefined
}

/**
 * Cuts what is due; answers how much longer than the window the oldest queued record had waited when the
 * tick began (0 when it had not, or none was queued): the pipeline's lag (AnchoringLag).
 */
export const batcherTick = Effect.fn("Batcher.tick")(function*(network: BatchTarget, onCut: Effect.Effect<void>) {
  const store = yield* BatchStore
  // Cut as many full batches as are waiting, then one partial batch once the window has passed.
  let lockedRetries = 0
  let excess: number | undefined
  for (;;) {
    // The window first (one index step): when the next record has waited a window, cut without counting.
    // (The first by id is not always the oldest: ids order by the second, then by process. So when it has
    // not waited a window, the count's min(created_at) decides.)
    const first = (yield* store.queueState(network.networkId, 1, network.hybridEnvironment)).oldest
    if (first === null) return excess ?? 0
    const now = yield* Clock.currentTimeMillis
    excess ??= Math.max(0, now - first.getTime() - network.batchWindowMs)
    const overdue = now - first.getTime() >= network.batchWindowMs
    const q = overdue
      ? { count: network.batchMaxSize, oldest: first }
      : yield* store.queueState(network.networkId, network.batchMaxSize, network.hybridEnvironment)
    if (q.count === 0) return excess ?? 0
    const due = overdue || q.count >= network.batchMaxSize ||
      (q.oldest !== null && now - q.oldest.getTime() >= network.batchWindowMs)
    if (!due) return excess ?? 0
    const cut = yield* store.cutBatch(network.networkId, network.batchMaxSize, network.meta, network.hybridEnvironment)
    if (cut === undefined) {
      // Every counted record was taken meanwhile (a cut of the same network by a leader that lost its lock): look again shortly.
      if (lockedRetries++ >= 20) return excess ?? 0
      yield* Effect.sleep("25 millis")
      continue
    }
    observeBatchSize(yield* metricsHandle, network.networkId, cut.leafCount)
    yield* Effect.logDebug("batch cut").pipe(Effect.annotateLogs({
      networkId: network.networkId,
      batchId: cut.batchId,
      root: cut.root,
      leafCount: cut.leafCount,
      ...(cut.joined ? { joinedExistingBatch: true } : {})
    }))
    yield* onCut
    // Full, or cut on the window without counting: look at the queue again (what is left may be due too).
    if (cut.leafCount >= network.batchMaxSize || overdue) continue
    // Fewer than counted: some were taken meanwhile. Look again shortly instead of a whole period later.
    if (cut.leafCount < Math.min(q.count, network.batchMaxSize) && lockedRetries++ < 20) {
      yield* Effect.sleep("25 millis")
      continue
    }
    return excess ?? 0
  }
})

/** How often the batcher looks at the queue: a quarter of the window, between 50 ms and 1 s. */
export const batcherPeriodMs = (network: { readonly batchWindowMs: number }) => Math.max(50, Math.min(1000, Math.floor(network.batchWindowMs / 4)))
