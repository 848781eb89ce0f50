/** Handlers of the webhooks API (src/api/webhooks.ts): payloads decoded by the endpoints' schemas, errors mapped by `atEdge`. */
import { Clock, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CurrentPrincipal } from "../api/auth.ts"
import { Api } from "../api/Api.ts"
import { atEdge } from "../db/errors.ts"
import { cursorCodec, pageOf } from "../http/pagination.ts"
import { DeliveryNotFound, InvalidDeliveryQuery, InvalidWebhookSettings, InvalidWebhookUrl } from "./errors.ts"
import { checkWebhookUrl, WebhookResolver } from "./urlPolicy.ts"
import { DeliveryLog } from "./DeliveryLog.ts"
import { WebhookSettingsStore } from "./WebhookSettingsStore.ts"
import type { AttemptRow, DeliveryRow, WebhookSettingsRow } from "./rows.ts"

const settingsView = (row: WebhookSettingsRow) => ({
  url: row.url,
  events: [...row.events] as Array<"anchor.confirmed" | "anchor.failed" | "record.updated" | "record.deleted">,
  payloadFormat: row.payloadFormat,
  enabled: row.enabled,
  secret: row.secret,
  rotation: row.rotationStartedAt !== null && row.previousSecretExpiresAt !== null
    ? { startedAt: row.rotationStartedAt.toISOString(), previousSecretExpiresAt: row.previousSecretExpiresAt.toISOString() }
    : null
})

const deliveryView = (row: DeliveryRow, attempts: ReadonlyArray<AttemptRow>) => ({
  id: row.id,
  eventId: row.eventId,
  event: row.kind,
  recordId: row.recordId,
  target: row.target,
  url: row.url,
  status: row.state,
  round: row.round,
  nextAttempt: row.state === "PENDING" ? row.attempts : null,
  nextAttemptAt: row.state === "PENDING" ? row.nextAttemptAt?.toISOString() ?? null : null,
  lastStatusCode: row.lastStatusCode,
  lastError: row.lastError,
  createdAt: row.createdAt.toISOString(),
  deliveredAt: row.deliveredAt?.toISOString() ?? null,
  attempts: attempts.filter((a) => a.deliverySeq === row.seq).map((a) => ({
    attempt: a.attempt,
    round: a.round,
    startedAt: a.startedAt.toISOString(),
    statusCode: a.statusCode,
    latencyMs: a.latencyMs,
    error: a.error,
    retryInMs: a.retryInMs
  }))
})

const cursors = cursorCodec("d:", /^\d{1,19}$/)

export const WebhooksHttpLayer = HttpApiBuilder.group(Api, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const settingsStore = yield* WebhookSettingsStore
    const deliveryLog = yield* DeliveryLog
    const resolve = yield* WebhookResolver

    const withAttempts = (rows: ReadonlyArray<DeliveryRow>) =>
      Effect.map(deliveryLog.attemptsOf(rows.map((r) => r.seq)), (attempts) => rows.map((row) => deliveryView(row, attempts)))

    return handlers
      .handle("getSettings", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return { success: true as const, data: settingsView(yield* settingsStore.get(principal.accountId)) }
        }).pipe(atEdge))
      .handle("putSettings", ({ payload: patch }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          if (typeof patch.url === "string") {
            const verdict = yield* Effect.promise(() => checkWebhookUrl(patch.url as string, principal.environment, { field: "url", resolve }))
            if (!verdict.ok) return yield* new InvalidWebhookUrl({ reason: verdict.reason })
          }
          const current = yield* settingsStore.get(principal.accountId)
          const url = patch.url === undefined ? current.url : patch.url
          const enabled = patch.enabled ?? current.enabled
          if (enabled && url === null) {
            return yield* new InvalidWebhookSettings({ reason: "url: required while the webhook is enabled" })
          }
          const updated = yield* settingsStore.update(principal.accountId, {
            url: patch.url,
            events: patch.events === undefined ? undefined : [...new Set(patch.events)],
            payloadFormat: patch.payloadFormat,
            // Clearing the url disables the webhook.
            enabled: patch.url === null && patch.enabled === undefined ? false : patch.enabled
          })
          return { success: true as const, data: settingsView(updated) }
        }).pipe(atEdge))
      .handle("rotateSecret", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const row = yield* settingsStore.rotate(principal.accountId)
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
          return { success: true as const, data: settingsView(yield* settingsStore.confirmRotation(principal.accountId)) }
        }).pipe(atEdge))
      .handle("listDeliveries", ({ query }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const limit = query.limit ?? 50
          const before = cursors.parse(query.cursor)
          if (!before.ok) return yield* new InvalidDeliveryQuery({ reason: before.message })
          const rows = yield* deliveryLog.list(principal, {
            limit: limit + 1,
            before: before.key,
            state: query.status,
            recordId: query.recordId,
            eventId: query.eventId
          })
          const { page, nextCursor } = pageOf(rows, limit, cursors, (row) => row.seq)
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
  }))
