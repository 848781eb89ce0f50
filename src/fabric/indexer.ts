/**
 * The Fabric indexer (docs/anchoring-fabric.md, "Indexer"), long running: block events from the
 * checkpoint in PostgreSQL, each block checked (no gap, data hash, previous hash against the stored
 * hash of the block before) and applied in one transaction with the checkpoint (FabricStore.applyBlock:
 * live batches whose root is in a VALID `Anchored` event → CONFIRMED, records → ANCHORED + events).
 * After a crash the stream resumes at checkpoint + 1: no gap, nothing twice.
 */
import { Effect, Stream } from "effect"
import { NetworkHealth } from "../anchoring/NetworkHealth.ts"
import { parseBlock } from "./blocks.ts"
import type { FabricClient } from "./client.ts"
import type { FabricNetworkConfig } from "./config.ts"
import { BadBlock, classify, FabricError } from "./errors.ts"
import { FabricStore } from "./FabricStore.ts"

/** The indexer of one network (services resolved once): runs until the stream fails or ends. */
export const makeIndexer = Effect.fnUntraced(function*(config: FabricNetworkConfig, client: FabricClient) {
  const store = yield* FabricStore
  const health = yield* NetworkHealth
  const streamError = (e: unknown) => new FabricError({ networkId: config.networkId, operation: "blockEvents", reason: classify(e) })
  const badBlock = (message: string) => new FabricError({ networkId: config.networkId, operation: "index", reason: new BadBlock({ message }) })

  return Effect.scoped(Effect.gen(function*() {
    const checkpoint = yield* store.checkpoint(config.networkId)
    let expected = checkpoint === undefined ? BigInt(config.startBlock) : checkpoint.blockNumber + 1n
    let previousHash = checkpoint?.blockHash
    const events = yield* Effect.acquireRelease(
      Effect.tryPromise({ try: () => client.network.getBlockEvents({ startBlock: expected }), catch: streamError }),
      (it) => Effect.sync(() => it.close())
    )
    yield* Effect.logInfo("indexer reading blocks").pipe(Effect.annotateLogs({ fromBlock: Number(expected) }))
    yield* Stream.fromAsyncIterable(events, streamError).pipe(
      Stream.runForEach((raw) =>
        Effect.gen(function*() {
          const block = parseBlock(raw, config.chaincode)
          yield* health.update(config.networkId, { head: block.number })
          if (block.number < expected) return // delivered again: processed already
          if (block.number > expected) return yield* badBlock(`expected block ${expected}, received ${block.number}`)
          if (!block.dataHashOk) return yield* badBlock(`block ${block.number}: data hash does not match its data`)
          if (previousHash !== undefined && block.previousHash !== previousHash) {
            return yield* badBlock(`block ${block.number}: previous hash ${block.previousHash} is not block ${block.number - 1n}'s hash ${previousHash}`)
          }
          const applied = yield* store.applyBlock(config.networkId, {
            number: block.number,
            hash: block.hash,
            lastTxId: block.lastTxId,
            txCount: block.txCount
          }, block.anchors.map((a) => ({ root: a.root, txId: a.txId, batchRef: a.batchId, anchoredAt: a.timestamp })))
          if (applied.batches > 0) {
            yield* Effect.logInfo("batches confirmed").pipe(Effect.annotateLogs({
              blockNumber: Number(block.number),
              blockHash: block.hash,
              batches: applied.batches,
              anchoredRecords: applied.records,
              txIds: block.anchors.map((a) => a.txId)
            }))
          }
          expected = block.number + 1n
          previousHash = block.hash
        })
      )
    )
    return yield* badBlock("block event stream ended")
  })).pipe(Effect.withSpan("FabricIndexer.run"))
})
