/**
 * The EVM chain writer (docs/anchoring-evm.md, "Batcher + writer"): after each batcher pass, sends the
 * network's PENDING batches and looks after the SENT ones. Transactions are signed locally and stored
 * (EvmStore.markSent) before they are broadcast, so a crash between send and confirmation neither
 * loses nor double-anchors: on restart the root is looked up with `getAnchor`, the stored raw tx
 * re-broadcast, or the batch sent again. A SENT batch is checked on takeover (every one), when its
 * broadcast was not acknowledged, and after `stuckAfterMs`: root on chain → adopt; nonce used by
 * something else → sign again; tx unknown to the node → re-broadcast; still pending → replace with
 * bumped fees at the same nonce.
 *
 * Its state (next nonce, unacknowledged broadcasts, backoffs) lives as long as the leadership: a new
 * leader starts from the chain.
 */
import { Clock, Effect } from "effect"
import type { Hex } from "viem"
import { BatchStore } from "../anchoring/BatchStore.ts"
import type { AssignedRange } from "../translog/LogStore.ts"
import type { Chain, CheckpointArgs, Eip1559Tx } from "./chain.ts"
import { EvmError, Reverted } from "./errors.ts"
import { type EvmBatchRow, EvmStore, type SentTransaction } from "./EvmStore.ts"
import { annotateSampled } from "../tracing/attributes.ts"

const bumped = (value: bigint, percent: number) => value * BigInt(100 + percent) / 100n + 1n
const maxBig = (a: bigint, b: bigint) => a > b ? a : b

const hexOf = (b: Uint8Array) => `0x${Buffer.from(b).toString("hex")}` as Hex
const checkpointArgs = (r: AssignedRange): CheckpointArgs => ({
  oldSize: r.oldSize,
  newLogRoot: hexOf(r.newRoot),
  consistency: r.consistency.map(hexOf)
})
/**
 * Gas a checkpoint adds to `anchorWithLogRoot` (docs/contract.md: ~25,400 for the first, ~11,600 plus
 * ~1,200-1,400 per proof hash after): the estimate is made without it, the proof not being known yet.
 */
const checkpointGas = (proofLength: number) => 30_000n + 2_000n * BigInt(proofLength)

export const makeWriter = Effect.fnUntraced(function*(chain: Chain) {
  const batches = yield* BatchStore
  const store = yield* EvmStore
  const network = chain.config
  const log = (message: string, fields: Record<string, unknown>) => Effect.logInfo(message).pipe(Effect.annotateLogs(fields))
  let nextNonce = 0
  /** SENT batches whose broadcast has not been acknowledged by the node (re-broadcast each tick). */
  const unacknowledged = new Set<string>()
  /** First pass after taking leadership: every SENT batch is checked against the chain. */
  let recovering = true

  /** The root is on chain already (our earlier tx, or a re-mined one): record where, from its log. */
  const adopt = Effect.fn("EvmWriter.adopt")(function*(b: EvmBatchRow, blockNumber: bigint) {
    const logs = yield* chain.anchoredLogs(blockNumber, blockNumber, b.merkleRoot)
    const found = logs.find((l) => l.root === b.merkleRoot.toLowerCase())
    if (found === undefined) return yield* store.markAdopted(b.id)
    const block = yield* chain.block(found.blockNumber)
    const receipt = yield* chain.receipt(found.txHash)
    yield* store.markMined(b.id, {
      txHash: found.txHash,
      chainBatchId: found.chainBatchId,
      blockNumber: found.blockNumber,
      blockHash: found.blockHash,
      anchoredAt: new Date(Number(block?.timestamp ?? 0n) * 1000),
      gasUsed: receipt?.gasUsed ?? null
    })
    unacknowledged.delete(b.id)
    yield* log("batch found on chain", { batchId: b.id, root: b.merkleRoot, txHash: found.txHash, blockNumber: Number(found.blockNumber) })
  })

  /** The node says the root is anchored: adopt it once mined; anchored in the pending state only, a tx of ours is in the pool (wait). */
  const adoptIfMined = (b: EvmBatchRow) => Effect.flatMap(chain.getAnchor(b.merkleRoot), (x) => x === undefined ? Effect.void : adopt(b, x.blockNumber))

  /** Batches that were refused: not tried again before this time (exponential, 250 ms .. 60 s). */
  const retryAt = new Map<string, number>()
  /** Batches sent back to PENDING by a log cut during this tick: their rows read at its start are stale. */
  const rewound = new Set<string>()

  /**
   * The batch goes back: the network's log is cut at its range (src/translog) and every later batch sent with
   * a range goes back to PENDING, to be signed again at the new head (its transaction in flight reverts).
   */
  const rewind = Effect.fn("EvmWriter.rewind")(function*(b: EvmBatchRow, why: string, uncountSelf = false) {
    const later = yield* store.rewindLog(b.id, `log cut at batch ${b.id}: ${why}`, uncountSelf)
    if (uncountSelf) unacknowledged.delete(b.id)
    for (const id of later) {
      rewound.add(id)
      unacknowledged.delete(id)
      retryAt.delete(id)
    }
    if (later.length > 0) {
      yield* Effect.logWarning("log cut: later batches to be signed again").pipe(Effect.annotateLogs({ batchId: b.id, later, reason: why }))
    }
  })
  const resetToPending = (b: EvmBatchRow, why: string) => Effect.andThen(rewind(b, why), batches.resetToPending(b.id, why))
  const failBatch = (b: EvmBatchRow, why: string) => Effect.andThen(rewind(b, why), batches.fail(b.id, why))
  const failOrRetry = Effect.fn("EvmWriter.failOrRetry")(function*(b: EvmBatchRow, e: EvmError) {
    retryAt.set(b.id, (yield* Clock.currentTimeMillis) + Math.min(60_000, 250 * 2 ** b.attempts))
    if (b.attempts + 1 >= network.maxAttempts) {
      const n = yield* failBatch(b, e.message)
      unacknowledged.delete(b.id)
      yield* Effect.logError("batch failed").pipe(Effect.annotateLogs({ batchId: b.id, root: b.merkleRoot, records: n, error: e.message }))
    } else {
      yield* batches.noteError(b.id, e.message)
    }
  })

  let checkpointWarned = false
  /** Whether batches go out with the log's checkpoint; a contract without `anchorWithCheckpoint` keeps no log (said once). */
  const checkpointSupported = Effect.tap(chain.supportsCheckpoint, (ok) =>
    ok || checkpointWarned ? Effect.void : Effect.logWarning(
      "contract has no anchorWithCheckpoint: batches anchored without the transparency log's checkpoint (no log for this network); deploy the current AnchorRegistry"
    ).pipe(
      Effect.annotateLogs({ networkId: network.networkId }),
      Effect.tap(() => Effect.sync(() => (checkpointWarned = true)))
    ))

  let divergedWarned = false
  /**
   * The contract's checkpoint is one of this network's log (the end of one of its ranges): else the chain's log
   * was grown from another database and every checkpoint from this one would revert, so batches go out
   * without one (said once), outside the log, rather than not at all.
   */
  const chainLogIsOurs = Effect.gen(function*() {
    const onChain = yield* chain.checkpoint
    const ok = yield* store.logAgrees(network.networkId, onChain.size, Buffer.from(onChain.root.slice(2), "hex"))
    if (!ok && !divergedWarned) {
      divergedWarned = true
      yield* Effect.logError(
        "the contract's transparency log is not this node's (another database, or a restore): batches anchored without checkpoints"
      ).pipe(Effect.annotateLogs({ networkId: network.networkId, chainLogSize: onChain.size }))
    }
    return ok
  })

  const signAndStore = Effect.fn("EvmWriter.signAndStore")(function*(b: EvmBatchRow, logRoot: Hex | null, tx: Eip1559Tx) {
    const signed = yield* chain.signAnchor(b.merkleRoot, b.leafCount, logRoot, tx)
    yield* store.markSent(b.id, { ...tx, txHash: signed.hash, rawTx: signed.raw })
    return { hash: signed.hash, raw: signed.raw, range: undefined }
  })

  /**
   * Signs the batch's transaction with its log checkpoint: the range is assigned at the network's tentative
   * head in the database transaction that stores the signed tx (a replacement gets the same range back).
   * `addGas`: the estimate was made without the checkpoint (a replacement keeps its gas limit).
   */
  const sendWithCheckpoint = Effect.fn("EvmWriter.sendWithCheckpoint")(function*(b: EvmBatchRow, tx: Eip1559Tx, addGas: boolean) {
    const { range, tx: sent } = yield* store.markSentWithCheckpoint(b.id, network.networkId, b.leafCount, (range) =>
      Effect.gen(function*() {
        const withGas = addGas ? { ...tx, gas: tx.gas + checkpointGas(range.consistency.length) } : tx
        const signed = yield* chain.signAnchor(b.merkleRoot, b.leafCount, b.logRoot, withGas, checkpointArgs(range))
        return { ...withGas, txHash: signed.hash, rawTx: signed.raw } satisfies SentTransaction
      }))
    return { hash: sent.txHash, raw: sent.rawTx, range }
  })

  const send = Effect.fn("EvmWriter.send")(function*(b: EvmBatchRow) {
    yield* annotateSampled(() => ({ "anchord.batch_id": b.id, "anchord.record_count": b.leafCount }))
    const root = b.merkleRoot
    const existing = yield* chain.getAnchor(root)
    if (existing !== undefined) return yield* adopt(b, existing.blockNumber)
    let logRoot = b.logRoot
    if (logRoot !== null && !(yield* chain.supportsLogRoot)) {
      // An older contract, without anchorWithLogRoot: the batch goes out with `anchor` alone, so it has no receipt.
      yield* batches.clearLogRoot(b.id)
      yield* Effect.logWarning(
        "contract has no anchorWithLogRoot: batch anchored without its RFC 9162 root (no COSE receipts); deploy the current AnchorRegistry"
      )
        .pipe(Effect.annotateLogs({ networkId: network.networkId, batchId: b.id }))
      logRoot = null
    }
    const withCheckpoint = logRoot !== null && (yield* checkpointSupported) && (yield* chainLogIsOurs)
    const gas = yield* chain.estimateAnchorGas(root, b.leafCount, logRoot).pipe(
      Effect.catchReasons("EvmError", {
        AlreadyAnchored: () => Effect.as(adoptIfMined(b), undefined),
        // Not the batch's fault: the tick loop reports it (once) and tries again; the batch keeps its attempts.
        RpcUnavailable: (_, e) => Effect.fail(e),
        // Not the batch's fault either: kept, and said (once per tick loop failure) until the signer is funded.
        InsufficientFunds: (_, e) => Effect.fail(e)
      }, (_, e) => Effect.as(failOrRetry(b, e), undefined))
    )
    if (gas === undefined) return
    const fees = yield* chain.fees
    const nonces = yield* chain.nonces
    const nonce = Math.max(nonces.pending, nextNonce)
    const maxFeePerGas = network.maxFeePerGasWei !== undefined && fees.maxFeePerGas > network.maxFeePerGasWei
      ? network.maxFeePerGasWei
      : fees.maxFeePerGas
    const tx = {
      nonce,
      gas: gas * 12n / 10n + 5_000n,
      maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas > maxFeePerGas ? maxFeePerGas : fees.maxPriorityFeePerGas
    }
    // Persisted before it leaves the process: a crash after this point re-broadcasts the same tx.
    const signed = withCheckpoint ? yield* sendWithCheckpoint(b, tx, true) : yield* signAndStore(b, logRoot, tx)
    nextNonce = nonce + 1
    unacknowledged.add(b.id)
    yield* annotateSampled(() => ({ "anchord.tx_hash": signed.hash, "anchord.nonce": nonce }))
    yield* broadcast(b, signed.raw)
    yield* log("batch sent", {
      batchId: b.id,
      root,
      leafCount: b.leafCount,
      txHash: signed.hash,
      nonce,
      maxFeePerGas: tx.maxFeePerGas.toString(),
      ...(signed.range === undefined ? {} : { logStart: signed.range.oldSize, logSize: signed.range.newSize })
    })
  })

  // Fencing (src/anchoring/Leadership.ts): nothing leaves a leader that has lost its lock.
  const broadcast = (b: EvmBatchRow, raw: Hex) =>
    Effect.andThen(store.fence, chain.broadcast(raw)).pipe(
      Effect.tap(() => Effect.sync(() => unacknowledged.delete(b.id))),
      Effect.catchReasons("EvmError", {
        // Someone used this nonce: unless it was one of ours for this root, sign again with a fresh one.
        NonceTooLow: (_, e) =>
          Effect.gen(function*() {
            const existing = yield* chain.getAnchor(b.merkleRoot)
            if (existing !== undefined) return yield* adopt(b, existing.blockNumber)
            unacknowledged.delete(b.id)
            yield* resetToPending(b, e.message)
          }),
        AlreadyAnchored: () => adoptIfMined(b)
      })
    )

  /** A SENT batch: still pending, mined by another route, lost, or stuck (fee bump / replacement). */
  const check = Effect.fn("EvmWriter.check")(function*(b: EvmBatchRow) {
    yield* annotateSampled(() => ({ "anchord.batch_id": b.id, "anchord.tx_hash": b.txHash ?? "" }))
    const existing = yield* chain.getAnchor(b.merkleRoot)
    if (existing !== undefined) return yield* adopt(b, existing.blockNumber)
    if (b.txHash === null || b.rawTx === null || b.nonce === null) {
      unacknowledged.delete(b.id)
      return yield* resetToPending(b, "adopted root not found on chain")
    }
    const nonce = Number(b.nonce)
    const nonces = yield* chain.nonces
    if (nonces.latest > nonce) {
      // The nonce is used, and not by an anchor of this root: a reverted tx of ours, or another sender.
      for (const h of b.txHashes) {
        const r = yield* chain.receipt(h)
        if (r?.status === "reverted") {
          const range = yield* store.logRange(b.id)
          if (range !== undefined && (yield* chain.checkpoint).size !== range.start) {
            // Its checkpoint did not follow the chain's (an earlier batch went back): signed again, not counted.
            return yield* rewind(b, `tx ${h} reverted: the chain's log is not at the batch's range`, true)
          }
          return yield* failOrRetry(b, new EvmError({
            networkId: network.networkId,
            operation: "anchor",
            reason: new Reverted({ message: `tx ${h} reverted` })
          })).pipe(Effect.andThen(resetToPending(b, `tx ${h} reverted`)))
        }
      }
      unacknowledged.delete(b.id)
      return yield* resetToPending(b, `nonce ${nonce} used by another transaction`)
    }
    const known = yield* chain.txKnown(b.txHash)
    const age = (yield* Clock.currentTimeMillis) - (b.sentAt?.getTime() ?? 0)
    if (!known) {
      // Never reached the node (crash or outage between persist and broadcast) or dropped from its pool.
      unacknowledged.add(b.id)
      const outcome = yield* broadcast(b, b.rawTx).pipe(
        Effect.as("sent" as const),
        Effect.catchReason("EvmError", "Underpriced", () => Effect.succeed("underpriced" as const))
      )
      nextNonce = Math.max(nextNonce, nonce + 1)
      // A replacement the node refused as underpriced (the previous tx is still pooled): bump again now.
      if (outcome === "sent") return yield* log("batch re-broadcast", { batchId: b.id, txHash: b.txHash, nonce })
    } else {
      if (age >= network.stuckAfterMs && nonce > nonces.pending) {
        // Known but queued behind a nonce gap (an earlier tx vanished): sign again at the chain's next nonce.
        unacknowledged.delete(b.id)
        return yield* resetToPending(b, `nonce gap: ${nonce} > next ${nonces.pending}`)
      }
      nextNonce = Math.max(nextNonce, nonce + 1)
      if (age < network.stuckAfterMs) return
    }
    if (b.attempts >= network.maxAttempts) {
      const n = yield* failBatch(b, `not mined after ${b.attempts} attempts`)
      return yield* Effect.logError("batch failed").pipe(Effect.annotateLogs({ batchId: b.id, records: n }))
    }
    const fees = yield* chain.fees
    let maxFeePerGas = maxBig(bumped(BigInt(b.maxFeePerGas ?? "0"), network.feeBumpPercent), fees.maxFeePerGas)
    let maxPriorityFeePerGas = maxBig(bumped(BigInt(b.maxPriorityFeePerGas ?? "0"), network.feeBumpPercent), fees.maxPriorityFeePerGas)
    if (network.maxFeePerGasWei !== undefined && maxFeePerGas > network.maxFeePerGasWei) maxFeePerGas = network.maxFeePerGasWei
    if (maxPriorityFeePerGas > maxFeePerGas) maxPriorityFeePerGas = maxFeePerGas
    // Same gas limit as before: estimating now would see our own pending anchor and revert.
    const tx = { nonce, gas: BigInt(b.gasLimit ?? "200000"), maxFeePerGas, maxPriorityFeePerGas }
    // A batch sent with a range keeps it: the replacement carries the same checkpoint.
    const signed = (yield* store.logRange(b.id)) !== undefined
      ? yield* sendWithCheckpoint(b, tx, false)
      : yield* signAndStore(b, b.logRoot, tx)
    unacknowledged.add(b.id)
    yield* broadcast(b, signed.raw)
    yield* log("batch fee bumped", {
      batchId: b.id,
      txHash: signed.hash,
      replaces: b.txHash,
      nonce,
      maxFeePerGas: maxFeePerGas.toString(),
      attempt: b.attempts + 1
    })
  })

  const tick = Effect.gen(function*() {
    const open = yield* store.openBatches(network.networkId)
    const sent = open.filter((b) => b.state === "SENT")
    // Nothing in flight: the chain's count is the truth (also after a reorg dropped our transactions).
    if (recovering || sent.length === 0) nextNonce = 0
    const now = yield* Clock.currentTimeMillis
    rewound.clear()
    for (const b of sent) {
      if (rewound.has(b.id)) continue
      const due = recovering || unacknowledged.has(b.id) ||
        now - (b.sentAt?.getTime() ?? 0) >= network.stuckAfterMs
      if (due) yield* check(b)
    }
    recovering = false
    // Don't pile new nonces on top of a transaction the node has not acknowledged.
    if (unacknowledged.size > 0) return
    for (const b of open) {
      if (b.state === "PENDING" && (retryAt.get(b.id) ?? 0) <= now) yield* send(b)
      if (unacknowledged.size > 0) return
    }
  }).pipe(Effect.withSpan("EvmWriter.tick"))
  return { tick }
})
