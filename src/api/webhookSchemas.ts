/** Wire schemas of the webhooks API (SPEC 3, 5). Shared by the server and the typed client. */
import { Schema } from "effect"

export const EventKind = Schema.Literals(["anchor.confirmed", "anchor.failed", "record.updated", "record.deleted"])
/**
 * What a delivery carries: an event kind, or `webhook.test`, the test event the console sends to the
 * account's webhook URL (it belongs to no record: its delivery's `recordId` is ""). Not subscribable.
 */
export const DeliveryEventKind = Schema.Literals([...EventKind.literals, "webhook.test"])
export const PayloadFormat = Schema.Literals(["multichain", "envelope"])
export const DeliveryState = Schema.Literals(["PENDING", "SUCCEEDED", "FAILED"])

export const WebhookSettingsView = Schema.Struct({
  url: Schema.NullOr(Schema.String),
  events: Schema.Array(EventKind),
  payloadFormat: PayloadFormat,
  enabled: Schema.Boolean,
  secret: Schema.String.annotate({
    description: "The newest secret (whsec_…). During a rotation the previous one still signs x-webhook-signature and this one signs x-webhook-signature-next."
  }),
  rotation: Schema.NullOr(Schema.Struct({
    startedAt: Schema.String,
    previousSecretExpiresAt: Schema.String
  }))
}).annotate({ identifier: "WebhookSettings" })

export const WebhookSettingsPatch = Schema.Struct({
  url: Schema.optionalKey(Schema.NullOr(Schema.String)),
  events: Schema.optionalKey(Schema.Array(EventKind)),
  payloadFormat: Schema.optionalKey(PayloadFormat),
  enabled: Schema.optionalKey(Schema.Boolean)
}).annotate({ identifier: "WebhookSettingsUpdate", description: "Members left out keep their value" })

export const RotationResult = Schema.Struct({
  secret: Schema.String,
  previousSecretExpiresAt: Schema.String,
  settings: WebhookSettingsView
}).annotate({ identifier: "WebhookSecretRotation" })

/** `{}`: these POSTs take no parameters (every POST carries a JSON body, SPEC 3). A struct of no fields accepts any object, so the filter refuses members. */
export const EmptyBody = Schema.Struct({}).check(Schema.makeFilter((body) => {
  const keys = Object.keys(body)
  return keys.length === 0 || `Unknown field${keys.length > 1 ? "s" : ""} ${keys.join(", ")}: this endpoint takes {}`
})).annotate({ identifier: "Empty", description: "{}" })

export const AttemptView = Schema.Struct({
  attempt: Schema.Number,
  round: Schema.Number,
  startedAt: Schema.String,
  statusCode: Schema.NullOr(Schema.Number),
  latencyMs: Schema.Number,
  error: Schema.NullOr(Schema.String),
  retryInMs: Schema.NullOr(Schema.Number).annotate({
    description: "Delay scheduled before the next attempt after this one failed; null when it succeeded or was the last"
  })
}).annotate({ identifier: "WebhookAttempt" })

export const DeliveryView = Schema.Struct({
  id: Schema.String,
  eventId: Schema.String,
  event: DeliveryEventKind,
  recordId: Schema.String.annotate({ description: "The event's record; \"\" for a webhook.test event" }),
  target: Schema.Literals(["record", "account"]),
  url: Schema.String,
  status: DeliveryState,
  round: Schema.Number,
  nextAttempt: Schema.NullOr(Schema.Number),
  nextAttemptAt: Schema.NullOr(Schema.String),
  lastStatusCode: Schema.NullOr(Schema.Number),
  lastError: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  deliveredAt: Schema.NullOr(Schema.String),
  attempts: Schema.Array(AttemptView)
}).annotate({ identifier: "WebhookDelivery" })

export const DeliveryList = Schema.Struct({
  deliveries: Schema.Array(DeliveryView),
  nextCursor: Schema.NullOr(Schema.String)
}).annotate({ identifier: "WebhookDeliveryList" })
