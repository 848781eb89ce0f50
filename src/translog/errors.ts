/** Why a record has no proof against its network's log (404 NOT_FOUND on the wire). */
import { Schema } from "effect"
import { DomainErrorClass } from "../api/domainError.ts"

export class NotInLog
  extends DomainErrorClass<NotInLog>()("NotInLog", { recordId: Schema.String, reason: Schema.String }, "NOT_FOUND",
    (error) => `Record ${error.recordId} has no proof in its network's log: ${error.reason}`)
{}
