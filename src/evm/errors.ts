/** The one error of the EVM integration, with a `reason` saying what went wrong. */
import { Schema } from "effect"

/** The endpoint did not answer (connection refused, timeout, 5xx, rate limited): worth retrying. */
export class RpcUnavailable extends Schema.TaggedError<RpcUnavailable>()("RpcUnavailable", { message: Schema.String }) {}
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

const text = (e: unknown): string => {
  if (e instanceof Error) {
    const details = (e as { details?: unknown }).details
    const short = (e as { shortMessage?: unknown }).shortMessage
    return [typeof short === "string" ? short : e.message, typeof details === "string" ? details : ""].join(" ").trim()
  }
  return String(e)
}

/** Classifies a viem/JSON-RPC failure. Messages are cut short and never carry request bodies (signed txs). */
export const classify = (e: unknown): EvmErrorReason => {
  // RPC URLs often carry an API key in the path or query: keep only scheme and host.
  const message = text(e)
    .replace(/\b(https?|wss?):\/\/([^/\s"'?#]+)[^\s"']*/g, (_, scheme: string, host: string) => `${scheme}://${host.replace(/^[^@]*@/, "")}/…`)
    .replace(/0x[0-9a-fA-F]{200,}/g, "0x…")
    .slice(0, 300)
  const m = message.toLowerCase()
  const name = e instanceof Error ? e.name : ""
  // RootAlreadyAnchored(bytes32,uint64), by name or selector (nodes that return raw revert data)
  if (m.includes("rootalreadyanchored") || m.includes("0x040a0202")) return new AlreadyAnchored({ message })
  if (m.includes("0xe2517d3f")) return new Reverted({ message: `AccessControlUnauthorizedAccount (signer lacks ANCHORER_ROLE): ${message}` })
  if (m.includes("nonce too low") || m.includes("nonce has already been used")) {
    return new NonceTooLow({ message })
  }
  if (m.includes("replacement transaction underpriced") || m.includes("underpriced") || m.includes("max fee per gas less than block base fee")) {
    return new Underpriced({ message })
  }
  if (m.includes("insufficient funds")) return new InsufficientFunds({ message })
  if (name === "HttpRequestError" || name === "TimeoutError" || name === "RpcRequestError" && m.includes("rate") ||
    m.includes("fetch failed") || m.includes("econnrefused") || m.includes("socket") || m.includes("timed out") ||
    m.includes("econnreset") || m.includes("http request failed") || m.includes("limit exceeded"))
  {
    return new RpcUnavailable({ message })
  }
  if (m.includes("revert") || name.includes("Revert")) return new Reverted({ message })
  return new Rejected({ message })
}

/** The node already holds this exact transaction: a re-broadcast that changes nothing. */
export const isAlreadyKnown = (e: unknown): boolean => /already known|known transaction|already imported|already exists/i.test(text(e))

export const isTransient = (e: EvmError): boolean => e.reason._tag === "RpcUnavailable"
