/**
 * The account's webhook, its secret and rotation, its deliveries and batched requests (`consoleWebhooks`,
 * src/api/consoleAreas.ts): through the webhooks capability's stores; viewers see URLs by their origin
 * and no secret.
 */
import { Clock, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../../api/Api.ts"
import { atEdge } from "../../db/errors.ts"
import { DeliveryLog } from "../../webhooks/DeliveryLog.ts"
import { RequestLog } from "../../webhooks/RequestLog.ts"
import { DeliveryNotFound } from "../../webhooks/errors.ts"
import type { DeliveryRow } from "../../webhooks/rows.ts"
import { WebhookTests } from "../../webhooks/TestEvents.ts"
import { WebhookEgress } from "../../webhooks/urlPolicy.ts"
import { deliveryLogPage, deliveryView, redeliverRequest, requestLogPage, settingsView, updateSettings } from "../../webhooks/views.ts"
import { WebhookSettingsStore } from "../../webhooks/WebhookSettingsStore.ts"
import { consoleAccess, hidesSecrets, owner } from "./access.ts"
import { ok, redactUrl, webhookView } from "./views.ts"

export const ConsoleWebhooksHttpLayer = HttpApiBuilder.group(Api, "consoleWebhooks", (handlers) =>
  Effect.gen(function*() {
    const { access } = yield* consoleAccess
    const webhookSettings = yield* WebhookSettingsStore
    const deliveryLog = yield* DeliveryLog
    const requestLog = yield* RequestLog
    const tests = yield* WebhookTests
    const egress = yield* WebhookEgress
    const now = Clock.currentTimeMillis

    const withAttempts = (rows: ReadonlyArray<DeliveryRow>) =>
      Effect.gen(function*() {
        const hide = yield* hidesSecrets
        const attempts = yield* deliveryLog.attemptsOf(rows.map((r) => r.seq))
        return rows.map((row) => {
          const view = deliveryView(row, attempts)
          return hide ? { ...view, url: redactUrl(view.url) } : view
        })
      })

    return handlers
      .handle("getWebhook", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "read")
          return ok(webhookView(yield* webhookSettings.get(params.accountId, query.environment), yield* hidesSecrets))
        }).pipe(atEdge))
      .handle("putWebhook", ({ params, query, payload }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "change")
          return ok(webhookView(yield* updateSettings(webhookSettings, egress, params.accountId, query.environment, payload), false))
        }).pipe(atEdge))
      .handle("revealSecret", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "secret")
          const view = settingsView(yield* webhookSettings.get(params.accountId, query.environment))
          return ok({ secret: view.secret, rotation: view.rotation })
        }).pipe(atEdge))
      .handle("rotateSecret", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "secret")
          const settings = settingsView(yield* webhookSettings.rotate(params.accountId, query.environment))
          const at = new Date(yield* now)
          return ok({ secret: settings.secret, previousSecretExpiresAt: settings.rotation?.previousSecretExpiresAt ?? at.toISOString(), settings })
        }).pipe(atEdge))
      .handle("confirmSecret", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "change")
          return ok(webhookView(yield* webhookSettings.confirmRotation(params.accountId, query.environment), false))
        }).pipe(atEdge))
      .handle("testWebhook", ({ params, payload }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "change")
          const row = yield* tests.send(owner(params.accountId, payload.environment))
          return ok((yield* withAttempts([row]))[0]!)
        }).pipe(atEdge))
      .handle("listDeliveries", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "read")
          const { page, nextCursor } = yield* deliveryLogPage(deliveryLog, owner(params.accountId, query.environment), query, 25)
          return ok({ deliveries: yield* withAttempts(page), nextCursor })
        }).pipe(atEdge))
      .handle("getDelivery", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "read")
          const row = yield* deliveryLog.get(owner(params.accountId, query.environment), params.deliveryId)
          if (row === undefined) return yield* new DeliveryNotFound({ deliveryId: params.deliveryId })
          return ok((yield* withAttempts([row]))[0]!)
        }).pipe(atEdge))
      .handle("redeliver", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "change")
          const row = yield* deliveryLog.redeliver(owner(params.accountId, query.environment), params.deliveryId)
          if (row === undefined) return yield* new DeliveryNotFound({ deliveryId: params.deliveryId })
          return ok((yield* withAttempts([row]))[0]!)
        }).pipe(atEdge))
      .handle("listRequests", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "read")
          const page = yield* requestLogPage(requestLog, owner(params.accountId, query.environment), query, 25)
          const hide = yield* hidesSecrets
          return ok(hide ? { ...page, requests: page.requests.map((r) => ({ ...r, url: redactUrl(r.url) })) } : page)
        }).pipe(atEdge))
      .handle("redeliverRequest", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "change")
          const rows = yield* redeliverRequest(deliveryLog, requestLog, owner(params.accountId, query.environment), params.requestId)
          return ok({ id: params.requestId, deliveries: yield* withAttempts(rows) })
        }).pipe(atEdge))
  }))
