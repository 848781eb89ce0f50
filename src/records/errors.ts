/**
 * What can go wrong with records, as the records capability says it. Each names its SPEC 7 code; the
 * edge maps it to the wire once (`toWire`, src/api/errors.ts). Messages are for the client: no
 * internals, no secrets.
 */
import { Schema } from "effect"
import { excerpt } from "../excerpt.ts"

export class RecordNotFound extends Schema.TaggedError<RecordNotFound>()("RecordNotFound", { recordId: Schema.String }) {
  get errorCode() {
    return "RECORD_NOT_FOUND" as const
  }
  override get message() {
    return `Record ${this.recordId} not found`
  }
}

export class HashNotFound extends Schema.TaggedError<HashNotFound>()("HashNotFound", { hash: Schema.String }) {
  get errorCode() {
    return "RECORD_NOT_FOUND" as const
  }
  override get message() {
    return `No record with hash ${this.hash}`
  }
}

export class RecordDeleted extends Schema.TaggedError<RecordDeleted>()("RecordDeleted", { recordId: Schema.String }) {
  get errorCode() {
    return "RECORD_DELETED" as const
  }
  override get message() {
    return `Record ${this.recordId} has been deleted`
  }
}

export class NotAnchored extends Schema.TaggedError<NotAnchored>()("NotAnchored", { recordId: Schema.String, status: Schema.String }) {
  get errorCode() {
    return "NOT_ANCHORED" as const
  }
  override get message() {
    return `Record ${this.recordId} is ${this.status}, not anchored yet`
  }
}

export class ImmutableField extends Schema.TaggedError<ImmutableField>()("ImmutableField", { fields: Schema.Array(Schema.String) }) {
  get errorCode() {
    return "IMMUTABLE_FIELD" as const
  }
  override get message() {
    // Names come from the client: at most 5, each bounded (src/excerpt.ts).
    const named = this.fields.slice(0, 5).map((f) => excerpt(f)).join(", ")
    const more = this.fields.length > 5 ? ` and ${this.fields.length - 5} more` : ""
    return `Field${this.fields.length > 1 ? "s" : ""} ${named}${more} cannot be changed; only metadata and webhookUrl are mutable`
  }
}

/** A submission the schema or the record rules refuse (the message names the field). */
export class InvalidRecord extends Schema.TaggedError<InvalidRecord>()("InvalidRecord", { reason: Schema.String }) {
  get errorCode() {
    return "VALIDATION_ERROR" as const
  }
  override get message() {
    return this.reason
  }
}

/** A record for a chain no configured network anchors in the key's environment (it would wait in QUEUED forever). */
export class ChainNotConfigured extends Schema.TaggedError<ChainNotConfigured>()("ChainNotConfigured", {
  chain: Schema.String,
  environment: Schema.String,
  /** The kinds of network the environment lacks (a hybrid record needs both). */
  missing: Schema.Array(Schema.Literals(["evm", "fabric"]))
}) {
  get errorCode() {
    return "CHAIN_NOT_CONFIGURED" as const
  }
  override get message() {
    const what = this.missing.map((m) => m === "evm" ? "EVM network (EVM_NETWORKS)" : "Fabric network (FABRIC_NETWORKS)").join(" and no ")
    const other = this.missing.includes("evm") ? "" : "submit with chain evm, or "
    return `chain ${this.chain} is not anchored by this node for ${this.environment} keys: no ${what} serves the ` +
      `${this.environment} environment; ${other}ask the operator to configure one`
  }
}

export class InvalidEncryptionKey extends Schema.TaggedError<InvalidEncryptionKey>()("InvalidEncryptionKey", { reason: Schema.String }) {
  get errorCode() {
    return "INVALID_ENCRYPTION_KEY" as const
  }
  override get message() {
    return this.reason
  }
}

export class IdempotencyConflict extends Schema.TaggedError<IdempotencyConflict>()("IdempotencyConflict", {}) {
  get errorCode() {
    return "IDEMPOTENCY_CONFLICT" as const
  }
  override get message() {
    return "Idempotency-Key was already used with a different request body"
  }
}

export class QuotaExceeded extends Schema.TaggedError<QuotaExceeded>()("QuotaExceeded", {
  used: Schema.Number,
  quota: Schema.Number,
  requested: Schema.Number,
  /** Seconds until the month turns. */
  retryAfterSeconds: Schema.Number
}) {
  get errorCode() {
    return "QUOTA_EXCEEDED" as const
  }
  override get message() {
    return `Monthly quota exceeded: ${this.used} of ${this.quota} records used this month` +
      (this.requested > 1 ? ` (this request has ${this.requested})` : "")
  }
}
