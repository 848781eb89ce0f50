/**
 * The Fabric writer (docs/anchoring-fabric.md, "Writer"): after each batcher pass, every open batch (up
 * to `maxInFlight` at once) is endorsed (`anchor(root, leafCount, batchId)`), its tx id and signed
 * transaction **persisted**, submitted, and its commit status awaited (`submitAsync` + `getStatus()`,
 * split so the transaction is stored before it leaves the process). VALID → MINED (tx id, block);
 * MVCC_READ_CONFLICT / PHANTOM_READ_CONFLICT → endorsed again at once (counted); a root already
 * anchored → adopted from `lookup`; peer unavailable / deadline → retried with backoff (not counted).
 * A SENT batch found after a restart (or whose status wait failed) is resubmitted from its stored bytes
 * (a duplicate commits as DUPLICATE_TXID; the status reports the first commit).
 */
import { Clock, Effect, Ref } from "effect"
import { BatchStore } from "../anchoring/BatchStore.ts"
import type { BatchRow } from "../anchoring/model.ts"
import { parseBlock } from "./blocks.ts"
import type { FabricClient } from "./client.ts"
import type { FabricNetworkConfig } from "./config.ts"
import { FabricError, InvalidTransaction, MVCC_READ_CONFLICT, PHANTOM_READ_CONFLICT } from "./errors.ts"
import { FabricStore } from "./FabricStore.ts"

/** A refusal that is this batch's alone: backed off, not reported by the loop. */
const quiet = () => Effect.void
/** Endorsement outcomes other than a transaction: the failure was dealt with; the chaincode predates anchorWithLogRoot. */
const HANDLED = "handled" as const
const OLD_CHAINCODE = "old-chaincode" as const

export const makeWriter = Effect.fnUntraced(function*(config: FabricNetworkConfig, client: FabricClient) {
  const batches = yield* BatchStore
  const store = yield* FabricStore
  const log = (message: string, fields: Record<string, unknown>) => Effect.logInfo(message).pipe(Effect.annotateLogs(fields))
  /**
   * Set when the chaincode refused `anchorWithLogRoot` (an older deployment): later batches of this
   * connection go out with `anchor` alone, without a refused endorsement first and a warning each; the
   * EVM writer asks once per connection too. A chaincode upgraded meanwhile is used from the next connection.
   */
  const oldChaincode = yield* Ref.make(false)
  /** Batches not to touch before this time (backoff after a failure), by batch id. */
  const retryAt = new Map<string, number>()
  const backoff = (b: BatchRow, attempts: number) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      retryAt.set(b.id, now + Math.min(30_000, 250 * 2 ** Math.min(attempts, 7)))
    })

  /** Counted failure: FAILED once `maxAttempts` is reached. */
  const failOrRetry = Effect.fn("FabricWriter.failOrRetry")(function*(b: BatchRow, attempts: number, e: FabricError) {
    if (attempts >= config.maxAttempts) {
      const n = yield* batches.fail(b.id, e.message)
      retryAt.delete(b.id)
      return yield* Effect.logError("batch failed").pipe(Effect.annotateLogs({ batchId: b.id, root: b.merkleRoot, records: n, error: e.message }))
    }
    yield* backoff(b, attempts)
    yield* batches.noteError(b.id, e.message)
    yield* Effect.logWarning("batch refused, will retry").pipe(Effect.annotateLogs({ batchId: b.id, attempt: attempts, error: e.message }))
  })

  /** The root is on the ledger already (ours after a crash, or another writer's): record where. */
  const adopt = Effect.fn("FabricWriter.adopt")(function*(b: BatchRow) {
    const found = yield* client.lookup(b.merkleRoot)
    if (found === undefined) return false
    const committed = yield* client.commitStatus(found.txId)
    if (!committed.successful) return false
    const checkpoint = yield* store.checkpoint(config.networkId)
    yield* store.markCommitted(b.id, {
      txId: found.txId,
      blockNumber: committed.blockNumber,
      batchRef: found.batchId,
      anchoredAt: new Date(found.timestamp)
    })
    yield* log("batch found on the ledger", { batchId: b.id, root: b.merkleRoot, txId: found.txId, blockNumber: Number(committed.blockNumber) })
    if (checkpoint !== undefined && checkpoint.blockNumber >= committed.blockNumber) {
      // Its block was indexed before this batch existed: confirm it here, with the block's hash.
      const block = parseBlock(yield* client.block(committed.blockNumber), config.chaincode)
      const n = yield* store.applyAdopted(b.id, block.hash)
      yield* log("batch confirmed", { batchId: b.id, root: b.merkleRoot, txId: found.txId, blockNumber: Number(committed.blockNumber), anchoredRecords: n })
    }
    return true
  })

  /** Commit status of a transaction of this batch: what to do next. */
  const settle = Effect.fn("FabricWriter.settle")(
    function*(b: BatchRow, attempts: number, txId: string, result: Uint8Array | undefined, st: { code: number; blockNumber: bigint; successful: boolean }) {
      if (st.successful) {
        // The chaincode's transaction time when the result carries it (it does), else the node's Clock.
        let anchoredAt = new Date(yield* Clock.currentTimeMillis)
        let batchRef = b.id
        try {
          if (result !== undefined && result.length > 0) {
            const r = JSON.parse(Buffer.from(result).toString("utf8")) as { timestamp?: string; batchId?: string }
            if (r.timestamp) anchoredAt = new Date(r.timestamp)
            if (r.batchId) batchRef = r.batchId
          }
        } catch { /* the indexer has the facts too */ }
        yield* store.markCommitted(b.id, { txId, blockNumber: st.blockNumber, batchRef, anchoredAt })
        retryAt.delete(b.id)
        yield* log("batch committed", { batchId: b.id, root: b.merkleRoot, leafCount: b.leafCount, txId, blockNumber: Number(st.blockNumber),
          attempt: attempts })
        return "done" as const
      }
      if (st.code === MVCC_READ_CONFLICT || st.code === PHANTOM_READ_CONFLICT) {
        yield* batches.resetToPending(b.id, `tx ${txId}: validation code ${st.code} (read conflict)`)
        yield* log("MVCC conflict, endorsing again", { batchId: b.id, root: b.merkleRoot, txId, code: st.code, attempt: attempts })
        return attempts >= config.maxAttempts
          ? yield* failOrRetry(b, attempts, new FabricError({
            networkId: config.networkId,
            operation: "commit",
            reason: new InvalidTransaction({ message: `read conflict after ${attempts} attempts`, code: st.code })
          })).pipe(Effect.as("done" as const))
          : "again" as const
      }
      yield* batches.resetToPending(b.id, `tx ${txId}: validation code ${st.code}`)
      // Invalid for another reason: someone may have anchored the root in between (adopt), else count it.
      if (yield* adopt(b)) return "done" as const
      yield* failOrRetry(b, attempts, new FabricError({
        networkId: config.networkId,
        operation: "commit",
        reason: new InvalidTransaction({ message: `tx ${txId} committed with validation code ${st.code}`, code: st.code })
      }))
      return "done" as const
    }
  )

  /**
   * Not the batch's fault (peer down, deadline, refused credentials, unknown channel or chaincode): keep
   * the batch as it is and try again later, not counted; the loop logs it once and once more on recovery.
   */
  const transient = (b: BatchRow, e: FabricError) =>
    backoff(b, 3).pipe(
      Effect.andThen(Effect.fail(e)),
      // A peer down or refused credentials fail the pass (reported by the loop); these are this batch's alone.
      Effect.catchReasons("FabricError", { AlreadyAnchored: quiet, EndorsementRefused: quiet, InvalidTransaction: quiet, BadBlock: quiet })
    )

  /** A PENDING batch: endorse, persist, submit, settle; again at once after a read conflict. */
  const send = Effect.fn("FabricWriter.send")(function*(b: BatchRow) {
    let attempts = b.attempts
    let logRoot = b.logRoot
    if (logRoot !== null && (yield* Ref.get(oldChaincode))) {
      yield* batches.clearLogRoot(b.id)
      logRoot = null
    }
    for (;;) {
      const endorsed = yield* client.endorseAnchor(b.merkleRoot, b.leafCount, b.id, logRoot).pipe(
        Effect.catchReasons("FabricError", {
          EndorsementRefused: (reason, e) =>
            logRoot !== null && /function that does not exist/.test(reason.message)
              ? Effect.succeed(OLD_CHAINCODE)
              : Effect.as(failOrRetry(b, attempts + 1, e), HANDLED),
          AlreadyAnchored: (_, e) => Effect.flatMap(adopt(b), (adopted) => Effect.as(adopted ? Effect.void : transient(b, e), HANDLED))
        }, (_, e) => Effect.as(transient(b, e), HANDLED))
      )
      if (endorsed === HANDLED) return
      if (endorsed === OLD_CHAINCODE) {
        // An older chaincode, without anchorWithLogRoot: the batch goes out with its root alone (no receipts for it).
        yield* batches.clearLogRoot(b.id)
        yield* Ref.set(oldChaincode, true)
        yield* Effect.logWarning(
          "chaincode has no anchorWithLogRoot: batches are anchored without their RFC 9162 root (no COSE receipts) until it is upgraded"
        ).pipe(Effect.annotateLogs({ networkId: config.networkId, batchId: b.id }))
        logRoot = null
        continue
      }
      const tx = endorsed
      const txId = tx.getTransactionId()
      // Persisted before it leaves the process: after a crash the same transaction is submitted again.
      yield* store.markSent(b.id, { txId, envelope: Buffer.from(tx.getBytes()).toString("base64") })
      attempts++
      yield* Effect.logDebug("batch submitted").pipe(Effect.annotateLogs({ batchId: b.id, root: b.merkleRoot, txId, attempt: attempts }))
      const st = yield* client.submit(tx).pipe(Effect.result)
      if (st._tag === "Failure") return yield* transient(b, st.failure)
      const next = yield* settle(b, attempts, txId, tx.getResult(), st.success)
      if (next === "done") return
    }
  })

  /** A SENT batch (after a restart, or its status wait failed): submit the stored transaction again. */
  const resume = Effect.fn("FabricWriter.resume")(function*(b: BatchRow) {
    if (b.rawTx === null || b.txHash === null) return yield* batches.resetToPending(b.id, "no stored transaction")
    const tx = client.storedTransaction(Buffer.from(b.rawTx, "base64"))
    const st = yield* client.submit(tx).pipe(Effect.result)
    if (st._tag === "Failure") return yield* transient(b, st.failure)
    yield* log("stored transaction resubmitted", { batchId: b.id, txId: b.txHash, code: st.success.code })
    const next = yield* settle(b, b.attempts, b.txHash, tx.getResult(), st.success)
    if (next === "again") {
      const fresh = (yield* batches.openBatches(config.networkId)).find((x) => x.id === b.id)
      if (fresh !== undefined && fresh.state === "PENDING") yield* send(fresh)
    }
  })

  const tick = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const due = (yield* batches.openBatches(config.networkId)).filter((b) => (b.state === "PENDING" || b.state === "SENT") && (retryAt.get(b.id) ?? 0) <= now)
    if (due.length === 0) return
    // Failures of single batches were handled (backoff); a PeerUnavailable one is reported once by the loop.
    // A database failure stops the pass at once.
    const outcomes = yield* Effect.forEach(due, (b) =>
      (b.state === "SENT" ? resume(b) : send(b)).pipe(
        Effect.as(undefined),
        Effect.catchTag("FabricError", (e) => Effect.succeed(e))
      ), { concurrency: config.maxInFlight })
    const failed = outcomes.find((o) => o !== undefined)
    if (failed !== undefined) return yield* failed
  }).pipe(Effect.withSpan("FabricWriter.tick"))
  return { tick }
})
