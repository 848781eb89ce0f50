/** Wire schemas of the webhooks API (SPEC 3, 5). Shared by the server and the typed client. */
import { Schema } from "effect"
import { Count, DateTimeString, RecordId } from "./recordSchemas.ts"

/**
 * A delivery id: `dlv_` + 32 lowercase hex as the node issues them. Any other `dlv_` + letters, digits,
 * `_` or `-` is simply not found (404); anything else is a 400 naming it, and never reaches a query.
 */
export const DeliveryId = Schema.String.check(Schema.isPattern(/^dlv_[0-9A-Za-z_-]{1,64}$/, {
  toJsonSchema: () => ({ pattern: "^dlv_[0-9A-Za-z_-]{1,64}$" })
})).annotate({ description: "A delivery id: dlv_ and 32 lowercase hex characters as this node issues them" })

/**
 * The event id of X-Service-Event-Id and webhook-id: `evt_` + 24 lowercase hex as the node makes them
 * (Outbox.newEventId); letters, digits, `_` and `-` are accepted, so ids written by other means stay
 * readable, and nothing else (no %00 reaches a query).
 */
export const EventId = Schema.String.check(Schema.isPattern(/^evt_[0-9A-Za-z_-]{1,64}$/, {
  toJsonSchema: () => ({ pattern: "^evt_[0-9A-Za-z_-]{1,64}$" })
})).annotate({ description: "An event id (X-Service-Event-Id, webhook-id): evt_ and 24 lowercase hex characters as this node makes them" })

/** A batch request's id (X-Service-Batch-Id, its webhook-id): `whb_` + 32 lowercase hex. */
export const RequestId = Schema.String.check(Schema.isPattern(/^whb_[0-9a-f]{32}$/, {
  toJsonSchema: () => ({ pattern: "^whb_[0-9a-f]{32}$" })
})).annotate({ description: "A batch request's id (X-Service-Batch-Id, webhook-id): whb_ and 32 lowercase hex characters" })

export const EventKind = Schema.Literals(["anchor.confirmed", "anchor.failed", "record.updated", "record.deleted"])
/**
 * What a delivery carries: an event kind, or `webhook.test`, the test event the console sends to the
 * account's webhook URL (it belongs to no record: its delivery's `recordId` is ""). Not subscribable.
 */
export const DeliveryEventKind = Schema.Literals([...EventKind.literals, "webhook.test"])
export const PayloadFormat = Schema.Literals(["multichain", "envelope"])
export const DeliveryState = Schema.Literals(["PENDING", "SUCCEEDED", "FAILED"])

export const DeliveryMode = Schema.Literals(["single", "batch"])

/** How an environment's deliveries go out (docs/webhooks.md, "Batched delivery"). */
export const DeliverySettings = Schema.Struct({
  mode: DeliveryMode.annotate({
    description: "single: one event per request (the default). batch: up to maxEvents events of one kind per request, as a JSON object { events: [...] }"
  }),
  maxEvents: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1000 })).annotate({
    description: "batch: the most events one request carries (1-1000)"
  }),
  maxWaitMs: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 10000 })).annotate({
    description: "batch: the longest a partial batch waits for more events before it goes out, in milliseconds (0-10000; 0: at once)"
  })
}).annotate({ identifier: "WebhookDeliverySettings" })

export const WebhookSettingsView = Schema.Struct({
  url: Schema.NullOr(Schema.String),
  events: Schema.Array(EventKind),
  payloadFormat: PayloadFormat,
  enabled: Schema.Boolean,
  secret: Schema.String.annotate({
    description: "The newest secret (whsec_…). During a rotation the previous one still signs x-webhook-signature and this one signs x-webhook-signature-next."
  }),
  rotation: Schema.NullOr(Schema.Struct({
    startedAt: DateTimeString,
    previousSecretExpiresAt: DateTimeString
  })),
  delivery: DeliverySettings
}).annotate({ identifier: "WebhookSettings" })

export const WebhookSettingsPatch = Schema.Struct({
  url: Schema.optionalKey(Schema.NullOr(Schema.String)),
  events: Schema.optionalKey(Schema.Array(EventKind)),
  payloadFormat: Schema.optionalKey(PayloadFormat),
  enabled: Schema.optionalKey(Schema.Boolean),
  delivery: Schema.optionalKey(Schema.Struct({
    mode: Schema.optionalKey(DeliverySettings.fields.mode),
    maxEvents: Schema.optionalKey(DeliverySettings.fields.maxEvents),
    maxWaitMs: Schema.optionalKey(DeliverySettings.fields.maxWaitMs)
  }).annotate({ identifier: "WebhookDeliverySettingsUpdate", description: "Members left out keep their value" }))
}).annotate({ identifier: "WebhookSettingsUpdate", description: "Members left out keep their value" })

export const RotationResult = Schema.Struct({
  secret: Schema.String,
  previousSecretExpiresAt: DateTimeString,
  settings: WebhookSettingsView
}).annotate({ identifier: "WebhookSecretRotation" })

/** `{}`: these POSTs take no parameters (every POST carries a JSON body, SPEC 3). A struct of no fields accepts any object, so the filter refuses members. */
export const EmptyBody = Schema.Struct({}).check(Schema.makeFilter((body) => {
  const keys = Object.keys(body)
  return keys.length === 0 || `Unknown field${keys.length > 1 ? "s" : ""} ${keys.join(", ")}: this endpoint takes {}`
}, { toJsonSchema: () => ({ type: "object", maxProperties: 0 }) })).annotate({ identifier: "Empty", description: "{}" })

export const AttemptView = Schema.Struct({
  attempt: Count,
  round: Count,
  startedAt: DateTimeString,
  statusCode: Schema.NullOr(Count),
  latencyMs: Count,
  error: Schema.NullOr(Schema.String),
  retryInMs: Schema.NullOr(Count).annotate({
    description: "Delay scheduled before the next attempt after this one failed; null when it succeeded or was the last"
  })
}).annotate({ identifier: "WebhookAttempt" })

export const DeliveryView = Schema.Struct({
  id: DeliveryId,
  eventId: EventId,
  event: DeliveryEventKind,
  recordId: Schema.Union([RecordId, Schema.Literal("")]).annotate({ description: "The event's record; \"\" for a webhook.test event" }),
  target: Schema.Literals(["record", "account"]),
  url: Schema.String,
  status: DeliveryState,
  round: Count,
  nextAttempt: Schema.NullOr(Count),
  nextAttemptAt: Schema.NullOr(DateTimeString),
  lastStatusCode: Schema.NullOr(Count),
  lastError: Schema.NullOr(Schema.String),
  createdAt: DateTimeString,
  deliveredAt: Schema.NullOr(DateTimeString),
  attempts: Schema.Array(AttemptView)
}).annotate({ identifier: "WebhookDelivery" })

export const DeliveryList = Schema.Struct({
  deliveries: Schema.Array(DeliveryView),
  nextCursor: Schema.NullOr(Schema.String)
}).annotate({ identifier: "WebhookDeliveryList" })

/** One event of a batch request, and whether the receiver took it. */
export const RequestEventView = Schema.Struct({
  eventId: EventId,
  recordId: Schema.Union([RecordId, Schema.Literal("")]),
  taken: Schema.Boolean.annotate({ description: "The request answered 2xx and did not name this event in failedEventIds" })
}).annotate({ identifier: "WebhookRequestEvent" })

export const RequestView = Schema.Struct({
  id: RequestId,
  event: DeliveryEventKind,
  url: Schema.String,
  startedAt: DateTimeString,
  statusCode: Schema.NullOr(Count),
  latencyMs: Count,
  error: Schema.NullOr(Schema.String),
  eventCount: Count,
  events: Schema.Array(RequestEventView)
}).annotate({ identifier: "WebhookRequest", description: "One HTTP request of a batched delivery, as the receiver got it" })

export const RequestList = Schema.Struct({
  requests: Schema.Array(RequestView),
  nextCursor: Schema.NullOr(Schema.String)
}).annotate({ identifier: "WebhookRequestList" })

export const RequestAttempts = Schema.Struct({
  id: RequestId,
  requests: Schema.Array(RequestView).annotate({ description: "Every request sent under this id (the same events again), newest first" })
}).annotate({ identifier: "WebhookRequestAttempts" })

export const RequestRedelivery = Schema.Struct({
  id: RequestId,
  deliveries: Schema.Array(DeliveryView).annotate({ description: "The events' deliveries, each queued for a new round of attempts" })
}).annotate({ identifier: "WebhookRequestRedelivery" })
