/**
 * The EVM chain watcher (docs/anchoring-evm.md, "Watcher"), one tick every `pollIntervalMs`: checks
 * the cursor block's hash (changed → reorg: rescan from 64 blocks below), every MINED batch's block
 * hash (changed and root not on chain → batch DROPPED, records QUEUED), scans `Anchored` logs from the
 * cursor (at most `logRange` blocks per tick) and matches them to batches by root (a given-up batch
 * mined after all is revived), and confirms batches at depth.
 */
import { Clock, Effect } from "effect"
import type { Hex } from "viem"
import { BatchStore } from "../anchoring/BatchStore.ts"
import { NetworkHealth } from "../anchoring/NetworkHealth.ts"
import type { AnchoredLog, Chain } from "./chain.ts"
import { EvmStore, type MinedFacts } from "./EvmStore.ts"
import { metricsHandle, setSignerBalance } from "../metrics/metrics.ts"

/** How often the leading node reads its signer's balance for anchord_evm_signer_balance_wei (one eth_getBalance). */
const BALANCE_EVERY_MS = 60_000

/** How far the watcher rewinds when its cursor block was reorganised away. */
const REORG_REWIND = 64n

/** The watcher's tick for one network (services resolved once). */
export const makeWatcher = Effect.fnUntraced(function*(chain: Chain) {
  const batches = yield* BatchStore
  const store = yield* EvmStore
  const health = yield* NetworkHealth
  const metrics = yield* metricsHandle
  let balanceReadAt = -Infinity
  return Effect.gen(function*() {
    const network = chain.config
    const id = network.networkId
    const head = yield* chain.head
    yield* health.update(id, { head })
    const now = yield* Clock.currentTimeMillis
    if (now - balanceReadAt >= BALANCE_EVERY_MS) {
      balanceReadAt = now
      // A metric only: a failed read waits for the next minute, it does not fail the tick.
      yield* chain.call("eth_getBalance", (c) => c.getBalance({ address: chain.signer })).pipe(
        Effect.tap((wei) => Effect.sync(() => setSignerBalance(metrics, id, wei))),
        Effect.ignore
      )
    }
    const blocks = new Map<bigint, { hash: Hex; timestamp: bigint } | undefined>()
    const block = (n: bigint) => blocks.has(n) ? Effect.succeed(blocks.get(n)) : Effect.tap(chain.block(n), (b) => Effect.sync(() => void blocks.set(n, b)))

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
          atBlock: Number(cursor.blockNumber),
          expectedHash: cursor.blockHash,
          foundHash: b?.hash ?? null,
          rescanFrom: Number(from)
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
      // Its checkpoint went with it: the log is cut at its range, later batches signed again.
      yield* store.rewindLog(b.id, `batch ${b.id} reorganised out of block ${bn}`, false)
      const requeued = yield* batches.drop(b.id, `reorganised out of block ${bn}`)
      yield* Effect.logWarning("reorg: batch dropped").pipe(Effect.annotateLogs({
        batchId: b.id,
        root: b.merkleRoot,
        blockNumber: Number(bn),
        txHash: b.txHash,
        requeued
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
        const batch = yield* batches.findLiveBatchByRoot(id, l.root)
        if (batch === undefined) {
          // Given up (FAILED) but mined after all: its records are anchored, so the node says so.
          const failed = yield* batches.findFailedBatchByRoot(id, l.root)
          if (failed === undefined) continue
          const facts = yield* minedFacts(l)
          if (facts === undefined) continue
          const revived = yield* store.revive(failed.id, facts)
          if (revived !== undefined) {
            yield* Effect.logWarning("failed batch mined after all: revived").pipe(Effect.annotateLogs({
              batchId: failed.id,
              root: l.root,
              txHash: l.txHash,
              blockNumber: Number(l.blockNumber),
              records: revived
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
          batchId: batch.id,
          root: l.root,
          txHash: l.txHash,
          blockNumber: Number(l.blockNumber),
          chainBatchId: Number(l.chainBatchId)
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
      // Published first: a crash between the two publishes again (idempotent) when it confirms on the next tick.
      const checkpoint = yield* store.publishCheckpoint(b.id)
      const anchored = yield* batches.confirm(b.id)
      yield* Effect.logInfo("batch confirmed").pipe(Effect.annotateLogs({
        batchId: b.id,
        root: b.merkleRoot,
        txHash: b.txHash,
        blockNumber: Number(bn),
        chainBatchId: Number(b.chainBatchId),
        anchoredRecords: anchored,
        ...(checkpoint === undefined ? {} : { logSize: checkpoint.size })
      }))
    }
  }).pipe(Effect.withSpan("EvmWatcher.tick"))
})
