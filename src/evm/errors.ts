/** The one error of the EVM integration, with a `reason` saying what went wrong. */
import { Schema } from "effect"
import { BaseError, ContractFunctionRevertedError, decodeErrorResult, ExecutionRevertedError, FeeCapTooLowError, type Hex, HttpRequestError,
  InsufficientFundsError, LimitExceededRpcError, NonceTooLowError, RpcRequestError, SocketClosedError, TimeoutError, WebSocketRequestError } from "viem"
import { getNodeError } from "viem/utils"
import { anchorRegistryAbi } from "./AnchorRegistry.abi.ts"

/**
 * The endpoint did not answer (connection refused, timeout, 5xx, rate limited): worth retrying.
 * `timedOut`: the call ran into its bound (not retried at once: see `rpcRetry` in ./chain.ts).
 */
export class RpcUnavailable extends Schema.TaggedError<RpcUnavailable>()("RpcUnavailable", {
  message: Schema.String,
  timedOut: Schema.Boolean
}) {}
/** The transaction would revert or reverted (other than "root already anchored"). */
export class Reverted extends Schema.TaggedError<Reverted>()("Reverted", { message: Schema.String }) {}
/** The root is already anchored on chain (`RootAlreadyAnchored`): adopt the existing anchor. */
export class AlreadyAnchored extends Schema.TaggedError<AlreadyAnchored>()("AlreadyAnchored", { message: Schema.String }) {}
/** The nonce was used already (by our own earlier transaction or another sender of this key). */
export class NonceTooLow extends Schema.TaggedError<NonceTooLow>()("NonceTooLow", { message: Schema.String }) {}
/** A replacement was rejected as underpriced, or the base fee is above the fee cap. */
export class Underpriced extends Schema.TaggedError<Underpriced>()("Underpriced", { message: Schema.String }) {}
/** The signer cannot pay for gas. */
export class InsufficientFunds extends Schema.TaggedError<InsufficientFunds>()("InsufficientFunds", { message: Schema.String }) {}
/** The endpoint answers for another chain than configured. */
export class WrongChain extends Schema.TaggedError<WrongChain>()("WrongChain", { message: Schema.String }) {}
/** Anything else the node said no to. */
export class Rejected extends Schema.TaggedError<Rejected>()("Rejected", { message: Schema.String }) {}

export const EvmErrorReason = Schema.Union([
  RpcUnavailable,
  Reverted,
  AlreadyAnchored,
  NonceTooLow,
  Underpriced,
  InsufficientFunds,
  WrongChain,
  Rejected
])
export type EvmErrorReason = typeof EvmErrorReason.Type

export class EvmError extends Schema.TaggedError<EvmError>()("EvmError", {
  networkId: Schema.String,
  operation: Schema.String,
  reason: EvmErrorReason
}) {
  override get message() {
    return `${this.networkId} ${this.operation}: ${this.reason._tag}: ${this.reason.message}`
  }
}

/** The first error of `type` in viem's chain of causes (the error itself first). */
const find = <T>(e: BaseError, type: abstract new(...args: never) => T): T | undefined => (e.walk((x) => x instanceof type) ?? undefined) as T | undefined

/**
 * What an error says, cut short for logs and the batch's last error: RPC URLs often carry an API key in
 * the path or query (only scheme and host are kept), and request bodies hold signed transactions (long hex
 * is elided). viem's short message and the node's details, never its meta messages (they quote the request).
 */
const describe = (e: unknown): string => {
  const endpoint = e instanceof BaseError ? find(e, HttpRequestError)?.url ?? find(e, WebSocketRequestError)?.url : undefined
  const said = e instanceof BaseError
    ? [e.shortMessage, e.details, endpoint === undefined ? undefined : `URL: ${endpoint}`]
    : [e instanceof Error ? e.message : String(e)]
  return said.filter((s) => s !== undefined && s !== "").join(" ")
    .replace(/\b(https?|wss?):\/\/([^/\s"'?#]+)[^\s"']*/g, (_, scheme: string, host: string) => `${scheme}://${host.replace(/^[^@]*@/, "")}/…`)
    .replace(/0x[0-9a-fA-F]{200,}/g, "0x…")
    .slice(0, 300)
}

/**
 * Node answers viem has no error class for (a JSON-RPC error with only a message), matched on the
 * node's own words the way viem's `getNodeError` matches the ones it knows.
 */
const NODE_SAYS = {
  /** geth/anvil "replacement transaction underpriced", "transaction underpriced". */
  underpriced: /underpriced/i,
  /** A nonce-too-low in other words than viem's NonceTooLowError knows. */
  nonceUsed: /nonce has already been used/i,
  /** The node holds this exact transaction (viem counts these as NonceTooLowError). */
  alreadyKnown: /already known|known transaction|already imported|already exists/i,
  /** A provider's rate limit answered as a plain JSON-RPC error. */
  rateLimited: /rate limit|limit exceeded/i
}

/** What the node said (the innermost RPC error's message), for the few answers without a viem class. */
const nodeSays = (e: BaseError): string => e.details ?? ""

/**
 * The contract error a revert carries, decoded with the AnchorRegistry ABI: the revert data viem decoded
 * (`ContractFunctionRevertedError`), else raw data found on the way (an RPC error's `data`, or quoted in
 * the node's message by nodes that return it only there).
 */
const revertedWith = (e: BaseError): string | undefined => {
  const reverted = find(e, ContractFunctionRevertedError)
  if (reverted?.data !== undefined) return reverted.data.errorName
  const candidates: Array<Hex> = []
  if (reverted?.raw !== undefined) candidates.push(reverted.raw)
  const withData = e.walk((x) => typeof (x as { data?: unknown } | null)?.data === "string") as { data: string } | null
  if (withData !== null && /^0x[0-9a-fA-F]{8,}$/.test(withData.data)) candidates.push(withData.data as Hex)
  candidates.push(...((nodeSays(e).match(/0x[0-9a-fA-F]{8,}/g) ?? []) as Array<Hex>))
  for (const data of candidates) {
    try {
      return decodeErrorResult({ abi: anchorRegistryAbi, data }).errorName
    } catch {
      // not an error of this contract
    }
  }
  return undefined
}

/**
 * Classifies a viem/JSON-RPC failure by walking viem's error chain (its typed errors, the contract's
 * revert decoded with the ABI). Messages are cut short and never carry request bodies or RPC secrets.
 */
export const classify = (e: unknown): EvmErrorReason => {
  const message = describe(e)
  // Everything the chain calls goes through viem, which wraps every failure in a BaseError.
  if (!(e instanceof BaseError)) return new Rejected({ message })
  const revert = revertedWith(e)
  if (revert === "RootAlreadyAnchored") return new AlreadyAnchored({ message })
  if (revert === "AccessControlUnauthorizedAccount") {
    return new Reverted({ message: `AccessControlUnauthorizedAccount (signer lacks ANCHORER_ROLE): ${message}` })
  }
  // Node errors viem typed on the way (estimateGas), else typed here from the raw answer (sendRawTransaction).
  const node = e.walk((x) => x instanceof NonceTooLowError || x instanceof FeeCapTooLowError || x instanceof InsufficientFundsError) ??
    getNodeError(e, {})
  const said = nodeSays(e)
  if (node instanceof NonceTooLowError || NODE_SAYS.nonceUsed.test(said)) return new NonceTooLow({ message })
  if (node instanceof FeeCapTooLowError || NODE_SAYS.underpriced.test(said)) return new Underpriced({ message })
  if (node instanceof InsufficientFundsError) return new InsufficientFunds({ message })
  if (find(e, TimeoutError) !== undefined) return new RpcUnavailable({ message, timedOut: true })
  if (
    find(e, HttpRequestError) !== undefined || find(e, WebSocketRequestError) !== undefined || find(e, SocketClosedError) !== undefined ||
    find(e, LimitExceededRpcError) !== undefined || (find(e, RpcRequestError)?.code === 429) || NODE_SAYS.rateLimited.test(said)
  ) {
    return new RpcUnavailable({ message, timedOut: false })
  }
  if (revert !== undefined || find(e, ContractFunctionRevertedError) !== undefined || node instanceof ExecutionRevertedError) {
    return new Reverted({ message })
  }
  return new Rejected({ message })
}

/** The node already holds this exact transaction: a re-broadcast that changes nothing. */
export const isAlreadyKnown = (e: unknown): boolean => e instanceof BaseError && NODE_SAYS.alreadyKnown.test(nodeSays(e))
