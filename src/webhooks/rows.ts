/**
 * Row schemas of the webhooks API's reads (settings, the delivery log and its attempts). Every store of
 * this folder reads and writes through `SqlSchema` with schemas like these; the dispatcher's own rows are
 * beside its statements (the files ./DeliveryClaims.ts composes). A row the schema refuses means the schema and
 * the migrations disagree: a defect, not an error a caller could handle (`rowDefects`, src/db/rows.ts). SQL
 * errors stay typed (`SqlError`) for the callers.
 */
import { Schema } from "effect"
import { RecordView } from "../api/recordSchemas.ts"
import { DeliveryEventKind, DeliveryMode, DeliveryState, DeliveryView, EventKind, PayloadFormat } from "../api/webhookSchemas.ts"

/** `events` and `webhook_settings.events`, `payload_format`, `delivery_mode`, delivery states and targets: the wire's literals. */
export { DeliveryEventKind, DeliveryMode, DeliveryState, EventKind, PayloadFormat }
export type DeliveryMode = typeof DeliveryMode.Type
export type DeliveryEventKind = typeof DeliveryEventKind.Type
export type DeliveryState = typeof DeliveryState.Type
export type PayloadFormat = typeof PayloadFormat.Type
export type EventKind = typeof EventKind.Type

/** 'record' (the record's webhookUrl) or 'account' (the global webhook). */
export const DeliveryTarget = DeliveryView.fields.target
/** A delivery's environment: its record's (test / live). */
export const Environment = RecordView.fields.environment

/** `webhook_settings` as GET /v1/webhooks shows it, the rotation read at the Clock's time. */
export const WebhookSettingsRow = Schema.Struct({
  url: Schema.NullOr(Schema.String),
  events: Schema.Array(EventKind),
  payloadFormat: PayloadFormat,
  enabled: Schema.Boolean,
  secret: Schema.String,
  rotationStartedAt: Schema.NullOr(Schema.Date),
  previousSecretExpiresAt: Schema.NullOr(Schema.Date),
  deliveryMode: DeliveryMode,
  batchMaxEvents: Schema.Number,
  batchMaxWaitMs: Schema.Number
})
export type WebhookSettingsRow = typeof WebhookSettingsRow.Type

/** A delivery of the log (`seq` is the table's key as text: the list's cursor). */
export const DeliveryRow = Schema.Struct({
  seq: Schema.String,
  id: Schema.String,
  eventId: Schema.String,
  kind: DeliveryEventKind,
  recordId: Schema.String,
  environment: Environment,
  target: DeliveryTarget,
  url: Schema.String,
  state: DeliveryState,
  round: Schema.Number,
  attempts: Schema.Number,
  nextAttemptAt: Schema.NullOr(Schema.Date),
  lastStatusCode: Schema.NullOr(Schema.Number),
  lastError: Schema.NullOr(Schema.String),
  createdAt: Schema.Date,
  deliveredAt: Schema.NullOr(Schema.Date)
})
export type DeliveryRow = typeof DeliveryRow.Type

/** One attempt of the log. */
export const AttemptRow = Schema.Struct({
  deliverySeq: Schema.String,
  round: Schema.Number,
  attempt: Schema.Number,
  startedAt: Schema.Date,
  statusCode: Schema.NullOr(Schema.Number),
  latencyMs: Schema.Number,
  error: Schema.NullOr(Schema.String),
  retryInMs: Schema.NullOr(Schema.Number)
})
export type AttemptRow = typeof AttemptRow.Type
