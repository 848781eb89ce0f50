/**
 * EVM checks of one anchor, straight against a JSON-RPC endpoint the auditor chose. Plain
 * `fetch` and hand-encoded calldata (two functions, one event): no viem, so the verify command
 * starts fast, and nothing here trusts the node.
 */
// Sub-module imports (not the "effect" barrel): `anchord verify` must start fast (scripts/bench-verify.ts).
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type { BundleAnchor } from "./input.ts"
import type { Check } from "./report.ts"
import { excerpt } from "../excerpt.ts"

/** `verify(bytes32,bytes32[],bytes32)`, `getAnchor(bytes32)` selectors and the `Anchored` topic (checked against viem in tests). */
export const VERIFY_SELECTOR = "0x0a02831c"
export const GET_ANCHOR_SELECTOR = "0x7feb51d9"
/** keccak256("Anchored(uint64,bytes32,address,uint32)") */
export const ANCHORED_TOPIC = "0xcd9f090b8a7272ee4466edad92cb967d7e13740bd9b3b8e5571f683596dadf3d"

/**
 * A JSON-RPC call that did not give an answer. `Data.TaggedError` rather than `Schema.TaggedError`:
 * it never crosses the wire, and effect/Schema would add ~70 ms to the CLI's start.
 */
export class RpcError extends Data.TaggedError("RpcError")<{
  readonly method: string
  readonly message: string
  /** true: the endpoint could not be reached or answered garbage (could not check). */
  readonly unreachable: boolean
}> {}

const HEX32 = /^0x[0-9a-f]{64}$/
const ADDRESS = /^0x[0-9a-f]{40}$/

/** ABI words (32 bytes as 64 hex digits): a bytes32 and a uint256. */
export const word = (hex: string) => hex.replace(/^0x/, "").toLowerCase().padStart(64, "0")
export const uint = (n: number | bigint) => BigInt(n).toString(16).padStart(64, "0")

/** Calldata of `verify(recordHash, proof, root)`. */
export const encodeVerify = (hash: string, proof: ReadonlyArray<string>, root: string) =>
  VERIFY_SELECTOR + word(hash) + uint(0x60) + word(root) + uint(proof.length) + proof.map(word).join("")

export const encodeGetAnchor = (root: string) => GET_ANCHOR_SELECTOR + word(root)

const words = (data: string): Array<bigint> => {
  const body = data.replace(/^0x/, "")
  const out: Array<bigint> = []
  for (let i = 0; i + 64 <= body.length; i += 64) out.push(BigInt("0x" + body.slice(i, i + 64)))
  return out
}

export interface RpcClient {
  readonly url: string
  readonly call: (method: string, params: ReadonlyArray<unknown>) => Effect.Effect<any, RpcError>
}

/**
 * @param label how messages name the endpoint: the URL by default (the auditor's own); the node
 * passes its network id instead, so an RPC URL carrying a provider key never reaches API clients.
 */
export const rpcClient = (url: string, timeoutMs = 10_000, label = `RPC ${url}`): RpcClient => {
  let id = 0
  return {
    url,
    call: (method, params) =>
      Effect.tryPromise({
        try: async (signal) => {
          const response = await fetch(url, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }),
            signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)])
          })
          const text = await response.text()
          if (!response.ok) throw new RpcError({ method, message: `HTTP ${response.status} from ${label}`, unreachable: true })
          let body: { result?: unknown; error?: { code?: number; message?: string } }
          try {
            body = JSON.parse(text)
          } catch {
            throw new RpcError({ method, message: `${label} did not answer JSON-RPC`, unreachable: true })
          }
          if (body.error !== undefined) {
            throw new RpcError({ method, message: `${method}: ${body.error.message ?? "error"} (code ${body.error.code})`, unreachable: false })
          }
          return body.result
        },
        catch: (e) =>
          e instanceof RpcError
            ? e
            : new RpcError({ method, message: `${label} unreachable: ${describe(e)}`, unreachable: true })
      })
  }
}

const describe = (e: unknown): string => {
  if (e instanceof Error) {
    const cause = (e as { cause?: unknown }).cause
    if (typeof cause !== "object" || cause === null) return e.message
    const c = cause as { code?: unknown; message?: unknown; errors?: Array<{ code?: unknown }> }
    const code = c.code ?? c.errors?.[0]?.code
    return code !== undefined ? `${e.message} (${String(code)})` : c.message ? `${e.message} (${String(c.message)})` : e.message
  }
  return String(e)
}

export interface EvmCheckOptions {
  readonly rpc: RpcClient
  /** Blocks (the anchor's block counts as 1) required on top; default 1. */
  readonly minConfirmations: number
}

/** A JSON-RPC quantity as a number. */
export const hexNumber = (v: unknown): number | undefined => typeof v === "string" && /^0x[0-9a-f]+$/i.test(v) ? Number(BigInt(v)) : undefined

/**
 * The EVM checks of one anchor. Every answer is read from the chain; the bundle only says where
 * to look. All RPC calls go out at once (independent reads).
 */
export const checkEvmAnchor = Effect.fn("verify.evmAnchor")(function*(hash: string, anchor: BundleAnchor, options: EvmCheckOptions) {
  const net = anchor.networkId
  const checks: Array<Check> = []
  const add = (id: string, status: Check["status"], message: string) => checks.push({ id: `evm.${id}`, networkId: net, status, message })

  const contract = String(anchor.contractAddress ?? "").toLowerCase()
  const root = anchor.merkleRoot.toLowerCase()
  const txHash = anchor.txHash.toLowerCase()
  const proof = anchor.merkleProof.map((p) => p.toLowerCase())
  const wellFormed = /^[0-9a-f]{64}$/.test(hash) && HEX32.test(root) && proof.every((p) => HEX32.test(p))
  if (!ADDRESS.test(contract)) {
    add("contract", "fail", `the anchor names no valid contractAddress (${excerpt(String(JSON.stringify(anchor.contractAddress ?? null)))})`)
    return checks
  }
  if (!wellFormed) {
    add("contract-verify", "skip", "hash, root or a proof element is not 32-byte hex (see merkle-proof)")
  }

  const rpc = options.rpc
  const attempt = <A>(e: Effect.Effect<A, RpcError>) => Effect.result(e)
  const [chainId, code, verified, stored, receipt, head] = yield* Effect.all([
    attempt(rpc.call("eth_chainId", [])),
    attempt(rpc.call("eth_getCode", [contract, "latest"])),
    wellFormed ? attempt(rpc.call("eth_call", [{ to: contract, data: encodeVerify(hash, proof, root) }, "latest"])) : Effect.succeed(undefined),
    wellFormed ? attempt(rpc.call("eth_call", [{ to: contract, data: encodeGetAnchor(root) }, "latest"])) : Effect.succeed(undefined),
    HEX32.test(txHash) ? attempt(rpc.call("eth_getTransactionReceipt", [txHash])) : Effect.succeed(undefined),
    attempt(rpc.call("eth_blockNumber", []))
  ], { concurrency: "unbounded" })

  const rpcProblem = (r: { readonly _tag: "Failure"; readonly failure: RpcError }, id: string) => add(id, "error", r.failure.message)

  // 1. The endpoint serves the stated chain; otherwise nothing else it says is about this anchor.
  if (chainId._tag === "Failure") {
    rpcProblem(chainId, "chain-id")
    return checks
  }
  const served = hexNumber(chainId.success)
  if (anchor.chainId === undefined || anchor.chainId === null) {
    add("chain-id", "fail", `the anchor states no chainId (the RPC serves chain ${served})`)
    return checks
  }
  if (served !== anchor.chainId) {
    add("chain-id", "fail", `the RPC serves chain ${served}, the anchor states chain ${anchor.chainId}; other checks skipped`)
    return checks
  }
  add("chain-id", "pass", `chain ${served}`)

  // 2. There is a contract at the stated address.
  if (code._tag === "Failure") rpcProblem(code, "contract-code")
  else if (typeof code.success !== "string" || code.success === "0x" || code.success === "0x0") {
    add("contract-code", "fail", `no contract code at ${contract} on chain ${served}`)
  } else add("contract-code", "pass", `${(code.success.length - 2) / 2} bytes of code at ${contract}`)

  // 3. The contract's own view: inclusion and the root anchored there.
  if (verified !== undefined) {
    if (verified._tag === "Failure") rpcProblem(verified, "contract-verify")
    else {
      const w = words(String(verified.success))
      if (w.length === 1 && w[0] === 1n) add("contract-verify", "pass", `verify(hash, proof, root) = true at ${contract}`)
      else if (w.length === 1 && w[0] === 0n) {
        add("contract-verify", "fail",
          `verify(hash, proof, root) = false at ${contract}: the proof does not lead to the root, or the root is not anchored in this contract`)
      } else {add("contract-verify", "fail",
          `verify(hash, proof, root) at ${contract} did not return a bool (${String(verified.success).slice(0, 20)}…): not an AnchorRegistry`)}
    }
  }
  let anchoredBlock: number | undefined
  if (stored !== undefined) {
    if (stored._tag === "Failure") rpcProblem(stored, "contract-anchor")
    else {
      const w = words(String(stored.success))
      if (w.length !== 4) {
        add("contract-anchor", "fail", `getAnchor(root) at ${contract} did not return (batchId, blockNumber, timestamp, leafCount): not an AnchorRegistry`)
      } else if (w[0] === 0n) add("contract-anchor", "fail", `root ${root} is not anchored in contract ${contract} (getAnchor: batchId 0)`)
      else {
        const [batchId, blockNumber, timestamp, leafCount] = w.map(Number) as [number, number, number, number]
        anchoredBlock = blockNumber
        const problems: Array<string> = []
        if (String(batchId) !== String(anchor.batchId)) problems.push(`batch ${batchId}, not the stated ${anchor.batchId}`)
        if (anchor.blockNumber !== null && blockNumber !== anchor.blockNumber) problems.push(`block ${blockNumber}, not the stated ${anchor.blockNumber}`)
        if (anchor.leafCount !== undefined && leafCount !== anchor.leafCount) problems.push(`${leafCount} leaves, not the stated ${anchor.leafCount}`)
        if (anchor.anchoredAt && Date.parse(anchor.anchoredAt) !== timestamp * 1000) {
          problems.push(`at ${new Date(timestamp * 1000).toISOString()}, not the stated ${anchor.anchoredAt}`)
        }
        const at = `batch ${batchId}, block ${blockNumber}, ${new Date(timestamp * 1000).toISOString()}, ${leafCount} leaves`
        if (problems.length > 0) add("contract-anchor", "fail", `root anchored as ${problems.join("; ")}`)
        else add("contract-anchor", "pass", `root anchored: ${at}`)
      }
    }
  }

  // 4. The stated transaction emitted Anchored(batchId, root) from the stated contract.
  const stateBlockHash = anchor.blockHash?.toLowerCase()
  let receiptBlockHash: string | undefined
  if (receipt === undefined) add("transaction", "fail", `txHash ${JSON.stringify(anchor.txHash)} is not a transaction hash`)
  else if (receipt._tag === "Failure") rpcProblem(receipt, "transaction")
  else if (receipt.success === null) {
    add("transaction", "fail", `transaction ${txHash} not found on chain ${served} (never mined, or reorganised away)`)
  } else {
    const r = receipt.success as { status?: string; blockNumber?: string; blockHash?: string;
      logs?: Array<{ address?: string; topics?: Array<string>; data?: string }> }
    receiptBlockHash = r.blockHash?.toLowerCase()
    const number = hexNumber(r.blockNumber)
    const batchTopic = "0x" +
      uint(BigInt(typeof anchor.batchId === "number" ? anchor.batchId : /^\d+$/.test(String(anchor.batchId)) ? String(anchor.batchId) : 0))
    const log = (r.logs ?? []).find((l) =>
      l.address?.toLowerCase() === contract && l.topics?.[0]?.toLowerCase() === ANCHORED_TOPIC &&
      l.topics?.[1]?.toLowerCase() === batchTopic && l.topics?.[2]?.toLowerCase() === root
    )
    const problems: Array<string> = []
    if (r.status !== "0x1") problems.push(`it reverted (status ${r.status})`)
    if (anchor.blockNumber !== null && number !== anchor.blockNumber) problems.push(`it is in block ${number}, not the stated ${anchor.blockNumber}`)
    if (stateBlockHash && receiptBlockHash !== stateBlockHash) problems.push(`its block hash is ${receiptBlockHash}, not the stated ${stateBlockHash}`)
    if (log === undefined) problems.push(`it has no Anchored(batchId ${anchor.batchId}, root ${root}) log from ${contract}`)
    else if (anchor.leafCount !== undefined && log.data !== undefined && Number(BigInt(log.data)) !== anchor.leafCount) {
      problems.push(`its Anchored log says ${Number(BigInt(log.data))} leaves, not the stated ${anchor.leafCount}`)
    }
    if (problems.length > 0) add("transaction", "fail", `transaction ${txHash}: ${problems.join("; ")}`)
    else add("transaction", "pass", `transaction ${txHash} in block ${number} emitted Anchored(batch ${anchor.batchId}, root) from ${contract}`)
  }

  // 5. The stated block is canonical (the block at that height has the stated hash), deep enough.
  const number = anchor.blockNumber ?? anchoredBlock
  const expectHash = stateBlockHash || receiptBlockHash
  if (number === undefined || number === null) add("block", "fail", "the anchor states no block number")
  else {
    const block = yield* attempt(rpc.call("eth_getBlockByNumber", ["0x" + number.toString(16), false]))
    const headNumber = head._tag === "Success" ? hexNumber(head.success) : undefined
    if (block._tag === "Failure") rpcProblem(block, "block")
    else if (block.success === null) {
      add("block", "fail", `chain ${served} has no block ${number}${headNumber !== undefined ? ` (head is ${headNumber})` : ""}: reorganised away`)
    } else {
      const actual = String((block.success as { hash?: string }).hash).toLowerCase()
      if (expectHash === undefined) add("block", "fail", `no block hash stated and no receipt to take one from; block ${number} is ${actual}`)
      else if (actual !== expectHash) {
        add("block", "fail", `block ${number} on chain ${served} is ${actual}, not the stated ${expectHash}: the anchor's block was reorganised away`)
      } else add("block", "pass", `block ${number} is ${actual} on the canonical chain`)
    }
    if (head._tag === "Failure") rpcProblem(head, "confirmations")
    else if (headNumber !== undefined) {
      const confirmations = headNumber - number + 1
      if (confirmations >= options.minConfirmations) {
        add("confirmations", "pass", `${confirmations} confirmations (head ${headNumber}; required ${options.minConfirmations})`)
      } else add("confirmations", "fail", `${Math.max(0, confirmations)} confirmations (head ${headNumber}), ${options.minConfirmations} required`)
    }
  }
  return checks
})
