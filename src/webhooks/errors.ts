/** What can go wrong with webhook settings and targets, as the webhooks capability says it (mapped to the wire by `toWire`). */
import { Schema } from "effect"
import { DomainErrorClass } from "../api/domainError.ts"

/** A webhook URL the policy refuses (SPEC 5.6): the reason says which rule. */
export class InvalidWebhookUrl
  extends DomainErrorClass<InvalidWebhookUrl>()("InvalidWebhookUrl", { reason: Schema.String }, "INVALID_WEBHOOK_URL", (error) => error.reason)
{}

/** A delivery-log query the API did not issue (a cursor from elsewhere). */
export class InvalidDeliveryQuery
  extends DomainErrorClass<InvalidDeliveryQuery>()("InvalidDeliveryQuery", { reason: Schema.String }, "VALIDATION_ERROR", (error) => error.reason)
{}

/** Global webhook settings that do not fit together (e.g. enabled without a url). */
export class InvalidWebhookSettings
  extends DomainErrorClass<InvalidWebhookSettings>()("InvalidWebhookSettings", { reason: Schema.String }, "VALIDATION_ERROR", (error) => error.reason)
{}

export class DeliveryNotFound
  extends DomainErrorClass<DeliveryNotFound>()("DeliveryNotFound", { deliveryId: Schema.String }, "NOT_FOUND",
    (error) => `No webhook delivery ${error.deliveryId}`)
{}

export class RequestNotFound
  extends DomainErrorClass<RequestNotFound>()("RequestNotFound", { requestId: Schema.String }, "NOT_FOUND", (error) => `No webhook request ${error.requestId}`)
{}

/** A webhook setting of the node that does not parse (WEBHOOK_ALLOW_PRIVATE): the node does not start. */
export class WebhookConfigError extends Schema.TaggedError<WebhookConfigError>()("WebhookConfigError", { message: Schema.String }) {}
