/**
 * `anchord verify --tlog-proof <file> --log-key <vkey> (--data <file> | --hash <hex>) [--rpc URL]`: a record's C2SP
 * tlog-proof (GET /v1/records/{id}/log-proof, docs/transparency-log.md) checked without the node: the checkpoint
 * signed by the log key for its origin, the record hash's inclusion proof to the checkpoint's root, and — with --rpc —
 * that the contract the proof's extra line names accepted exactly that checkpoint (its `Checkpoint` event in the
 * named block), with enough blocks on top. The extra line is unauthenticated: it only says where to look.
 * Loaded by ./command.ts only for --tlog-proof (viem's event decoding is not needed by a bundle's verify).
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type { Hex } from "viem"
import { readCheckpoints } from "./checkpoints.ts"
import { openCheckpoint, parseCheckpoint } from "../tlog/checkpoint.ts"
import { verifyInclusion } from "../tlog/check.ts"
import { leafHash } from "../tlog/hash.ts"
import { parseVerifierKey } from "../tlog/note.ts"
import { parseProofText } from "../tlog/proofText.ts"
import type { RpcClient } from "./evm.ts"
import { type Check, type Report, reportOfChecks } from "./report.ts"

export interface TlogProofInput {
  readonly text: string
  readonly logKey: string
  /** The record hash, 64 hex. */
  readonly hash: string
  readonly hashSource: "data" | "bundle"
  readonly rpc: RpcClient | undefined
  readonly minConfirmations: number
  readonly offline: boolean
}

/** Where the proof says its checkpoint is anchored (the node's `extra` JSON). */
interface Anchored {
  readonly chainType?: string
  readonly networkId?: string
  readonly contractAddress?: string
  readonly blockNumber?: number
}

export const verifyTlogProof = (o: TlogProofInput): Effect.Effect<Report> =>
  Effect.gen(function*() {
    const checks: Array<Check> = []
    const report = (networkId: string): Report => reportOfChecks("tlog-proof", o, checks, { chainType: "evm", networkId })
    const parsed = parseProofText(o.text)
    if (Result.isFailure(parsed)) {
      checks.push({ id: "tlog.proof", status: "error", message: `not a tlog-proof: ${parsed.failure.message}` })
      return report("(unknown)")
    }
    const p = parsed.success
    let where: Anchored = {}
    try {
      if (p.extra !== undefined) where = JSON.parse(new TextDecoder().decode(p.extra)) as Anchored
    } catch {
      // Not ours: the chain check below says it cannot look.
    }
    const networkId = where.networkId ?? "(unnamed network)"
    const verifier = parseVerifierKey(o.logKey)
    if (Result.isFailure(verifier)) {
      checks.push({ id: "tlog.signature", networkId, status: "error", message: `--log-key: ${verifier.failure.message}` })
      return report(networkId)
    }
    const unsigned = parseCheckpoint(p.checkpoint.slice(0, p.checkpoint.lastIndexOf("\n\n") + 1))
    const origin = Result.isSuccess(unsigned) ? unsigned.success.origin : ""
    const opened = openCheckpoint(p.checkpoint, origin, [verifier.success])
    if (Result.isFailure(opened)) {
      checks.push({ id: "tlog.signature", networkId, status: "fail", message: `the checkpoint is not signed by --log-key: ${opened.failure.message}` })
      return report(networkId)
    }
    const cp = opened.success.checkpoint
    checks.push({ id: "tlog.signature", networkId, status: "pass", message: `checkpoint of ${cp.size} leaves of log ${cp.origin}, signed by the log key` })
    const leaf = leafHash(Buffer.from(o.hash, "hex"))
    checks.push(
      verifyInclusion(p.index, cp.size, leaf, p.proof, cp.root)
        ? { id: "tlog.inclusion", networkId, status: "pass", message: `the record hash is leaf ${p.index} of the checkpoint's tree` }
        : { id: "tlog.inclusion", networkId, status: "fail", message: `the inclusion proof of leaf ${p.index} does not lead to the checkpoint's root` }
    )
    if (o.offline) {
      checks.push({ id: "tlog.chain", networkId, status: "skip", message: "--offline: the chain was not asked" })
      return report(networkId)
    }
    if (o.rpc === undefined) {
      checks.push({ id: "tlog.chain", networkId, status: "error", message: "give --rpc (the network's JSON-RPC endpoint) to check the checkpoint on chain" })
      return report(networkId)
    }
    if (where.chainType !== "evm" || !/^0x[0-9a-fA-F]{40}$/.test(where.contractAddress ?? "") || !Number.isSafeInteger(where.blockNumber)) {
      checks.push({ id: "tlog.chain", networkId, status: "error", message: "the proof's extra line names no EVM contract and block to check" })
      return report(networkId)
    }
    const block = BigInt(where.blockNumber!)
    const onChain = yield* readCheckpoints(o.rpc, where.contractAddress!.toLowerCase() as Hex, block, block).pipe(
      Effect.flatMap((found) => Effect.map(o.rpc!.call("eth_blockNumber", []), (head: string) => ({ found, head: BigInt(head) }))),
      Effect.result
    )
    if (Result.isFailure(onChain)) {
      checks.push({ id: "tlog.chain", networkId, status: "error", message: onChain.failure.message })
      return report(networkId)
    }
    const match = onChain.success.found.find((c) => c.size === cp.size && Buffer.from(c.root).equals(Buffer.from(cp.root)))
    if (match === undefined) {
      checks.push({
        id: "tlog.chain",
        networkId,
        status: "fail",
        message: `contract ${where.contractAddress} accepted no checkpoint of ${cp.size} leaves with this root in block ${block}`
      })
      return report(networkId)
    }
    const confirmations = onChain.success.head - block + 1n
    checks.push(
      confirmations >= BigInt(o.minConfirmations)
        ? {
          id: "tlog.chain",
          networkId,
          status: "pass",
          message: `accepted by ${where.contractAddress} with batch ${match.batchId} in block ${block} (${confirmations} confirmations)`
        }
        : { id: "tlog.chain", networkId, status: "error", message: `${confirmations} confirmations, ${o.minConfirmations} required` }
    )
    return report(networkId)
  })
