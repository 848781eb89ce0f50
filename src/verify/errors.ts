/** What can go wrong with a verification request (mapped to the wire by `toWire`). */
import { Schema } from "effect"

/** POST /v1/verify without data or hash, or with something that is not a proof bundle. */
export class InvalidVerifyRequest extends Schema.TaggedError<InvalidVerifyRequest>()("InvalidVerifyRequest", { reason: Schema.String }) {
  get errorCode() {
    return "VALIDATION_ERROR" as const
  }
  override get message() {
    return this.reason
  }
}

/** An anonymous POST /v1/verify without a bundle: looking up records by hash needs the account's key. */
export class KeyRequired extends Schema.TaggedError<KeyRequired>()("KeyRequired", {}) {
  get errorCode() {
    return "MISSING_API_KEY" as const
  }
  override get message() {
    return "Missing API key: without one, send the proof bundle to check (records are looked up by hash for their owner only)"
  }
}

/** Too many anonymous verifications from one client address. */
export class AnonymousVerifyLimited extends Schema.TaggedError<AnonymousVerifyLimited>()("AnonymousVerifyLimited", {
  retryAfterSeconds: Schema.Number
}) {
  get errorCode() {
    return "RATE_LIMIT_EXCEEDED" as const
  }
  override get message() {
    return "Rate limit exceeded: anonymous verifications are limited per client address"
  }
}

/** More chain checks than an account (or, without a key, a client address) may ask of this node's endpoints per second. */
export class VerifyChainLimited extends Schema.TaggedError<VerifyChainLimited>()("VerifyChainLimited", {
  perSecond: Schema.Number,
  retryAfterSeconds: Schema.Number
}) {
  get errorCode() {
    return "RATE_LIMIT_EXCEEDED" as const
  }
  override get message() {
    return `Rate limit exceeded: at most ${this.perSecond} anchors are checked against the chains per second for one account (or, without a key, one client address)`
  }
}
