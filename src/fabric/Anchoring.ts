/**
 * Fabric anchoring: the Fabric implementation of the chain seam (src/batching/AnchorChain.ts), one
 * leader-elected pipeline per configured network (one writer per channel across nodes: the holder of
 * the advisory lock `anchord:fabric:<networkId>`). See docs/anchoring-fabric.md.
 *
 * - writer (after each batcher pass): for each open batch, up to `maxInFlight` at once: endorse
 *   `anchor(root, leafCount, batchId)`, **persist the tx id and the signed transaction**, submit,
 *   wait for the commit status (`submitAsync` + `getStatus()`, split so the transaction is stored
 *   before it leaves the process). VALID → MINED (tx id, block); MVCC_READ_CONFLICT /
 *   PHANTOM_READ_CONFLICT → endorsed again at once (counted); a root already anchored → adopted
 *   from `lookup`; peer unavailable / deadline → retried with backoff (not counted). A SENT batch
 *   found after a restart (or whose status wait failed) is resubmitted from its stored bytes (a
 *   duplicate commits as DUPLICATE_TXID; the status reports the first commit).
 * - indexer (long running): block events from the checkpoint in PostgreSQL; each block is checked
 *   (data hash, previous hash against the checkpoint's hash, no gap) and applied in one transaction
 *   with the checkpoint: live batches whose root is in a VALID `Anchored` event → CONFIRMED, records
 *   → ANCHORED + events. After a crash the stream resumes at checkpoint + 1: no gap, nothing twice.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { type AnchorChain, makeStatus, type NetworkStatus, runAnchorChain } from "../anchoring/AnchorChain.ts"
import { AnchorStore, type BatchRow } from "../anchoring/AnchorStore.ts"
import { chooseFabricNetwork, fabricOverrides } from "../anchoring/Networks.ts"
import { parseBlock } from "./blocks.ts"
import { type FabricClient, makeFabricClient } from "./client.ts"
import { type FabricNetworkConfig, FabricNetworks } from "./config.ts"
import { BadBlock, classify as classifyReason, FabricError, InvalidTransaction, MVCC_READ_CONFLICT, PHANTOM_READ_CONFLICT } from "./errors.ts"

export class FabricAnchoring extends Context.Service<FabricAnchoring, {
  readonly status: ReadonlyArray<NetworkStatus>
}>()("anchord/fabric/FabricAnchoring") {
  /** Starts one leader-elected pipeline per configured Fabric network. */
  static readonly layer = Layer.effect(
    FabricAnchoring,
    Effect.gen(function*() {
      const { networks } = yield* FabricNetworks
      const overrides = yield* fabricOverrides
      const statuses: Array<NetworkStatus> = []
      if (networks.length === 0) {
        yield* Effect.logWarning("no Fabric network configured (FABRIC_NETWORKS): Fabric and hybrid records stay QUEUED")
      }
      for (const network of networks) {
        const status = makeStatus(network.networkId)
        statuses.push(status)
        // This network anchors the hybrid records of its environment when it is that environment's Fabric network.
        const chosen = chooseFabricNetwork(networks, network.environment, overrides[network.environment])
        const hybridEnvironment = chosen === network.networkId ? network.environment : undefined
        yield* runAnchorChain(fabricChain(network, status, hybridEnvironment), status).pipe(Effect.forkScoped)
      }
      return FabricAnchoring.of({ status: statuses })
    })
  ).pipe(Layer.provide(AnchorStore.layer))
}

export const fabricChain = (
  config: FabricNetworkConfig,
  status: NetworkStatus,
  hybridEnvironment: "test" | "live" | undefined
): AnchorChain<FabricError> => ({
  chainType: "fabric",
  target: {
    networkId: config.networkId,
    batchMaxSize: config.batchMaxSize,
    batchWindowMs: config.batchWindowMs,
    meta: { chainType: "fabric", channel: config.channel, chaincode: config.chaincode },
    hybridEnvironment
  },
  isUnavailable: (e) => e instanceof FabricError && e.reason._tag === "PeerUnavailable",
  connect: Effect.gen(function*() {
    const client = yield* makeFabricClient(config)
    status.rpc = "up"
    const writer = yield* makeWriter(config, client)
    return { submit: writer.tick, watch: indexer(config, client, status), watchPeriod: `${config.retryIntervalMs} millis` }
  })
})

// ---------------------------------------------------------------------------------------------
// Writer

const makeWriter = (config: FabricNetworkConfig, client: FabricClient) =>
  Effect.gen(function*() {
    const store = yield* AnchorStore
    const log = (message: string, fields: Record<string, unknown>) => Effect.logInfo(message).pipe(Effect.annotateLogs(fields))
    /** Batches not to touch before this time (backoff after a failure), by batch id. */
    const retryAt = new Map<string, number>()
    const backoff = (b: BatchRow, attempts: number) =>
      Effect.map(Clock.currentTimeMillis, (now) => { retryAt.set(b.id, now + Math.min(30_000, 250 * 2 ** Math.min(attempts, 7))) })

    /** Counted failure: FAILED once `maxAttempts` is reached. */
    const failOrRetry = Effect.fn("FabricWriter.failOrRetry")(function*(b: BatchRow, attempts: number, e: FabricError) {
      if (attempts >= config.maxAttempts) {
        const n = yield* store.fail(b.id, e.message)
        retryAt.delete(b.id)
        return yield* Effect.logError("batch failed").pipe(Effect.annotateLogs({ batchId: b.id, root: b.merkleRoot, records: n, error: e.message }))
      }
      yield* backoff(b, attempts)
      yield* store.noteError(b.id, e.message)
      yield* Effect.logWarning("batch refused, will retry").pipe(Effect.annotateLogs({ batchId: b.id, attempt: attempts, error: e.message }))
    })

    /** The root is on the ledger already (ours after a crash, or another writer's): record where. */
    const adopt = Effect.fn("FabricWriter.adopt")(function*(b: BatchRow) {
      const found = yield* client.lookup(b.merkleRoot)
      if (found === undefined) return false
      const committed = yield* client.commitStatus(found.txId)
      if (!committed.successful) return false
      const checkpoint = yield* store.fabricCheckpoint(config.networkId)
      yield* store.markFabricCommitted(b.id, {
        txId: found.txId, blockNumber: committed.blockNumber, batchRef: found.batchId, anchoredAt: new Date(found.timestamp)
      })
      yield* log("batch found on the ledger", { batchId: b.id, root: b.merkleRoot, txId: found.txId, blockNumber: Number(committed.blockNumber) })
      if (checkpoint !== undefined && checkpoint.blockNumber >= committed.blockNumber) {
        // Its block was indexed before this batch existed: confirm it here, with the block's hash.
        const block = parseBlock(yield* client.block(committed.blockNumber), config.chaincode)
        const n = yield* store.applyFabricAdopted(b.id, block.hash)
        yield* log("batch confirmed", { batchId: b.id, root: b.merkleRoot, txId: found.txId, blockNumber: Number(committed.blockNumber), anchoredRecords: n })
      }
      return true
    })

    /** Commit status of a transaction of this batch: what to do next. */
    const settle = Effect.fn("FabricWriter.settle")(function*(b: BatchRow, attempts: number, txId: string, result: Uint8Array | undefined, st: { code: number; blockNumber: bigint; successful: boolean }) {
      if (st.successful) {
        let anchoredAt = new Date()
        let batchRef = b.id
        try {
          if (result !== undefined && result.length > 0) {
            const r = JSON.parse(Buffer.from(result).toString("utf8")) as { timestamp?: string; batchId?: string }
            if (r.timestamp) anchoredAt = new Date(r.timestamp)
            if (r.batchId) batchRef = r.batchId
          }
        } catch { /* the indexer has the facts too */ }
        yield* store.markFabricCommitted(b.id, { txId, blockNumber: st.blockNumber, batchRef, anchoredAt })
        retryAt.delete(b.id)
        yield* log("batch committed", { batchId: b.id, root: b.merkleRoot, leafCount: b.leafCount, txId, blockNumber: Number(st.blockNumber), attempt: attempts })
        return "done" as const
      }
      if (st.code === MVCC_READ_CONFLICT || st.code === PHANTOM_READ_CONFLICT) {
        yield* store.resetToPending(b.id, `tx ${txId}: validation code ${st.code} (read conflict)`)
        yield* log("MVCC conflict, endorsing again", { batchId: b.id, root: b.merkleRoot, txId, code: st.code, attempt: attempts })
        return attempts >= config.maxAttempts
          ? yield* failOrRetry(b, attempts, new FabricError({
            networkId: config.networkId, operation: "commit",
            reason: new InvalidTransaction({ message: `read conflict after ${attempts} attempts`, code: st.code })
          })).pipe(Effect.as("done" as const))
          : "again" as const
      }
      yield* store.resetToPending(b.id, `tx ${txId}: validation code ${st.code}`)
      // Invalid for another reason: someone may have anchored the root in between (adopt), else count it.
      if (yield* adopt(b)) return "done" as const
      yield* failOrRetry(b, attempts, new FabricError({
        networkId: config.networkId, operation: "commit",
        reason: new InvalidTransaction({ message: `tx ${txId} committed with validation code ${st.code}`, code: st.code })
      }))
      return "done" as const
    })

    /**
     * Not the batch's fault (peer down, deadline, refused credentials, unknown channel or chaincode): keep
     * the batch as it is and try again later, not counted; the loop logs it once and once more on recovery.
     */
    const transient = (b: BatchRow, e: FabricError) =>
      backoff(b, 3).pipe(
        Effect.andThen(e.reason._tag === "PeerUnavailable" || e.reason._tag === "Rejected" ? Effect.fail(e) : Effect.void)
      )

    /** A PENDING batch: endorse, persist, submit, settle; again at once after a read conflict. */
    const send = Effect.fn("FabricWriter.send")(function*(b: BatchRow) {
      let attempts = b.attempts
      for (;;) {
        const endorsed = yield* client.endorseAnchor(b.merkleRoot, b.leafCount, b.id).pipe(Effect.result)
        if (endorsed._tag === "Failure") {
          const e = endorsed.failure
          if (e.reason._tag === "AlreadyAnchored") {
            if (yield* adopt(b)) return
            return yield* transient(b, e)
          }
          if (e.reason._tag === "EndorsementRefused") return yield* failOrRetry(b, attempts + 1, e)
          return yield* transient(b, e)
        }
        const tx = endorsed.success
        const txId = tx.getTransactionId()
        // Persisted before it leaves the process: after a crash the same transaction is submitted again.
        yield* store.markFabricSent(b.id, { txId, envelope: Buffer.from(tx.getBytes()).toString("base64") })
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
      if (b.rawTx === null || b.txHash === null) return yield* store.resetToPending(b.id, "no stored transaction")
      const tx = client.storedTransaction(Buffer.from(b.rawTx, "base64"))
      const st = yield* client.submit(tx).pipe(Effect.result)
      if (st._tag === "Failure") return yield* transient(b, st.failure)
      yield* log("stored transaction resubmitted", { batchId: b.id, txId: b.txHash, code: st.success.code })
      const next = yield* settle(b, b.attempts, b.txHash, tx.getResult(), st.success)
      if (next === "again") {
        const fresh = (yield* store.openBatches(config.networkId)).find((x) => x.id === b.id)
        if (fresh !== undefined && fresh.state === "PENDING") yield* send(fresh)
      }
    })

    const tick = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const due = (yield* store.openBatches(config.networkId)).filter((b) =>
        (b.state === "PENDING" || b.state === "SENT") && (retryAt.get(b.id) ?? 0) <= now
      )
      if (due.length === 0) return
      // Failures of single batches were handled (backoff); a PeerUnavailable one is reported once by the loop.
      const outcomes = yield* Effect.forEach(due, (b) => Effect.result(b.state === "SENT" ? resume(b) : send(b)), {
        concurrency: config.maxInFlight
      })
      const failed = outcomes.find((o) => o._tag === "Failure")
      if (failed !== undefined && failed._tag === "Failure") return yield* failed.failure
    })
    return { tick }
  })

// ---------------------------------------------------------------------------------------------
// Indexer

const indexer = (config: FabricNetworkConfig, client: FabricClient, status: NetworkStatus) =>
  Effect.scoped(Effect.gen(function*() {
    const store = yield* AnchorStore
    const fail = (message: string) =>
      new FabricError({ networkId: config.networkId, operation: "index", reason: new BadBlock({ message }) })
    const checkpoint = yield* store.fabricCheckpoint(config.networkId)
    let expected = checkpoint === undefined ? BigInt(config.startBlock) : checkpoint.blockNumber + 1n
    let previousHash = checkpoint?.blockHash
    const events = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => client.network.getBlockEvents({ startBlock: expected }),
        catch: (e) => new FabricError({ networkId: config.networkId, operation: "blockEvents", reason: classifyReason(e) })
      }),
      (it) => Effect.sync(() => it.close())
    )
    yield* Effect.logInfo("indexer reading blocks").pipe(Effect.annotateLogs({ fromBlock: Number(expected) }))
    const iterator = events[Symbol.asyncIterator]()
    for (;;) {
      const next = yield* Effect.tryPromise({
        try: () => iterator.next(),
        catch: (e) => new FabricError({ networkId: config.networkId, operation: "blockEvents", reason: classifyReason(e) })
      })
      if (next.done) return yield* fail("block event stream ended")
      const block = parseBlock(next.value, config.chaincode)
      status.head = block.number
      if (block.number < expected) continue // delivered again: processed already
      if (block.number > expected) return yield* fail(`expected block ${expected}, received ${block.number}`)
      if (!block.dataHashOk) return yield* fail(`block ${block.number}: data hash does not match its data`)
      if (previousHash !== undefined && block.previousHash !== previousHash) {
        return yield* fail(`block ${block.number}: previous hash ${block.previousHash} is not block ${block.number - 1n}'s hash ${previousHash}`)
      }
      const applied = yield* store.applyFabricBlock(config.networkId, {
        number: block.number, hash: block.hash, lastTxId: block.lastTxId, txCount: block.txCount
      }, block.anchors.map((a) => ({ root: a.root, txId: a.txId, batchRef: a.batchId, anchoredAt: a.timestamp })))
      if (applied.batches > 0) {
        yield* Effect.logInfo("batches confirmed").pipe(Effect.annotateLogs({
          blockNumber: Number(block.number), blockHash: block.hash, batches: applied.batches, anchoredRecords: applied.records,
          txIds: block.anchors.map((a) => a.txId)
        }))
      }
      expected = block.number + 1n
      previousHash = block.hash
    }
  }))
