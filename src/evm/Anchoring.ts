/**
 * EVM anchoring, one supervised pipeline per configured network, through the shared seam of
 * src/batching/AnchorChain.ts (leadership by advisory lock, batcher, loops):
 *
 * - batcher (src/batching/Batcher.ts) + chain writer, in one fiber: cut batches, then send them
 *   (signed locally; the signed tx and its hash are persisted before broadcast, so a crash between
 *   send and confirmation neither loses nor double-anchors: on restart the root is looked up with
 *   `getAnchor`, the stored raw tx re-broadcast, or the batch sent again);
 * - chain watcher: `Anchored` logs by ranged eth_getLogs from a cursor (block number + hash) kept
 *   in PostgreSQL, reorg detection by block hash, confirmation at the configured depth.
 */
import { Clock, Context, Effect, Layer, Schedule } from "effect"
import type { Hex } from "viem"
import { type AnchorChain, makeStatus, type NetworkStatus, runAnchorChain } from "../anchoring/AnchorChain.ts"
import { AnchorStore, type BatchRow, type MinedFacts } from "../anchoring/AnchorStore.ts"
import { type AnchoredLog, type Chain, makeChain } from "./chain.ts"
import { type EvmNetworkConfig, EvmNetworks } from "./config.ts"
import { EvmError, Reverted, WrongChain } from "./errors.ts"

export type { NetworkStatus } from "../anchoring/AnchorChain.ts"

/** How far the watcher rewinds when its cursor block was reorganised away. */
const REORG_REWIND = 64n

export class EvmAnchoring extends Context.Service<EvmAnchoring, {
  readonly status: ReadonlyArray<NetworkStatus>
}>()("anchord/evm/EvmAnchoring") {
  /** Starts one leader-elected pipeline per configured network. */
  static readonly layer = Layer.effect(
    EvmAnchoring,
    Effect.gen(function*() {
      const { networks } = yield* EvmNetworks
      const statuses: Array<NetworkStatus> = []
      if (networks.length === 0) {
        yield* Effect.logWarning("no EVM network configured (EVM_NETWORKS): EVM records stay QUEUED")
      }
      for (const network of networks) {
        const status = makeStatus(network.networkId)
        statuses.push(status)
        yield* runAnchorChain(evmChain(network, status), status).pipe(Effect.forkScoped)
      }
      return EvmAnchoring.of({ status: statuses })
    })
  ).pipe(Layer.provide(AnchorStore.layer))
}

/** The EVM implementation of the chain seam: an AnchorRegistry contract over JSON-RPC. */
export const evmChain = (network: EvmNetworkConfig, status: NetworkStatus): AnchorChain<EvmError> => ({
  chainType: "evm",
  target: {
    networkId: network.networkId,
    batchMaxSize: network.batchMaxSize,
    batchWindowMs: network.batchWindowMs,
    meta: { chainType: "evm", chainId: network.chainId, contractAddress: network.contractAddress }
  },
  isUnavailable: (e) => e instanceof EvmError && e.reason._tag === "RpcUnavailable",
  connect: Effect.gen(function*() {
    const chain = makeChain(network)
    const chainId = yield* chain.chainId.pipe(
      Effect.tapError((e) => Effect.sync(() => void (status.rpc = "down", status.lastError = e.message))),
      Effect.retry(Schedule.spaced("1 second"))
    )
    status.rpc = "up"
    if (chainId !== network.chainId) {
      return yield* new EvmError({
        networkId: network.networkId,
        operation: "eth_chainId",
        reason: new WrongChain({ message: `endpoint is chain ${chainId}, configured ${network.chainId}` })
      })
    }
    const writer = yield* makeWriter(chain)
    return { submit: writer.tick, watch: makeWatcher(chain, status), watchPeriod: `${network.pollIntervalMs} millis` }
  })
})

// ---------------------------------------------------------------------------------------------
// Writer

const bumped = (value: bigint, percent: number) => value * BigInt(100 + percent) / 100n + 1n
const maxBig = (a: bigint, b: bigint) => a > b ? a : b

const makeWriter = (chain: Chain) =>
  Effect.gen(function*() {
    const store = yield* AnchorStore
    const network = chain.config
    const log = (message: string, fields: Record<string, unknown>) => Effect.logInfo(message).pipe(Effect.annotateLogs(fields))
    let nextNonce = 0
    /** SENT batches whose broadcast has not been acknowledged by the node (re-broadcast each tick). */
    const unacknowledged = new Set<string>()
    /** First pass after taking leadership: every SENT batch is checked against the chain. */
    let recovering = true

    /** The root is on chain already (our earlier tx, or a re-mined one): record where, from its log. */
    const adopt = Effect.fn("EvmWriter.adopt")(function*(b: BatchRow, blockNumber: bigint) {
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

    /** Batches that were refused: not tried again before this time (exponential, 250 ms .. 60 s). */
    const retryAt = new Map<string, number>()
    const failOrRetry = Effect.fn("EvmWriter.failOrRetry")(function*(b: BatchRow, e: EvmError) {
        if (e.reason._tag === "InsufficientFunds") {
          // Not the batch's fault: keep it, and say so (once per tick loop failure) until the signer is funded.
          return yield* e
        }
        retryAt.set(b.id, (yield* Clock.currentTimeMillis) + Math.min(60_000, 250 * 2 ** b.attempts))
        if (b.attempts + 1 >= network.maxAttempts) {
          const n = yield* store.fail(b.id, e.message)
          unacknowledged.delete(b.id)
          yield* Effect.logError("batch failed").pipe(Effect.annotateLogs({ batchId: b.id, root: b.merkleRoot, records: n, error: e.message }))
        } else {
          yield* store.noteError(b.id, e.message)
        }
      })

    const send = Effect.fn("EvmWriter.send")(function*(b: BatchRow) {
        const root = b.merkleRoot
        const existing = yield* chain.getAnchor(root)
        if (existing !== undefined) return yield* adopt(b, existing.blockNumber)
        const gas = yield* chain.estimateAnchorGas(root, b.leafCount).pipe(Effect.result)
        if (gas._tag === "Failure") {
          const e = gas.failure
          if (e.reason._tag === "AlreadyAnchored") {
            const again = yield* chain.getAnchor(root)
            if (again !== undefined) return yield* adopt(b, again.blockNumber)
            // Anchored in the pending state only: a transaction of ours for this root is in the pool. Wait for it.
            return
          }
          if (e.reason._tag === "RpcUnavailable") return yield* e
          return yield* failOrRetry(b, e)
        }
        const fees = yield* chain.fees
        const nonces = yield* chain.nonces
        const nonce = Math.max(nonces.pending, nextNonce)
        const maxFeePerGas = network.maxFeePerGasWei !== undefined && fees.maxFeePerGas > network.maxFeePerGasWei
          ? network.maxFeePerGasWei
          : fees.maxFeePerGas
        const tx = {
          nonce,
          gas: gas.success * 12n / 10n + 5_000n,
          maxFeePerGas,
          maxPriorityFeePerGas: fees.maxPriorityFeePerGas > maxFeePerGas ? maxFeePerGas : fees.maxPriorityFeePerGas
        }
        const signed = yield* chain.signAnchor(root, b.leafCount, tx)
        // Persisted before it leaves the process: a crash after this point re-broadcasts the same tx.
        yield* store.markSent(b.id, { ...tx, txHash: signed.hash, rawTx: signed.raw, bump: false })
        nextNonce = nonce + 1
        unacknowledged.add(b.id)
        yield* broadcast(b, signed.raw)
        yield* log("batch sent", {
          batchId: b.id, root, leafCount: b.leafCount, txHash: signed.hash, nonce, maxFeePerGas: tx.maxFeePerGas.toString()
        })
      })

    const broadcast = (b: BatchRow, raw: Hex) =>
      chain.broadcast(raw).pipe(
        Effect.tap(() => Effect.sync(() => unacknowledged.delete(b.id))),
        Effect.catch((e) =>
          e.reason._tag === "NonceTooLow"
            // Someone used this nonce: unless it was one of ours for this root, sign again with a fresh one.
            ? Effect.gen(function*() {
                const existing = yield* chain.getAnchor(b.merkleRoot)
                if (existing !== undefined) return yield* adopt(b, existing.blockNumber)
                unacknowledged.delete(b.id)
                yield* store.resetToPending(b.id, e.message)
              })
            : e.reason._tag === "AlreadyAnchored"
            ? Effect.flatMap(chain.getAnchor(b.merkleRoot), (x) => x === undefined ? Effect.void : adopt(b, x.blockNumber))
            : Effect.fail(e)
        )
      )

    /** A SENT batch: still pending, mined by another route, lost, or stuck (fee bump / replacement). */
    const check = Effect.fn("EvmWriter.check")(function*(b: BatchRow) {
        const existing = yield* chain.getAnchor(b.merkleRoot)
        if (existing !== undefined) return yield* adopt(b, existing.blockNumber)
        if (b.txHash === null || b.rawTx === null || b.nonce === null) {
          unacknowledged.delete(b.id)
          return yield* store.resetToPending(b.id, "adopted root not found on chain")
        }
        const nonce = Number(b.nonce)
        const nonces = yield* chain.nonces
        if (nonces.latest > nonce) {
          // The nonce is used, and not by an anchor of this root: a reverted tx of ours, or another sender.
          for (const h of b.txHashes) {
            const r = yield* chain.receipt(h)
            if (r?.status === "reverted") {
              return yield* failOrRetry(b, new EvmError({
                networkId: network.networkId, operation: "anchor", reason: new Reverted({ message: `tx ${h} reverted` })
              })).pipe(Effect.andThen(store.resetToPending(b.id, `tx ${h} reverted`)))
            }
          }
          unacknowledged.delete(b.id)
          return yield* store.resetToPending(b.id, `nonce ${nonce} used by another transaction`)
        }
        const known = yield* chain.txKnown(b.txHash)
        const age = (yield* Clock.currentTimeMillis) - (b.sentAt?.getTime() ?? 0)
        if (!known) {
          // Never reached the node (crash or outage between persist and broadcast) or dropped from its pool.
          unacknowledged.add(b.id)
          const outcome = yield* broadcast(b, b.rawTx).pipe(
            Effect.as("sent" as const),
            Effect.catchIf((e) => e.reason._tag === "Underpriced", () => Effect.succeed("underpriced" as const))
          )
          nextNonce = Math.max(nextNonce, nonce + 1)
          // A replacement the node refused as underpriced (the previous tx is still pooled): bump again now.
          if (outcome === "sent") return yield* log("batch re-broadcast", { batchId: b.id, txHash: b.txHash, nonce })
        } else {
          if (age >= network.stuckAfterMs && nonce > nonces.pending) {
            // Known but queued behind a nonce gap (an earlier tx vanished): sign again at the chain's next nonce.
            unacknowledged.delete(b.id)
            return yield* store.resetToPending(b.id, `nonce gap: ${nonce} > next ${nonces.pending}`)
          }
          nextNonce = Math.max(nextNonce, nonce + 1)
          if (age < network.stuckAfterMs) return
        }
        if (b.attempts >= network.maxAttempts) {
          const n = yield* store.fail(b.id, `not mined after ${b.attempts} attempts`)
          return yield* Effect.logError("batch failed").pipe(Effect.annotateLogs({ batchId: b.id, records: n }))
        }
        const fees = yield* chain.fees
        let maxFeePerGas = maxBig(bumped(BigInt(b.maxFeePerGas ?? "0"), network.feeBumpPercent), fees.maxFeePerGas)
        let maxPriorityFeePerGas = maxBig(bumped(BigInt(b.maxPriorityFeePerGas ?? "0"), network.feeBumpPercent), fees.maxPriorityFeePerGas)
        if (network.maxFeePerGasWei !== undefined && maxFeePerGas > network.maxFeePerGasWei) maxFeePerGas = network.maxFeePerGasWei
        if (maxPriorityFeePerGas > maxFeePerGas) maxPriorityFeePerGas = maxFeePerGas
        // Same gas limit as before: estimating now would see our own pending anchor and revert.
        const tx = { nonce, gas: BigInt(b.gasLimit ?? "200000"), maxFeePerGas, maxPriorityFeePerGas }
        const signed = yield* chain.signAnchor(b.merkleRoot, b.leafCount, tx)
        yield* store.markSent(b.id, { ...tx, txHash: signed.hash, rawTx: signed.raw, bump: true })
        unacknowledged.add(b.id)
        yield* broadcast(b, signed.raw)
        yield* log("batch fee bumped", {
          batchId: b.id, txHash: signed.hash, replaces: b.txHash, nonce, maxFeePerGas: maxFeePerGas.toString(), attempt: b.attempts + 1
        })
      })

    const tick = Effect.gen(function*() {
      const open = yield* store.openBatches(network.networkId)
      const sent = open.filter((b) => b.state === "SENT")
      // Nothing in flight: the chain's count is the truth (also after a reorg dropped our transactions).
      if (recovering || sent.length === 0) nextNonce = 0
      const now = yield* Clock.currentTimeMillis
      for (const b of sent) {
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
    })
    return { tick }
  })

// ---------------------------------------------------------------------------------------------
// Watcher

const makeWatcher = (chain: Chain, status: NetworkStatus) =>
  Effect.gen(function*() {
    const store = yield* AnchorStore
    const network = chain.config
    const id = network.networkId
    const head = yield* chain.head
    status.head = head
    const blocks = new Map<bigint, { hash: Hex; timestamp: bigint } | undefined>()
    const block = (n: bigint) =>
      blocks.has(n) ? Effect.succeed(blocks.get(n)) : Effect.tap(chain.block(n), (b) => Effect.sync(() => void blocks.set(n, b)))

    // 1. Where to scan from; a cursor whose block hash changed means a reorg below it.
    const cursor = yield* store.cursor(id)
    let from: bigint
    if (cursor === undefined) {
      from = network.startBlock !== undefined ? BigInt(network.startBlock) : (head > 10n ? head - 10n : 0n)
    } else {
      const b = yield* block(cursor.blockNumber)
      if (b === undefined || b.hash !== cursor.blockHash) {
        from = cursor.blockNumber > REORG_REWIND ? cursor.blockNumber - REORG_REWIND : 0n
        yield* Effect.logWarning("reorg detected").pipe(Effect.annotateLogs({
          atBlock: Number(cursor.blockNumber), expectedHash: cursor.blockHash, foundHash: b?.hash ?? null, rescanFrom: Number(from)
        }))
      } else {
        from = cursor.blockNumber + 1n
      }
    }

    // 2. Batches seen in a block that is no longer canonical go back to QUEUED (or follow a re-mined tx).
    for (const b of (yield* store.openBatches(id)).filter((x) => x.state === "MINED")) {
      const bn = BigInt(b.blockNumber!)
      const canonical = yield* block(bn)
      if (canonical !== undefined && canonical.hash === b.blockHash) continue
      const again = yield* chain.getAnchor(b.merkleRoot)
      if (again !== undefined && again.blockNumber !== bn) continue // re-mined elsewhere: the log scan below records it
      if (again !== undefined && canonical !== undefined) continue // same height, new block with our tx again: rescanned below
      const requeued = yield* store.drop(b.id, `reorganised out of block ${bn}`)
      yield* Effect.logWarning("reorg: batch dropped").pipe(Effect.annotateLogs({
        batchId: b.id, root: b.merkleRoot, blockNumber: Number(bn), txHash: b.txHash, requeued
      }))
      if (from > bn) from = bn
    }

    // 3. Anchored logs from the cursor to the head (ranged).
    if (from <= head) {
      const to = from + BigInt(network.logRange) - 1n < head ? from + BigInt(network.logRange) - 1n : head
      const logs = yield* chain.anchoredLogs(from, to)
      /** What an Anchored log says, when its block is still canonical (else: reorganised while we looked, next tick). */
      const minedFacts = (l: AnchoredLog) =>
        Effect.gen(function*() {
          const b = yield* block(l.blockNumber)
          if (b === undefined || b.hash !== l.blockHash) return undefined
          const receipt = yield* chain.receipt(l.txHash)
          return {
            txHash: l.txHash,
            chainBatchId: l.chainBatchId,
            blockNumber: l.blockNumber,
            blockHash: l.blockHash,
            anchoredAt: new Date(Number(b.timestamp) * 1000),
            gasUsed: receipt?.gasUsed ?? null
          } satisfies MinedFacts
        })
      for (const l of logs) {
        const batch = yield* store.findLiveBatchByRoot(id, l.root)
        if (batch === undefined) {
          // Given up (FAILED) but mined after all: its records are anchored, so the node says so.
          const failed = yield* store.findFailedBatchByRoot(id, l.root)
          if (failed === undefined) continue
          const facts = yield* minedFacts(l)
          if (facts === undefined) continue
          const revived = yield* store.revive(failed.id, facts)
          if (revived !== undefined) {
            yield* Effect.logWarning("failed batch mined after all: revived").pipe(Effect.annotateLogs({
              batchId: failed.id, root: l.root, txHash: l.txHash, blockNumber: Number(l.blockNumber), records: revived
            }))
          }
          continue
        }
        if (batch.state === "CONFIRMED") continue
        if (batch.state === "MINED" && batch.blockHash === l.blockHash) continue
        const facts = yield* minedFacts(l)
        if (facts === undefined) continue
        yield* store.markMined(batch.id, facts)
        yield* Effect.logDebug("batch mined").pipe(Effect.annotateLogs({
          batchId: batch.id, root: l.root, txHash: l.txHash, blockNumber: Number(l.blockNumber), chainBatchId: Number(l.chainBatchId)
        }))
      }
      const end = yield* block(to)
      if (end !== undefined) yield* store.saveCursor(id, { blockNumber: to, blockHash: end.hash })
    }

    // 4. Confirmation at depth.
    for (const b of (yield* store.openBatches(id)).filter((x) => x.state === "MINED")) {
      const bn = BigInt(b.blockNumber!)
      if (head - bn + 1n < BigInt(network.confirmations)) continue
      const canonical = yield* block(bn)
      if (canonical === undefined || canonical.hash !== b.blockHash) continue
      const anchored = yield* store.confirm(b.id)
      yield* Effect.logInfo("batch confirmed").pipe(Effect.annotateLogs({
        batchId: b.id, root: b.merkleRoot, txHash: b.txHash, blockNumber: Number(bn), chainBatchId: Number(b.chainBatchId),
        anchoredRecords: anchored
      }))
    }
  })
