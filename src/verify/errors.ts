/** What can go wrong with a verification request (mapped to the wire by `toWire`). */
import { Schema } from "effect"
import { DomainErrorClass } from "../api/domainError.ts"

/** POST /v1/verify without data or hash, or with something that is not a proof bundle. */
export class InvalidVerifyRequest
  extends DomainErrorClass<InvalidVerifyRequest>()("InvalidVerifyRequest", { reason: Schema.String }, "VALIDATION_ERROR", (error) => error.reason)
{}

/** An anonymous POST /v1/verify without a bundle: looking up records by hash needs the account's key. */
export class KeyRequired
  extends DomainErrorClass<KeyRequired>()("KeyRequired", {}, "MISSING_API_KEY",
    () => "Missing API key: without one, send the proof bundle to check (records are looked up by hash for their owner only)")
{}

/** Too many anonymous verifications from one client address. */
export class AnonymousVerifyLimited extends DomainErrorClass<AnonymousVerifyLimited>()("AnonymousVerifyLimited", {
  retryAfterSeconds: Schema.Number
}, "RATE_LIMIT_EXCEEDED", () => "Rate limit exceeded: anonymous verifications are limited per client address") {}

/** More chain checks than an account (or, without a key, a client address) may ask of this node's endpoints per second. */
export class VerifyChainLimited extends DomainErrorClass<VerifyChainLimited>()("VerifyChainLimited", {
  perSecond: Schema.Number,
  retryAfterSeconds: Schema.Number
}, "RATE_LIMIT_EXCEEDED",
  (error) =>
    `Rate limit exceeded: at most ${error.perSecond} anchors are checked against the chains per second for one account (or, without a key, one client address)`)
{}
