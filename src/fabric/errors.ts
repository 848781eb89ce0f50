/** The one error of the Fabric integration, with a `reason` saying what went wrong. */
import { Schema } from "effect"

/** The peer did not answer in time or is unreachable (UNAVAILABLE, DEADLINE_EXCEEDED, ...): worth retrying. */
export class PeerUnavailable extends Schema.TaggedError<PeerUnavailable>()("PeerUnavailable", { message: Schema.String }) {}
/** The chaincode refused: the root is anchored already (adopt the existing anchor). */
export class AlreadyAnchored extends Schema.TaggedError<AlreadyAnchored>()("AlreadyAnchored", { message: Schema.String }) {}
/** The chaincode (or the endorser) refused the proposal for another reason. */
export class EndorsementRefused extends Schema.TaggedError<EndorsementRefused>()("EndorsementRefused", { message: Schema.String }) {}
/** The transaction committed with a validation code other than VALID (11 = MVCC_READ_CONFLICT). */
export class InvalidTransaction extends Schema.TaggedError<InvalidTransaction>()("InvalidTransaction", {
  message: Schema.String,
  code: Schema.Number
}) {}
/** A block does not verify (data hash, hash chain) or the stream skipped a block. */
export class BadBlock extends Schema.TaggedError<BadBlock>()("BadBlock", { message: Schema.String }) {}
/** Anything else (bad credentials, unknown channel or chaincode, ...). */
export class Rejected extends Schema.TaggedError<Rejected>()("Rejected", { message: Schema.String }) {}

export const FabricErrorReason = Schema.Union([PeerUnavailable, AlreadyAnchored, EndorsementRefused, InvalidTransaction, BadBlock, Rejected])
export type FabricErrorReason = typeof FabricErrorReason.Type

export class FabricError extends Schema.TaggedError<FabricError>()("FabricError", {
  networkId: Schema.String,
  operation: Schema.String,
  reason: FabricErrorReason
}) {
  override get message() {
    return `${this.networkId} ${this.operation}: ${this.reason._tag}: ${this.reason.message}`
  }
}

/** TxValidationCode values the writer treats as "endorse again" (the read set went stale). */
export const MVCC_READ_CONFLICT = 11
export const PHANTOM_READ_CONFLICT = 12

// gRPC status codes (@grpc/grpc-js `status`)
const CANCELLED = 1
const UNKNOWN = 2
const DEADLINE_EXCEEDED = 4
const RESOURCE_EXHAUSTED = 8
const ABORTED = 10
const UNAVAILABLE = 14

/** Classifies a fabric-gateway / gRPC failure. Messages are cut short (never a key: the client never sees one). */
export const classify = (e: unknown): FabricErrorReason => {
  const err = e as { code?: unknown; message?: unknown; details?: unknown }
  const details = Array.isArray(err.details)
    ? err.details.map((d: { message?: unknown }) => String(d?.message ?? "")).filter((m) => m !== "").join("; ")
    : ""
  const message = [typeof err.message === "string" ? err.message : String(e), details].filter((m) => m !== "").join(" | ").slice(0, 400)
  const code = typeof err.code === "number" ? err.code : undefined
  const m = message.toLowerCase()
  if (m.includes("is already anchored")) return new AlreadyAnchored({ message })
  if (m.includes("chaincode response")) return new EndorsementRefused({ message })
  if (code === UNAVAILABLE || code === DEADLINE_EXCEEDED || code === RESOURCE_EXHAUSTED || code === CANCELLED ||
    m.includes("econnrefused") || m.includes("no connection established") || m.includes("deadline"))
  {
    return new PeerUnavailable({ message })
  }
  // The gateway reports orderer/endorser trouble (not the chaincode's) as ABORTED / UNKNOWN: transient.
  if (code === ABORTED || code === UNKNOWN) return new PeerUnavailable({ message })
  return new Rejected({ message })
}
