/**
 * The outbox: every state change a client hears about writes one event row in the same transaction
 * (table `events`; a trigger turns it into webhook deliveries, see src/webhooks/). This is the one
 * schema of those events: every producer encodes through it (`Outbox.append`) and the webhook
 * renderer decodes through it, so neither guesses at the other's JSON.
 *
 * Stored as `kind` (column) + payload (jsonb, the event without `kind`).
 */
import { Schema } from "effect"
import { Anchor, ChainType, RecordStatus } from "../api/recordSchemas.ts"
import { EventKind } from "../api/webhookSchemas.ts"

export { EventKind }
export type EventKind = typeof EventKind.Type

/** A record reached ANCHORED: every anchor it has (a hybrid record: EVM and Fabric), confirmed. */
export const AnchorConfirmed = Schema.Struct({
  kind: Schema.Literal("anchor.confirmed"),
  recordId: Schema.String,
  hash: Schema.String,
  /** The record's chain type (hybrid records have two anchors). */
  recordChainType: ChainType,
  /** The record's primary network: its anchor is the top level of the webhook's form B. */
  networkId: Schema.String,
  /** When the record became ANCHORED. */
  anchoredAt: Schema.String,
  anchors: Schema.Array(Anchor)
})
export type AnchorConfirmed = typeof AnchorConfirmed.Type

/** A batch was given up: its records reached FAILED. */
export const AnchorFailed = Schema.Struct({
  kind: Schema.Literal("anchor.failed"),
  recordId: Schema.String,
  hash: Schema.String,
  networkId: Schema.String,
  chainType: Schema.Literals(["evm", "fabric"]),
  reason: Schema.String,
  errorCode: Schema.Literal("ANCHOR_FAILED")
})
export type AnchorFailed = typeof AnchorFailed.Type

/** The owner changed mutable fields (only those that changed are listed). */
export const RecordUpdated = Schema.Struct({
  kind: Schema.Literal("record.updated"),
  recordId: Schema.String,
  hash: Schema.String,
  status: RecordStatus,
  changes: Schema.Struct({
    metadata: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown)),
    webhookUrl: Schema.optionalKey(Schema.NullOr(Schema.String))
  })
})
export type RecordUpdated = typeof RecordUpdated.Type

/** The owner deleted the record (soft: hidden; hard: data erased, tombstone kept). */
export const RecordDeleted = Schema.Struct({
  kind: Schema.Literal("record.deleted"),
  recordId: Schema.String,
  hash: Schema.String,
  status: RecordStatus,
  mode: Schema.Literals(["soft", "hard"])
})
export type RecordDeleted = typeof RecordDeleted.Type

export const OutboxEvent = Schema.Union([AnchorConfirmed, AnchorFailed, RecordUpdated, RecordDeleted])
export type OutboxEvent = typeof OutboxEvent.Type
