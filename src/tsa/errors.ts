/** What can go wrong with a time stamp outside RFC 3161's own answers (those are TimeStampResp refusals, ./token.ts). */
import { Schema } from "effect"

export class TsaDisabled extends Schema.TaggedError<TsaDisabled>()("TsaDisabled", {}) {
  get errorCode() {
    return "NOT_FOUND" as const
  }
  override get message() {
    return "This node has no time-stamp authority: set TSA_CERT_FILE and TSA_KEY_FILE (docs/timestamping.md)"
  }
}

export class TimestampNotFound extends Schema.TaggedError<TimestampNotFound>()("TimestampNotFound", { serial: Schema.String }) {
  get errorCode() {
    return "NOT_FOUND" as const
  }
  override get message() {
    return `No time-stamp token with serial ${this.serial}`
  }
}
