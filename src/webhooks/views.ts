/**
 * The webhooks capability's views and the settings change, shared by the API's handlers (./http.ts)
 * and the console's (src/console/handlers/webhooks.ts): one place decides what a URL may be and how a patch applies.
 */
import { Effect } from "effect"
import type { SqlError } from "effect/sql"
import type { Environment } from "../api/recordSchemas.ts"
import type { WebhookSettingsPatch } from "../api/webhookSchemas.ts"
import { deliveryCursors, pageOf, requestCursors } from "../http/pagination.ts"
import type { DeliveryLog, Owner } from "./DeliveryLog.ts"
import { InvalidDeliveryQuery, InvalidWebhookSettings, InvalidWebhookUrl, RequestNotFound } from "./errors.ts"
import type { RequestLog, RequestRow } from "./RequestLog.ts"
import type { AttemptRow, DeliveryRow, DeliveryState, WebhookSettingsRow } from "./rows.ts"
import type { WebhookEgress } from "./urlPolicy.ts"
import type { WebhookSettingsStore } from "./WebhookSettingsStore.ts"

export const settingsView = (row: WebhookSettingsRow) => ({
  url: row.url,
  events: [...row.events] as Array<"anchor.confirmed" | "anchor.failed" | "record.updated" | "record.deleted">,
  payloadFormat: row.payloadFormat,
  enabled: row.enabled,
  secret: row.secret,
  rotation: row.rotationStartedAt !== null && row.previousSecretExpiresAt !== null
    ? { startedAt: row.rotationStartedAt.toISOString(), previousSecretExpiresAt: row.previousSecretExpiresAt.toISOString() }
    : null,
  delivery: { mode: row.deliveryMode, maxEvents: row.batchMaxEvents, maxWaitMs: row.batchMaxWaitMs }
})

export const deliveryView = (row: DeliveryRow, attempts: ReadonlyArray<AttemptRow>) => {
  const own = attempts.filter((a) => a.deliverySeq === row.seq)
  return deliveryFields(row, own)
}

/**
 * `createdAt` is when the delivery began: its row's time, or its first attempt's start if earlier — a
 * delivery written with its outcome (a chunk's first-attempt success) gets its row after it was sent, so
 * its row's time would read after its `deliveredAt`.
 */
const begunAt = (row: DeliveryRow, own: ReadonlyArray<AttemptRow>) =>
  own.reduce((first, a) => a.startedAt.getTime() < first.getTime() ? a.startedAt : first, row.createdAt)

const deliveryFields = (row: DeliveryRow, own: ReadonlyArray<AttemptRow>) => ({
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
  createdAt: begunAt(row, own).toISOString(),
  deliveredAt: row.deliveredAt?.toISOString() ?? null,
  attempts: own.map((a) => ({
    attempt: a.attempt,
    round: a.round,
    startedAt: a.startedAt.toISOString(),
    statusCode: a.statusCode,
    latencyMs: a.latencyMs,
    error: a.error,
    retryInMs: a.retryInMs
  }))
})

/**
 * Applies a settings patch to the environment's settings (members left out keep their value): the URL
 * checked by the egress policy (./urlPolicy.ts), enabled only with a URL, clearing the URL disables the
 * webhook.
 */
export const updateSettings = (
  store: typeof WebhookSettingsStore.Service,
  egress: typeof WebhookEgress.Service,
  accountId: string,
  environment: Environment,
  patch: typeof WebhookSettingsPatch.Type
): Effect.Effect<WebhookSettingsRow, InvalidWebhookUrl | InvalidWebhookSettings | SqlError.SqlError> =>
  Effect.gen(function*() {
    if (typeof patch.url === "string") {
      const verdict = yield* egress.check(patch.url, environment, "url")
      if (!verdict.ok) return yield* new InvalidWebhookUrl({ reason: verdict.reason })
    }
    const current = yield* store.get(accountId, environment)
    const url = patch.url === undefined ? current.url : patch.url
    const enabled = patch.enabled ?? current.enabled
    if (enabled && url === null) {
      return yield* new InvalidWebhookSettings({ reason: "url: required while the webhook is enabled" })
    }
    return yield* store.update(accountId, environment, {
      url: patch.url,
      events: patch.events === undefined ? undefined : [...new Set(patch.events)],
      payloadFormat: patch.payloadFormat,
      // Clearing the url disables the webhook.
      enabled: patch.url === null && patch.enabled === undefined ? false : patch.enabled,
      deliveryMode: patch.delivery?.mode,
      batchMaxEvents: patch.delivery?.maxEvents,
      batchMaxWaitMs: patch.delivery?.maxWaitMs
    })
  })

/**
 * A page of the owner's delivery log, newest first, from a list query (its cursor checked): what the API and
 * the console list, each with its own default page size and views.
 */
export const deliveryLogPage = (
  log: typeof DeliveryLog.Service,
  owner: Owner,
  query: {
    readonly limit?: number | undefined
    readonly cursor?: string | undefined
    readonly status?: DeliveryState | undefined
    readonly recordId?: string | undefined
    readonly eventId?: string | undefined
  },
  defaultLimit: number
) =>
  Effect.gen(function*() {
    const limit = query.limit ?? defaultLimit
    const before = deliveryCursors.parse(query.cursor)
    if (!before.ok) return yield* new InvalidDeliveryQuery({ reason: before.message })
    const rows = yield* log.list(owner, { limit: limit + 1, before: before.key, state: query.status, recordId: query.recordId, eventId: query.eventId })
    return pageOf(rows, limit, deliveryCursors, (row) => row.seq)
  })

/** A batch request as the receiver got it: its events, each taken or not by the answer. */
export const requestView = (row: RequestRow) => {
  const ok = row.error === null && row.statusCode !== null && row.statusCode >= 200 && row.statusCode < 300
  const notTaken = new Set(row.failedEventIds)
  return {
    id: row.id,
    event: row.kind,
    url: row.url,
    startedAt: row.startedAt.toISOString(),
    statusCode: row.statusCode,
    latencyMs: row.latencyMs,
    error: row.error,
    eventCount: row.eventIds.length,
    events: row.eventIds.map((eventId, k) => ({ eventId, recordId: row.recordIds[k] ?? "", taken: ok && !notTaken.has(eventId) }))
  }
}

/** A page of the owner's batch requests, newest first (its cursor checked). */
export const requestLogPage = (
  log: typeof RequestLog.Service,
  owner: Owner,
  query: { readonly limit?: number | undefined; readonly cursor?: string | undefined; readonly recordId?: string | undefined;
    readonly eventId?: string | undefined },
  defaultLimit: number
) =>
  Effect.gen(function*() {
    const limit = query.limit ?? defaultLimit
    const before = requestCursors.parse(query.cursor)
    if (!before.ok) return yield* new InvalidDeliveryQuery({ reason: before.message })
    const rows = yield* log.list(owner, { limit: limit + 1, before: before.key, recordId: query.recordId, eventId: query.eventId })
    const { nextCursor, page } = pageOf(rows, limit, requestCursors, (row) => row.seq)
    return { requests: page.map(requestView), nextCursor }
  })

/**
 * Sends a batch request's events again: the newest request under that id, each of its events' delivery to its URL
 * given a new round (DeliveryLog.redeliver), so they go out batched again as the environment's settings say.
 * The deliveries as re-queued, in the request's order.
 */
export const redeliverRequest = (deliveries: typeof DeliveryLog.Service, requests: typeof RequestLog.Service, owner: Owner, id: string) =>
  Effect.gen(function*() {
    const newest = (yield* requests.attemptsOf(owner, id))[0]
    if (newest === undefined) return yield* new RequestNotFound({ requestId: id })
    const requeued = yield* Effect.forEach(newest.eventIds, (eventId) =>
      Effect.gen(function*() {
        const found = (yield* deliveries.list(owner, { limit: 10, eventId })).find((d) => d.url === newest.url)
        return found === undefined ? undefined : yield* deliveries.redeliver(owner, found.id)
      }), { concurrency: 4 })
    return requeued.filter((row) => row !== undefined)
  })
