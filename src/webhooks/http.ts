/** Handlers of the webhooks API. Bodies arrive strictly parsed by the gateway (src/http/gateway.ts). */
import { Clock, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CurrentPrincipal } from "../api/auth.ts"
import { Api } from "../api/Api.ts"
import { badRequest, errorBody, NotFound } from "../api/errors.ts"
import { cursorCodec } from "../http/pagination.ts"
import { stateOf } from "../http/requestState.ts"
import { decodeBody } from "../http/decode.ts"
import { WebhookSettingsPatch } from "../api/webhookSchemas.ts"
import { DeliveryLog } from "./DeliveryLog.ts"
import type { AttemptRow, DeliveryRow, WebhookSettingsRow } from "./rows.ts"
import { checkWebhookUrl, WebhookResolver } from "./urlPolicy.ts"
import { WebhookSettingsStore } from "./WebhookSettingsStore.ts"

const settingsView = (row: WebhookSettingsRow) => ({
  url: row.url,
  events: [...row.events],
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

/** These POSTs take no parameters: the body must be `{}` (every POST carries a JSON body, SPEC 3). */
const requireEmptyBody = (body: unknown) => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return Effect.fail(badRequest("VALIDATION_ERROR", "Request body must be the empty JSON object {}"))
  }
  const keys = Object.keys(body)
  return keys.length === 0
    ? Effect.void
    : Effect.fail(badRequest("VALIDATION_ERROR", `Unknown field${keys.length > 1 ? "s" : ""} ${keys.join(", ")}: this endpoint takes {}`))
}

const deliveryNotFound = (id: string) => new NotFound(errorBody("NOT_FOUND", `No webhook delivery ${id}`))

const cursors = cursorCodec("d:", /^\d{1,19}$/)

export const WebhooksHttpLayer = HttpApiBuilder.group(Api, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const settingsStore = yield* WebhookSettingsStore
    const deliveryLog = yield* DeliveryLog
    const resolve = yield* WebhookResolver

    // SqlError: a defect here until the handlers move to the new HTTP model (the gateway answers 503 for an outage).
    const withAttempts = (rows: ReadonlyArray<DeliveryRow>) =>
      Effect.map(deliveryLog.attemptsOf(rows.map((r) => r.seq)).pipe(Effect.orDie), (attempts) => rows.map((row) => deliveryView(row, attempts)))

    return handlers
      .handle("getSettings", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return { success: true as const, data: settingsView(yield* settingsStore.get(principal.accountId).pipe(Effect.orDie)) }
        }))
      .handleRaw("putSettings", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const patch = yield* decodeBody(WebhookSettingsPatch, stateOf(request).body)
          if (typeof patch.url === "string") {
            const verdict = yield* Effect.promise(() => checkWebhookUrl(patch.url as string, principal.environment, { field: "url", resolve }))
            if (!verdict.ok) return yield* Effect.fail(badRequest("INVALID_WEBHOOK_URL", verdict.reason))
          }
          const current = yield* settingsStore.get(principal.accountId).pipe(Effect.orDie)
          const url = patch.url === undefined ? current.url : patch.url
          const enabled = patch.enabled ?? current.enabled
          if (enabled && url === null) {
            return yield* Effect.fail(badRequest("VALIDATION_ERROR", "url: required while the webhook is enabled"))
          }
          const updated = yield* settingsStore.update(principal.accountId, {
            url: patch.url,
            events: patch.events === undefined ? undefined : [...new Set(patch.events)],
            payloadFormat: patch.payloadFormat,
            // Clearing the url disables the webhook.
            enabled: patch.url === null && patch.enabled === undefined ? false : patch.enabled
          }).pipe(Effect.orDie)
          return { success: true as const, data: settingsView(updated) }
        }))
      .handleRaw("rotateSecret", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          yield* requireEmptyBody(stateOf(request).body)
          const row = yield* settingsStore.rotate(principal.accountId).pipe(Effect.orDie)
          const settings = settingsView(row)
          // A rotation just made is inside its overlap: `rotation` is set (the fallback is never used).
          const expiresAt = settings.rotation?.previousSecretExpiresAt ?? new Date(yield* Clock.currentTimeMillis).toISOString()
          return { success: true as const, data: { secret: row.secret, previousSecretExpiresAt: expiresAt, settings } }
        }))
      .handleRaw("confirmSecret", ({ request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          yield* requireEmptyBody(stateOf(request).body)
          return { success: true as const, data: settingsView(yield* settingsStore.confirmRotation(principal.accountId).pipe(Effect.orDie)) }
        }))
      .handle("listDeliveries", ({ query }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const limit = query.limit ?? 50
          const before = yield* cursors.decode(query.cursor)
          const rows = yield* deliveryLog.list(principal, {
            limit: limit + 1,
            before,
            state: query.status,
            recordId: query.recordId,
            eventId: query.eventId
          }).pipe(Effect.orDie)
          const page = rows.slice(0, limit)
          return {
            success: true as const,
            data: {
              deliveries: yield* withAttempts(page),
              nextCursor: rows.length > limit ? cursors.encode(page[page.length - 1].seq) : null
            }
          }
        }))
      .handle("getDelivery", ({ params }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const row = yield* deliveryLog.get(principal, params.deliveryId).pipe(Effect.orDie)
          if (row === undefined) return yield* Effect.fail(deliveryNotFound(params.deliveryId))
          return { success: true as const, data: (yield* withAttempts([row]))[0] }
        }))
      .handleRaw("redeliver", ({ request, params }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          yield* requireEmptyBody(stateOf(request).body)
          const row = yield* deliveryLog.redeliver(principal, params.deliveryId).pipe(Effect.orDie)
          if (row === undefined) return yield* Effect.fail(deliveryNotFound(params.deliveryId))
          return { success: true as const, data: (yield* withAttempts([row]))[0] }
        }))
  }))
