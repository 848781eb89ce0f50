/** What can go wrong with webhook settings and targets, as the webhooks capability says it (mapped to the wire by `toWire`). */
import { Schema } from "effect"

/** A webhook URL the policy refuses (SPEC 5.6): the reason says which rule. */
export class InvalidWebhookUrl extends Schema.TaggedError<InvalidWebhookUrl>()("InvalidWebhookUrl", { reason: Schema.String }) {
  get errorCode() {
    return "INVALID_WEBHOOK_URL" as const
  }
  override get message() {
    return this.reason
  }
}

/** A delivery-log query the API did not issue (a cursor from elsewhere). */
export class InvalidDeliveryQuery extends Schema.TaggedError<InvalidDeliveryQuery>()("InvalidDeliveryQuery", { reason: Schema.String }) {
  get errorCode() {
    return "VALIDATION_ERROR" as const
  }
  override get message() {
    return this.reason
  }
}

/** Global webhook settings that do not fit together (e.g. enabled without a url). */
export class InvalidWebhookSettings extends Schema.TaggedError<InvalidWebhookSettings>()("InvalidWebhookSettings", { reason: Schema.String }) {
  get errorCode() {
    return "VALIDATION_ERROR" as const
  }
  override get message() {
    return this.reason
  }
}

export class DeliveryNotFound extends Schema.TaggedError<DeliveryNotFound>()("DeliveryNotFound", { deliveryId: Schema.String }) {
  get errorCode() {
    return "NOT_FOUND" as const
  }
  override get message() {
    return `No webhook delivery ${this.deliveryId}`
  }
}

export class RequestNotFound extends Schema.TaggedError<RequestNotFound>()("RequestNotFound", { requestId: Schema.String }) {
  get errorCode() {
    return "NOT_FOUND" as const
  }
  override get message() {
    return `No webhook request ${this.requestId}`
  }
}

/** A webhook setting of the node that does not parse (WEBHOOK_ALLOW_PRIVATE): the node does not start. */
export class WebhookConfigError extends Schema.TaggedError<WebhookConfigError>()("WebhookConfigError", { message: Schema.String }) {}
