/** Endpoint definitions of the webhooks API (SPEC 3, 5). Handlers live in ./http.ts. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ApiKeyAuth } from "./auth.ts"
import { BadRequest, NotFound } from "./errors.ts"
import { DatabaseBound, JsonBodyFraming } from "./http.ts"
import { JsonBody } from "./jsonBody.ts"
import { ok } from "./recordSchemas.ts"
import {
  DeliveryList, DeliveryState, DeliveryView, EmptyBody, RotationResult, WebhookSettingsPatch, WebhookSettingsView
} from "./webhookSchemas.ts"

export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.get("getSettings", "/webhooks", { success: ok(WebhookSettingsView) })
      .annotate(OpenApi.Description, "The account's global webhook: url, subscribed events, payloadFormat, enabled, secret."),
    HttpApiEndpoint.put("putSettings", "/webhooks", {
      payload: JsonBody(WebhookSettingsPatch),
      success: ok(WebhookSettingsView),
      error: [BadRequest]
    }).middleware(DatabaseBound).middleware(JsonBodyFraming).annotate(OpenApi.Description, "Change the global webhook; members left out keep their value."),
    HttpApiEndpoint.post("rotateSecret", "/webhooks/secret/rotate", {
      payload: JsonBody(EmptyBody),
      success: ok(RotationResult),
      error: [BadRequest]
    }).middleware(DatabaseBound).middleware(JsonBodyFraming).annotate(
      OpenApi.Description,
      "New secret. For 24 h, or until confirmed, x-webhook-signature stays signed with the previous secret and x-webhook-signature-next carries the new one."
    ),
    HttpApiEndpoint.post("confirmSecret", "/webhooks/secret/confirm", {
      payload: JsonBody(EmptyBody),
      success: ok(WebhookSettingsView),
      error: [BadRequest]
    }).middleware(DatabaseBound).middleware(JsonBodyFraming).annotate(OpenApi.Description, "End the rotation overlap now: the new secret signs x-webhook-signature from the next delivery."),
    HttpApiEndpoint.get("listDeliveries", "/webhooks/deliveries", {
      query: {
        limit: Schema.optionalKey(Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 100 }))),
        cursor: Schema.optionalKey(Schema.String),
        status: Schema.optionalKey(DeliveryState),
        recordId: Schema.optionalKey(Schema.String),
        eventId: Schema.optionalKey(Schema.String)
      },
      success: ok(DeliveryList),
      error: [BadRequest]
    }).annotate(OpenApi.Description, "Delivery log of this key's environment, newest first: every attempt with status code, latency and error."),
    HttpApiEndpoint.get("getDelivery", "/webhooks/deliveries/:deliveryId", {
      params: { deliveryId: Schema.String },
      success: ok(DeliveryView),
      error: [BadRequest, NotFound]
    }),
    HttpApiEndpoint.post("redeliver", "/webhooks/deliveries/:deliveryId/redeliver", {
      params: { deliveryId: Schema.String },
      payload: JsonBody(EmptyBody),
      success: ok(DeliveryView).annotate({ httpApiStatus: 202 }),
      error: [BadRequest, NotFound]
    }).middleware(DatabaseBound).middleware(JsonBodyFraming).annotate(OpenApi.Description, "Send again now: a new round of attempts 0..5 with the account's current secret and format.")
  )
  .middleware(DatabaseBound)
  .middleware(ApiKeyAuth)
  .prefix("/v1")
{}
