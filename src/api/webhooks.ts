/** Endpoint definitions of the webhooks API (SPEC 3, 5). Handlers live in ./http.ts. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ApiKeyAuth } from "./auth.ts"
import { BadRequest, NotFound } from "./errors.ts"
import { DatabaseBound, JsonBodyFraming } from "./http.ts"
import { JsonBody } from "./jsonBody.ts"
import { Limit, ok, RecordId } from "./recordSchemas.ts"
import { DeliveryId, DeliveryList, DeliveryState, EventId, DeliveryView, EmptyBody, RequestAttempts, RequestId, RequestList, RequestRedelivery, RotationResult,
  WebhookSettingsPatch, WebhookSettingsView } from "./webhookSchemas.ts"

export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.get("getSettings", "/webhooks", { success: ok(WebhookSettingsView) })
      .annotate(OpenApi.Summary, "Get the global webhook")
      .annotate(OpenApi.Description,
        "The global webhook of this key's environment (test and live have their own): url, subscribed events, payloadFormat, enabled, secret."),
    HttpApiEndpoint.put("putSettings", "/webhooks", {
      payload: JsonBody(WebhookSettingsPatch),
      success: ok(WebhookSettingsView),
      error: [BadRequest]
    }).middleware(DatabaseBound).middleware(JsonBodyFraming).annotate(OpenApi.Summary, "Change the global webhook")
      .annotate(OpenApi.Description, "Change the global webhook of this key's environment; members left out keep their value."),
    HttpApiEndpoint.post("rotateSecret", "/webhooks/secret/rotate", {
      payload: JsonBody(EmptyBody),
      success: ok(RotationResult),
      error: [BadRequest]
    }).middleware(DatabaseBound).middleware(JsonBodyFraming).annotate(OpenApi.Summary, "Rotate the webhook secret").annotate(
      OpenApi.Description,
      "New secret for this key's environment. For 24 h, or until confirmed, x-webhook-signature stays signed with the previous secret and x-webhook-signature-next carries the new one."
    ),
    HttpApiEndpoint.post("confirmSecret", "/webhooks/secret/confirm", {
      payload: JsonBody(EmptyBody),
      success: ok(WebhookSettingsView),
      error: [BadRequest]
    }).middleware(DatabaseBound).middleware(JsonBodyFraming).annotate(OpenApi.Summary, "Confirm the secret rotation")
      .annotate(OpenApi.Description,
        "End the rotation overlap of this key's environment now: the new secret signs x-webhook-signature from the next delivery."),
    HttpApiEndpoint.get("listDeliveries", "/webhooks/deliveries", {
      query: {
        limit: Schema.optionalKey(Limit),
        cursor: Schema.optionalKey(Schema.String),
        status: Schema.optionalKey(DeliveryState),
        recordId: Schema.optionalKey(RecordId),
        eventId: Schema.optionalKey(EventId)
      },
      success: ok(DeliveryList),
      error: [BadRequest]
    }).annotate(OpenApi.Summary, "List webhook deliveries")
      .annotate(OpenApi.Description, "Delivery log of this key's environment, newest first: every attempt with status code, latency and error."),
    HttpApiEndpoint.get("getDelivery", "/webhooks/deliveries/:deliveryId", {
      params: { deliveryId: DeliveryId },
      success: ok(DeliveryView),
      error: [BadRequest, NotFound]
    }).annotate(OpenApi.Summary, "Get a webhook delivery"),
    HttpApiEndpoint.post("redeliver", "/webhooks/deliveries/:deliveryId/redeliver", {
      params: { deliveryId: DeliveryId },
      payload: JsonBody(EmptyBody),
      success: ok(DeliveryView).annotate({ httpApiStatus: 202 }),
      error: [BadRequest, NotFound]
    }).middleware(DatabaseBound).middleware(JsonBodyFraming).annotate(OpenApi.Summary, "Redeliver a webhook")
      .annotate(OpenApi.Description, "Send again now: a new round of attempts 0..5 with the current secret and format of this key's environment."),
    HttpApiEndpoint.get("listRequests", "/webhooks/requests", {
      query: {
        limit: Schema.optionalKey(Limit),
        cursor: Schema.optionalKey(Schema.String),
        recordId: Schema.optionalKey(RecordId),
        eventId: Schema.optionalKey(EventId)
      },
      success: ok(RequestList),
      error: [BadRequest]
    }).annotate(OpenApi.Summary, "List batched webhook requests")
      .annotate(OpenApi.Description,
        "The requests of batched delivery (delivery.mode batch), newest first: each once, with its events and the receiver's answer. recordId and eventId find the requests that carried them."),
    HttpApiEndpoint.get("getRequest", "/webhooks/requests/:requestId", {
      params: { requestId: RequestId },
      success: ok(RequestAttempts),
      error: [BadRequest, NotFound]
    }).annotate(OpenApi.Summary, "Get a batched webhook request"),
    HttpApiEndpoint.post("redeliverRequest", "/webhooks/requests/:requestId/redeliver", {
      params: { requestId: RequestId },
      payload: JsonBody(EmptyBody),
      success: ok(RequestRedelivery).annotate({ httpApiStatus: 202 }),
      error: [BadRequest, NotFound]
    }).middleware(DatabaseBound).middleware(JsonBodyFraming).annotate(OpenApi.Summary, "Redeliver a batched webhook request")
      .annotate(OpenApi.Description,
        "Send every event of the request again now: each event's delivery gets a new round of attempts, and they go out batched as the environment's delivery settings say. One event alone: POST /v1/webhooks/deliveries/{deliveryId}/redeliver.")
  )
  .middleware(DatabaseBound)
  .middleware(ApiKeyAuth)
  .prefix("/v1")
  .annotate(OpenApi.Description, "The global webhook, its secret and the delivery log of the key's environment (SPEC 5)")
{}
