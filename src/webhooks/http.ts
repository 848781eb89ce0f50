/**
 * Handlers of the webhooks API (src/api/webhooks.ts): payloads decoded by the endpoints' schemas, errors mapped by `atEdge`.
 * Settings, secret and rotation are the key's environment's (one row per environment): a test key never reads or
 * changes what live deliveries use.
 */
import { Clock, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CurrentPrincipal } from "../api/auth.ts"
import { Api } from "../api/Api.ts"
import { atEdge } from "../db/errors.ts"
import { DeliveryNotFound, RequestNotFound } from "./errors.ts"
import { WebhookEgress } from "./urlPolicy.ts"
import { DeliveryLog } from "./DeliveryLog.ts"
import { RequestLog } from "./RequestLog.ts"
import { WebhookSettingsStore } from "./WebhookSettingsStore.ts"
import type { DeliveryRow } from "./rows.ts"
import { deliveryLogPage, deliveryView, redeliverRequest, requestLogPage, requestView, settingsView, updateSettings } from "./views.ts"

export const WebhooksHttpLayer = HttpApiBuilder.group(Api, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const settingsStore = yield* WebhookSettingsStore
    const deliveryLog = yield* DeliveryLog
    const requestLog = yield* RequestLog
    const egress = yield* WebhookEgress

    const withAttempts = (rows: ReadonlyArray<DeliveryRow>) =>
      Effect.map(deliveryLog.attemptsOf(rows.map((r) => r.seq)), (attempts) => rows.map((row) => deliveryView(row, attempts)))

    return handlers
      .handle("getSettings", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return { success: true as const, data: settingsView(yield* settingsStore.get(principal.accountId, principal.environment)) }
        }).pipe(atEdge))
      .handle("putSettings", ({ payload: patch }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const updated = yield* updateSettings(settingsStore, egress, principal.accountId, principal.environment, patch)
          return { success: true as const, data: settingsView(updated) }
        }).pipe(atEdge))
      .handle("rotateSecret", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const row = yield* settingsStore.rotate(principal.accountId, principal.environment)
          const settings = settingsView(row)
          const now = new Date(yield* Clock.currentTimeMillis)
          return {
            success: true as const,
            data: { secret: row.secret, previousSecretExpiresAt: settings.rotation?.previousSecretExpiresAt ?? now.toISOString(), settings }
          }
        }).pipe(atEdge))
      .handle("confirmSecret", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return { success: true as const, data: settingsView(yield* settingsStore.confirmRotation(principal.accountId, principal.environment)) }
        }).pipe(atEdge))
      .handle("listDeliveries", ({ query }) =>
        Effect.gen(function*() {
          const { page, nextCursor } = yield* deliveryLogPage(deliveryLog, yield* CurrentPrincipal, query, 50)
          return { success: true as const, data: { deliveries: yield* withAttempts(page), nextCursor } }
        }).pipe(atEdge))
      .handle("getDelivery", ({ params }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const row = yield* deliveryLog.get(principal, params.deliveryId)
          if (row === undefined) return yield* new DeliveryNotFound({ deliveryId: params.deliveryId })
          return { success: true as const, data: (yield* withAttempts([row]))[0] }
        }).pipe(atEdge))
      .handle("redeliver", ({ params }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const row = yield* deliveryLog.redeliver(principal, params.deliveryId)
          if (row === undefined) return yield* new DeliveryNotFound({ deliveryId: params.deliveryId })
          return { success: true as const, data: (yield* withAttempts([row]))[0] }
        }).pipe(atEdge))
      .handle("listRequests", ({ query }) =>
        Effect.gen(function*() {
          return { success: true as const, data: yield* requestLogPage(requestLog, yield* CurrentPrincipal, query, 50) }
        }).pipe(atEdge))
      .handle("getRequest", ({ params }) =>
        Effect.gen(function*() {
          const rows = yield* requestLog.attemptsOf(yield* CurrentPrincipal, params.requestId)
          if (rows.length === 0) return yield* new RequestNotFound({ requestId: params.requestId })
          return { success: true as const, data: { id: params.requestId, requests: rows.map(requestView) } }
        }).pipe(atEdge))
      .handle("redeliverRequest", ({ params }) =>
        Effect.gen(function*() {
          const rows = yield* redeliverRequest(deliveryLog, requestLog, yield* CurrentPrincipal, params.requestId)
          return { success: true as const, data: { id: params.requestId, deliveries: yield* withAttempts(rows) } }
        }).pipe(atEdge))
  }))
