/**
 * Starting the dispatcher's sends (./Dispatcher.ts) and reporting their outcomes: claimed deliveries grouped into
 * requests, their outcomes handed to the writer; a leased chunk's records sent at once and their outcomes written
 * in one statement (DeliveryClaims.completeChunk). Every permit and in-flight count taken for a send comes back,
 * whatever happens to it.
 */
import { Cause, Effect, FiberSet, Queue } from "effect"
import { type MetricsHandle, observeAttempt } from "../metrics/metrics.ts"
import { groupRequests } from "./batch.ts"
import type { DispatcherSettings } from "./config.ts"
import type { DeliveryClaims } from "./DeliveryClaims.ts"
import { type DispatchState, logHostOf, type Outcome } from "./dispatchState.ts"
import type { Chunk } from "./fanOut.ts"
import { type Ready, type RequestAttempts, requestKey } from "./requestAttempts.ts"

export const makeSending = ({ attemptRequest, claims, config, metrics, state }: {
  readonly config: DispatcherSettings
  /** The node's metrics registry (src/app/metrics.ts): attempts by outcome, their durations. */
  readonly metrics: MetricsHandle
  readonly claims: DeliveryClaims["Service"]
  readonly state: DispatchState
  readonly attemptRequest: RequestAttempts["attemptRequest"]
}) => {
  const { freed, responded, results, sends, slots, track, unwritten, wake } = state

  /** One request of claimed deliveries (one, or a batch), its outcomes handed to the writer. */
  const send = (rows: ReadonlyArray<Ready>, token: string) => {
    let handedOver = 0
    return attemptRequest(rows).pipe(
      Effect.ensuring(responded(rows.map((row) => row.host))),
      Effect.flatMap((outcomes) =>
        Effect.forEach(rows, (row, index) =>
          Queue.offer(results, {
            seq: row.seq,
            token,
            round: row.round,
            attempt: row.attempts,
            ...outcomes[index]!,
            deliveryId: row.id,
            eventId: row.headers.eventId,
            host: logHostOf(row.url)
          }).pipe(Effect.tap(() =>
            Effect.sync(() => {
              handedOver++
            })
          )), { discard: true })
      ),
      // Interrupted before the writer had them: nothing will write them (their leases bring them back), so their permits are returned here.
      Effect.ensuring(Effect.suspend(() => handedOver === rows.length ? Effect.void : unwritten.release(rows.length - handedOver)))
    )
  }

  /** Metrics of an attempt, and the log line of a failed one, once its outcome is written (`next`: the row as written). */
  const report = Effect.fnUntraced(function*(
    outcome: Pick<Outcome, "ok" | "statusCode" | "latencyMs" | "error" | "deliveryId" | "eventId" | "host" | "attempt" | "round">,
    next: { readonly state: string; readonly nextAttemptAt: Date | null } | undefined
  ) {
    observeAttempt(
      metrics,
      outcome.ok ? "success" : outcome.statusCode === null ? "connection_error" : "http_error",
      outcome.latencyMs / 1000,
      !outcome.ok && next?.state === "FAILED"
    )
    if (outcome.ok) return
    yield* Effect.logWarning("webhook delivery failed").pipe(Effect.annotateLogs({
      deliveryId: outcome.deliveryId,
      eventId: outcome.eventId,
      host: outcome.host,
      attempt: outcome.attempt,
      round: outcome.round,
      statusCode: outcome.statusCode,
      latencyMs: outcome.latencyMs,
      error: outcome.error,
      outcome: next === undefined ? "superseded" : next.state === "FAILED" ? "failed: no attempts left" : "retry scheduled",
      nextAttemptAt: next?.nextAttemptAt?.toISOString() ?? null
    }))
  })

  /**
   * A leased chunk (DeliveryClaims.fanOut): every record's first attempt at once, then their outcomes written in
   * one statement (completeChunk). Its permits and in-flight counts come back whatever happens; outcomes not
   * written are not lost work: the lease expires and the chunk is sent again.
   */
  const sendChunk = (chunk: Chunk) => {
    let respondedOnce = false
    const respond = Effect.suspend(() => {
      if (respondedOnce) return Effect.void
      respondedOnce = true
      return responded(chunk.items.map((item) => item.host))
    })
    return Effect.gen(function*() {
      const requests = groupRequests(chunk.items, requestKey)
      const answers = yield* Effect.forEach(requests, attemptRequest, { concurrency: "unbounded" })
      const outcomeByItem = new Map(requests.flatMap((rows, request) => rows.map((row, index) => [row, answers[request]![index]!] as const)))
      const outcomes = chunk.items.map((item) => outcomeByItem.get(item)!)
      yield* respond
      const written = yield* claims.completeChunk(
        chunk,
        outcomes.map((outcome, index) => ({ recordId: chunk.items[index].recordId, ...outcome })),
        config.nodeId
      ).pipe(
        Effect.retry({ times: 3 }),
        Effect.catchCause((cause) => Effect.as(Effect.logError("webhook outcomes not recorded", { count: chunk.items.length, cause: Cause.pretty(cause) }), []))
      )
      const writtenByRecord = new Map(written.map((delivery) => [delivery.recordId, delivery]))
      let retries = false
      for (const [index, item] of chunk.items.entries()) {
        const delivery = writtenByRecord.get(item.recordId)
        if (delivery?.state === "PENDING") retries = true
        yield* report({
          ...outcomes[index],
          deliveryId: delivery?.id ?? item.id,
          eventId: item.eventId,
          host: logHostOf(item.url),
          attempt: 0,
          round: 0
        }, delivery)
      }
      if (retries) yield* Queue.offer(wake, undefined)
    }).pipe(Effect.ensuring(Effect.andThen(respond, Effect.andThen(unwritten.release(chunk.items.length), Queue.offer(freed, undefined)))))
  }

  /** Starts attempts (their permits taken by the caller), counting them in `progress`. */
  const start = Effect.fnUntraced(function*(
    ready: ReadonlyArray<Ready>,
    failed: ReadonlyArray<Outcome>,
    token: string,
    progress: { started: number },
    chunks: ReadonlyArray<Chunk> = []
  ) {
    for (const rows of groupRequests(ready, requestKey)) {
      for (const row of rows) track(row.host, 1)
      yield* FiberSet.run(sends, send(rows, token))
    }
    for (const chunk of chunks) {
      for (const item of chunk.items) track(item.host, 1)
      yield* FiberSet.run(sends, sendChunk(chunk))
      progress.started += chunk.items.length
    }
    // Not sent (its slot back at once), but an outcome like any other: the writer records it and returns its permit.
    if (failed.length > 0) {
      yield* slots.release(failed.length)
      yield* Queue.offerAll(results, failed)
    }
    progress.started += ready.length + failed.length
  })

  return { start, report }
}
