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
