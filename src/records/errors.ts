/**
 * What can go wrong with records, as the records capability says it. Each names its SPEC 7 code; the
 * edge maps it to the wire once (`toWire`, src/api/errors.ts). Messages are for the client: no
 * internals, no secrets.
 */
import { Schema } from "effect"
import { excerpt } from "../excerpt.ts"
import { DomainErrorClass } from "../api/domainError.ts"

export class RecordNotFound
  extends DomainErrorClass<RecordNotFound>()("RecordNotFound", { recordId: Schema.String }, "RECORD_NOT_FOUND", (error) => `Record ${error.recordId} not found`)
{}

export class HashNotFound
  extends DomainErrorClass<HashNotFound>()("HashNotFound", { hash: Schema.String }, "RECORD_NOT_FOUND", (error) => `No record with hash ${error.hash}`)
{}

export class RecordDeleted
  extends DomainErrorClass<RecordDeleted>()("RecordDeleted", { recordId: Schema.String }, "RECORD_DELETED",
    (error) => `Record ${error.recordId} has been deleted`)
{}

export class NotAnchored
  extends DomainErrorClass<NotAnchored>()("NotAnchored", { recordId: Schema.String, status: Schema.String }, "NOT_ANCHORED",
    (error) => `Record ${error.recordId} is ${error.status}, not anchored yet`)
{}

export class ImmutableField
  extends DomainErrorClass<ImmutableField>()("ImmutableField", { fields: Schema.Array(Schema.String) }, "IMMUTABLE_FIELD", (error) => {
    // Names come from the client: at most 5, each bounded (src/excerpt.ts).
    const named = error.fields.slice(0, 5).map((f) => excerpt(f)).join(", ")
    const more = error.fields.length > 5 ? ` and ${error.fields.length - 5} more` : ""
    return `Field${error.fields.length > 1 ? "s" : ""} ${named}${more} cannot be changed; only metadata and webhookUrl are mutable`
  })
{}

/** A submission the schema or the record rules refuse (the message names the field). */
export class InvalidRecord extends DomainErrorClass<InvalidRecord>()("InvalidRecord", { reason: Schema.String }, "VALIDATION_ERROR", (error) => error.reason) {}

/** A record for a chain no configured network anchors in the key's environment (it would wait in QUEUED forever). */
export class ChainNotConfigured extends DomainErrorClass<ChainNotConfigured>()("ChainNotConfigured", {
  chain: Schema.String,
  environment: Schema.String,
  /** The kinds of network the environment lacks (a hybrid record needs both). */
  missing: Schema.Array(Schema.Literals(["evm", "fabric"]))
}, "CHAIN_NOT_CONFIGURED", (error) => {
  const what = error.missing.map((m) => m === "evm" ? "EVM network (EVM_NETWORKS)" : "Fabric network (FABRIC_NETWORKS)").join(" and no ")
  const other = error.missing.includes("evm") ? "" : "submit with chain evm, or "
  return `chain ${error.chain} is not anchored by this node for ${error.environment} keys: no ${what} serves the ` +
    `${error.environment} environment; ${other}ask the operator to configure one`
}) {}

export class InvalidEncryptionKey
  extends DomainErrorClass<InvalidEncryptionKey>()("InvalidEncryptionKey", { reason: Schema.String }, "INVALID_ENCRYPTION_KEY", (error) => error.reason)
{}

export class IdempotencyConflict
  extends DomainErrorClass<IdempotencyConflict>()("IdempotencyConflict", {}, "IDEMPOTENCY_CONFLICT",
    () => "Idempotency-Key was already used with a different request body")
{}

export class QuotaExceeded extends DomainErrorClass<QuotaExceeded>()("QuotaExceeded", {
  used: Schema.Number,
  quota: Schema.Number,
  requested: Schema.Number,
  /** Seconds until the month turns. */
  retryAfterSeconds: Schema.Number
}, "QUOTA_EXCEEDED", (error) => {
  return `Monthly quota exceeded: ${error.used} of ${error.quota} records used this month` +
    (error.requested > 1 ? ` (this request has ${error.requested})` : "")
}) {}
