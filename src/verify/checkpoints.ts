/**
 * What the chain says of a network's log: every checkpoint AnchorRegistry accepted (`Checkpoint`), with the
 * batch it came with (`Anchored`: its leaf count; `LogRootAnchored`: the batch's own RFC 9162 root), read with
 * `eth_getLogs` from an RPC endpoint the auditor chose. The contract accepts a checkpoint only with a
 * consistency proof from the one before, so these are the log's history as nobody can rewrite it.
 */
import * as Effect from "effect/Effect"
import { decodeEventLog, type Hex } from "viem"
import { anchorRegistryAbi } from "../evm/AnchorRegistry.abi.ts"
import type { RpcClient, RpcError } from "./evm.ts"
import { hashBytes } from "../anchoring/rfc9162.ts"

export interface ChainCheckpoint {
  /** The contract's batch id of the batch that carried it. */
  readonly batchId: bigint
  readonly size: number
  readonly root: Uint8Array
  /** The batch's leaves: the log's last `leafCount` entries at this size. */
  readonly leafCount: number
  /** The batch's own RFC 9162 root (its leaves in log order). */
  readonly batchLogRoot: Uint8Array
  readonly blockNumber: bigint
  readonly txHash: Hex
}

/** eth_getLogs over at most this many blocks at once (providers cap the range). */
const BLOCK_SPAN = 10_000n

interface RawLog {
  readonly topics: Array<Hex>
  readonly data: Hex
  readonly blockNumber: Hex
  readonly transactionHash: Hex
}

/** The chain's head block number. */
export const headBlock = (rpc: RpcClient): Effect.Effect<bigint, RpcError> => Effect.map(rpc.call("eth_blockNumber", []), (hex: string) => BigInt(hex))

/** The checkpoints of blocks [from, to], oldest first. */
export const readCheckpoints = (rpc: RpcClient, registry: Hex, from: bigint, to: bigint): Effect.Effect<Array<ChainCheckpoint>, RpcError> =>
  Effect.gen(function*() {
    const out: Array<ChainCheckpoint> = []
    for (let lo = from; lo <= to; lo += BLOCK_SPAN) {
      const hi = lo + BLOCK_SPAN - 1n < to ? lo + BLOCK_SPAN - 1n : to
      const logs: Array<RawLog> = yield* rpc.call("eth_getLogs", [{ address: registry, fromBlock: `0x${lo.toString(16)}`, toBlock: `0x${hi.toString(16)}` }])
      const leafCounts = new Map<bigint, number>()
      const batchRoots = new Map<bigint, Uint8Array>()
      for (const log of logs) {
        let event: ReturnType<typeof decodeEventLog<typeof anchorRegistryAbi>>
        try {
          event = decodeEventLog({ abi: anchorRegistryAbi, data: log.data, topics: log.topics as [Hex, ...Array<Hex>] })
        } catch {
          continue // another event of the contract (roles)
        }
        if (event.eventName === "Anchored") leafCounts.set(event.args.batchId, event.args.leafCount)
        else if (event.eventName === "LogRootAnchored") batchRoots.set(event.args.batchId, hashBytes(event.args.logRoot))
        else if (event.eventName === "Checkpoint") {
          out.push({
            batchId: event.args.batchId,
            size: Number(event.args.size),
            root: hashBytes(event.args.root),
            leafCount: leafCounts.get(event.args.batchId) ?? 0,
            batchLogRoot: batchRoots.get(event.args.batchId) ?? new Uint8Array(32),
            blockNumber: BigInt(log.blockNumber),
            txHash: log.transactionHash
          })
        }
      }
    }
    return out
  })
