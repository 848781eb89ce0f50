/**
 * One request's attempt, as the dispatcher makes it (./Dispatcher.ts): a single delivery's, or a batch's (./batch.ts,
 * held for more events first when its environment says so, ./openBatches.ts), over the sender's keep-alive pools
 * (./sender.ts). Never fails: a bug in the sender becomes a failed attempt like any other, so no claim leaks.
 */
import { Cause, Clock, Effect, type FiberSet } from "effect"
import { type MetricsHandle, observeBatch } from "../metrics/metrics.ts"
import { annotateSampled } from "../tracing/attributes.ts"
import { VERSION } from "../version.ts"
import { ANSWER_MAX_BYTES, batchBody, batchHeaders, failedEventIds } from "./batch.ts"
import type { Claimed, Completion } from "./claimedDeliveries.ts"
import type { DispatcherSettings } from "./config.ts"
import { makeOpenBatches } from "./openBatches.ts"
import { kindOfServiceEvent } from "./payload.ts"
import type { RequestLog } from "./RequestLog.ts"
import { retryDelayMillis } from "./schedule.ts"
import { type Agents, attempt, attemptHeaders, type AttemptOutcome, type AttemptRequest, type Egress } from "./sender.ts"

/** A claimed delivery with its body, signatures and headers (rendered now or on an earlier claim). */
export type Ready = Claimed & { readonly body: string; readonly signature: string; readonly headers: NonNullable<Claimed["headers"]> }

/** What an attempt needs: a claimed delivery once rendered, or a record of a leased chunk. */
type Sendable = Pick<
  Ready,
  | "id"
  | "accountId"
  | "recordId"
  | "url"
  | "environment"
  | "attempts"
  | "body"
  | "headers"
  | "signature"
  | "signatureNext"
  | "secret"
  | "secretPrevious"
  | "deliveryMode"
  | "batchMaxEvents"
  | "batchMaxWaitMs"
>

/** Deliveries that may share a request: one receiver, one account's environment (its secret), one kind of event. */
export const requestKey = (row: Sendable) => `${row.environment}\n${row.url}\n${row.secret}\n${row.headers.event}`

/** An event's outcome of an attempt (alone or in a batch). */
export type BatchOutcome = Omit<Completion, "seq" | "token" | "round" | "attempt">

/** What a receiver's answer says of an event it named as not taken (a batch's partial failure). */
const NOT_TAKEN = "not taken: the receiver named this event in failedEventIds"

/** A delivery's span attributes: its ids, and the record and batch of its event (read from the body only when sampled). */
const deliveryAttributes = (row: Sendable): Record<string, unknown> => {
  const out: Record<string, unknown> = {
    "anchord.delivery_id": row.id,
    "anchord.event_id": row.headers.eventId,
    "anchord.event": row.headers.event,
    "anchord.attempt": row.attempts
  }
  try {
    const body = JSON.parse(row.body) as { recordId?: unknown; batchId?: unknown; data?: { recordId?: unknown; batchId?: unknown } }
    const recordId = body.recordId ?? body.data?.recordId
    const batchId = body.batchId ?? body.data?.batchId
    if (typeof recordId === "string") out["anchord.record_id"] = recordId
    if (typeof batchId === "string" || typeof batchId === "number") out["anchord.batch_id"] = String(batchId)
  } catch {
    // Not JSON: the ids above are enough.
  }
  return out
}

export const makeRequestAttempts = Effect.fnUntraced(function*({ agents, config, egress, metrics, requestLog, sends }: {
  readonly config: DispatcherSettings
  /** The node's metrics registry (src/app/metrics.ts): batches by outcome, their sizes and durations. */
  readonly metrics: MetricsHandle
  readonly agents: Agents
  readonly egress: Egress
  readonly requestLog: RequestLog["Service"]
  /** The dispatcher's sends: held batches and their timers run there too. */
  readonly sends: FiberSet.FiberSet<void, never>
}) {
  const userAgent = `anchord/${VERSION}`

  /** One POST started at `startedMillis`; never fails: a bug in the sender must not leak the claim, it becomes a failed attempt like any other. */
  const post = (request: Omit<AttemptRequest, "timeoutMillis">, startedMillis: number): Effect.Effect<AttemptOutcome> =>
    Effect.promise((signal) => attempt({ ...request, timeoutMillis: config.timeoutMillis }, agents, egress, signal)).pipe(
      Effect.catchDefect((defect) =>
        Effect.map(Clock.currentTimeMillis,
          (now) => ({ ok: false, statusCode: null, latencyMs: now - startedMillis, error: `internal error: ${String(defect)}` }))
      )
    )

  /** One attempt of a rendered delivery (claimed, or a record of a leased chunk); never fails. */
  const attemptOnce = Effect.fn("WebhookDispatcher.send")(function*(row: Sendable) {
    yield* annotateSampled(() => deliveryAttributes(row))
    const startedMillis = yield* Clock.currentTimeMillis
    const headers = attemptHeaders(row, Math.floor(startedMillis / 1000), userAgent)
    const outcome = yield* post({ url: row.url, environment: row.environment, body: row.body, headers }, startedMillis)
    return { startedAt: new Date(startedMillis), ...outcome, retryInMillis: outcome.ok ? null : retryDelayMillis(row.attempts, config.retryScale) }
  })

  /**
   * One attempt of a batch (./batch.ts): every event's outcome, in the batch's order. A 2xx takes them all
   * but those its answer names; anything else fails them all. Never fails.
   */
  const attemptBatch = Effect.fn("WebhookDispatcher.sendBatch")(function*(rows: ReadonlyArray<Sendable>) {
    yield* annotateSampled(() => ({ "anchord.batch_events": rows.length, "anchord.event": rows[0]!.headers.event }))
    const startedMillis = yield* Clock.currentTimeMillis
    const first = rows[0]!
    const body = batchBody(rows)
    const headers = batchHeaders(rows, body, { secret: first.secret, previous: first.secretPrevious }, Math.floor(startedMillis / 1000), userAgent)
    const outcome = yield* post({ url: first.url, environment: first.environment, body, headers, readAnswer: ANSWER_MAX_BYTES }, startedMillis)
    observeBatch(metrics, outcome.ok ? "success" : outcome.statusCode === null ? "connection_error" : "http_error", rows.length, outcome.latencyMs / 1000)
    const eventIds = rows.map((row) => row.headers.eventId)
    const notTaken = outcome.ok ? failedEventIds(outcome.answer, eventIds) : new Set<string>()
    const startedAt = new Date(startedMillis)
    // The request log is what a receiver saw; not writing it loses no event (each delivery records its own outcome).
    yield* requestLog.record({
      id: headers["X-Service-Batch-Id"]!,
      accountId: first.accountId,
      environment: first.environment,
      url: first.url,
      kind: kindOfServiceEvent(first.headers.event) ?? first.headers.event,
      eventIds,
      recordIds: rows.map((row) => row.recordId ?? ""),
      startedAt,
      statusCode: outcome.statusCode,
      latencyMs: outcome.latencyMs,
      error: outcome.ok ? null : outcome.error,
      failedEventIds: [...notTaken],
      nodeId: config.nodeId
    }).pipe(Effect.catchCause((cause) => Effect.logWarning("webhook request not logged", { cause: Cause.pretty(cause) })))
    return rows.map((row) => {
      const ok = outcome.ok && !notTaken.has(row.headers.eventId)
      return {
        startedAt,
        ok,
        statusCode: outcome.statusCode,
        latencyMs: outcome.latencyMs,
        error: ok ? null : outcome.ok ? NOT_TAKEN : outcome.error,
        retryInMillis: ok ? null : retryDelayMillis(row.attempts, config.retryScale)
      }
    })
  })

  /** Partial batches held up to their maxWaitMs for more events (at most until their claims would expire). */
  const openBatches = yield* makeOpenBatches<Sendable, BatchOutcome>({
    send: attemptBatch,
    key: requestKey,
    holdCapMillis: Math.max(0, config.leaseMillis - config.timeoutMillis - 1_000),
    fibers: sends
  })

  /** One request's attempt: a single delivery's, or a batch's (held for more events first when its environment says so); the outcomes in order. */
  const attemptRequest = (rows: ReadonlyArray<Sendable>): Effect.Effect<ReadonlyArray<BatchOutcome>> => {
    const first = rows[0]!
    if (first.deliveryMode !== "batch") return Effect.map(attemptOnce(first), (outcome) => [outcome])
    return first.batchMaxWaitMs > 0 ? openBatches.add(rows) : attemptBatch(rows)
  }

  return { attemptRequest }
})

export type RequestAttempts = Effect.Success<ReturnType<typeof makeRequestAttempts>>
