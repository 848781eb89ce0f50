/** What can go wrong with a time stamp outside RFC 3161's own answers (those are TimeStampResp refusals, ./token.ts). */
import { Schema } from "effect"
import { DomainErrorClass } from "../api/domainError.ts"

export class TsaDisabled
  extends DomainErrorClass<TsaDisabled>()("TsaDisabled", {}, "NOT_FOUND",
    () => "This node has no time-stamp authority: set TSA_CERT_FILE and TSA_KEY_FILE (docs/timestamping.md)")
{}

export class TimestampNotFound
  extends DomainErrorClass<TimestampNotFound>()("TimestampNotFound", { serial: Schema.String }, "NOT_FOUND",
    (error) => `No time-stamp token with serial ${error.serial}`)
{}
