/**
 * The chain-neutral batch state machine (docs/anchoring-evm.md, "Record states"), one service composed of
 * its parts: cutting batches (./batchCut.ts, over the queue of ./batchQueue.ts), the batch's state changes
 * (./batchStates.ts: confirmation, reorg / reset, giving up), the transitions other stores run inside their
 * own transactions too (./batchTransitions.ts: the Fabric block application, the EVM revival) and reads
 * (./batchReads.ts). Each transition is one transaction of a handful of statements per batch (never one
 * per record); every part's statements are built once, by this layer.
 *
 * SqlError stays typed: the loops log a failure once and try again on their next tick.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { batchCutting, type CutBatch } from "./batchCut.ts"
import { batchReads } from "./batchReads.ts"
import { batchStates } from "./batchStates.ts"
import { batchTransitions } from "./batchTransitions.ts"
import type { Hex } from "./merkle.ts"
import type { BatchMeta, BatchRow, Environment } from "./model.ts"

export class BatchStore extends Context.Service<BatchStore, {
  /**
   * QUEUED records of the network lacking its anchor; with `hybridEnvironment`, also the QUEUED hybrid
   * records of that environment (their `network_id` is the EVM one; this is their Fabric network).
   */
  readonly queueState: (networkId: string, max: number, hybridEnvironment?: Environment) => Effect.Effect<
    { readonly count: number; readonly oldest: Date | null },
    SqlError.SqlError
  >
  /** Claims up to `max` queued records, builds both trees, persists the batch with them and its anchors (the records then read BATCHING), moves the cursor. */
  readonly cutBatch: (networkId: string, max: number, meta: BatchMeta, hybridEnvironment?: Environment) => Effect.Effect<
    CutBatch | undefined,
    SqlError.SqlError
  >
  readonly openBatches: (networkId: string) => Effect.Effect<ReadonlyArray<BatchRow>, SqlError.SqlError>
  readonly findLiveBatchByRoot: (networkId: string, root: Hex) => Effect.Effect<BatchRow | undefined, SqlError.SqlError>
  /** The newest FAILED batch of the network with this root. */
  readonly findFailedBatchByRoot: (networkId: string, root: Hex) => Effect.Effect<BatchRow | undefined, SqlError.SqlError>
  /** A sent transaction abandoned (nonce used elsewhere, read conflict, ...): PENDING again, to be signed anew. */
  readonly resetToPending: (batchId: string, error: string) => Effect.Effect<void, SqlError.SqlError>
  /**
   * The contract / chaincode cannot take the batch's RFC 9162 root (an older deployment): forgotten before
   * the batch is first sent, so it goes out with its root alone and has no receipts.
   */
  readonly clearLogRoot: (batchId: string) => Effect.Effect<void, SqlError.SqlError>
  /** A counted failed attempt. */
  readonly noteError: (batchId: string, error: string) => Effect.Effect<void, SqlError.SqlError>
  /** MINED → CONFIRMED (its anchors with it); records whose required anchors are all confirmed → ANCHORED + events. */
  readonly confirm: (batchId: string) => Effect.Effect<number, SqlError.SqlError>
  /** Reorganised out / abandoned: batch DROPPED, its anchors deleted (its records read QUEUED again, the cursor moved back). */
  readonly drop: (batchId: string, reason: string) => Effect.Effect<number, SqlError.SqlError>
  /** Retries exhausted: batch FAILED, records → FAILED + anchor.failed events; its anchors kept in failed_anchors. */
  readonly fail: (batchId: string, reason: string) => Effect.Effect<number, SqlError.SqlError>
  /** Chain reset (dev chain, dev peer): every live batch of the network dropped, one transaction each; records re-queued. */
  readonly forgetNetwork: (networkId: string) => Effect.Effect<number, SqlError.SqlError>
}>()("anchord/anchoring/BatchStore") {
  static readonly layer = Layer.effect(
    BatchStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const transitions = batchTransitions(sql)
      return BatchStore.of({
        ...batchCutting(sql, transitions),
        ...batchStates(sql, transitions),
        ...batchReads(sql)
      })
    })
  )
}
