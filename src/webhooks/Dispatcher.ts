/**
 * The webhook dispatcher: a supervised background feature of every node.
 *
 *  - claims due deliveries with `FOR UPDATE SKIP LOCKED` and a lease (`next_attempt_at` moves to the
 *    lease expiry, so several nodes share the work and a crashed node's claims come back by themselves);
 *  - is woken by LISTEN `anchord_webhooks` (the NOTIFY comes from the trigger that creates deliveries,
 *    i.e. after the producing transaction commits), and otherwise sleeps until the next due retry, at
 *    most WEBHOOK_POLL_MS (the polling fallback);
 *  - renders a delivery's body and signature once, stores them before the first send, and reuses them
 *    for every retry and after restarts; an `anchor.confirmed` chunk (a leased fan-out row) is sent first
 *    and its outcomes written once per chunk (DeliveryClaims.completeChunk);
 *  - sends up to WEBHOOK_CONCURRENCY attempts at once (a semaphore: one permit per attempt, from its
 *    claim until its response is in), at most about WEBHOOK_PER_HOST to one receiver (so a receiver
 *    that hangs cannot take every slot), and records outcomes in batches (one statement logs the
 *    attempts and moves the deliveries on the ladder) while the next attempts go out: at most
 *    UNWRITTEN_FACTOR × WEBHOOK_CONCURRENCY claimed deliveries wait for their outcome's statement (./dispatchState.ts);
 *  - yields to anchoring: while this node's anchoring pipelines are behind (AnchoringLag), deliveries start at a
 *    limited rate (./governor.ts), so the batcher, writer and watcher keep the CPU and the database they need;
 *  - logs one structured line per failed attempt (no secrets, no URL path or query);
 *  - on shutdown stops claiming and waits for the attempts in flight and their outcomes (every permit
 *    back), bounded by the attempt timeout;
 *  - deletes finished deliveries and their attempt logs after WEBHOOK_RETENTION_DAYS (default 30).
 *
 * The parts: the shared state (./dispatchState.ts), one request's attempt (./requestAttempts.ts), starting sends
 * and reporting outcomes (./sending.ts), the claim loop (./claimer.ts); here, the writer, the listener, retention,
 * supervision and shutdown.
 */
import { Cause, Clock, Effect, Fiber, Layer, Queue } from "effect"
import { PgClient } from "@effect/sql-pg"
import { AnchoringLag } from "../anchoring/AnchoringLag.ts"
import { metricsHandle } from "../metrics/metrics.ts"
import { supervised } from "../supervision.ts"
import { makeClaimLoop } from "./claimer.ts"
import { WebhookConfig } from "./config.ts"
import { DeliveryClaims, WEBHOOK_CHANNEL } from "./DeliveryClaims.ts"
import { DeliveryLog } from "./DeliveryLog.ts"
import { makeDispatchState } from "./dispatchState.ts"
import { RequestLog } from "./RequestLog.ts"
import { makeRequestAttempts } from "./requestAttempts.ts"
import { destroyAgents, loadExtraCa, makeAgents } from "./sender.ts"
import { makeSending } from "./sending.ts"
import { WebhookEgress } from "./urlPolicy.ts"

/** Deliveries deleted per retention statement (bounded, so a large backlog does not hold one long transaction). */
const RETENTION_BATCH = 5_000

export const WebhookDispatcher = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* WebhookConfig
  // The node's metrics registry (src/app/metrics.ts): attempts by outcome, their durations.
  const metrics = yield* metricsHandle
  if (!config.enabled) return
  const claims = yield* DeliveryClaims
  const deliveryLog = yield* DeliveryLog
  const requestLog = yield* RequestLog
  const pg = yield* PgClient.PgClient
  const egress = yield* WebhookEgress
  const anchoringLag = yield* AnchoringLag
  const extraCa = config.caFile === undefined ? undefined : loadExtraCa(config.caFile)
  if (typeof extraCa === "object") return yield* Effect.die(new Error(extraCa.error))
  const agents = yield* Effect.acquireRelease(Effect.sync(() => makeAgents(extraCa)), (a) => Effect.sync(() => destroyAgents(a)))

  const state = yield* makeDispatchState(config.concurrency)
  const { freed, results, unwritten, unwrittenCapacity, wake } = state
  const { attemptRequest } = yield* makeRequestAttempts({ config, metrics, agents, egress, requestLog, sends: state.sends })
  const { report, start } = makeSending({ config, metrics, claims, state, attemptRequest })
  const claimLoop = yield* makeClaimLoop({ config, metrics, claims, anchoringLag, state, start })

  const writeLoop = Effect.gen(function*() {
    while (true) {
      const batch = yield* Queue.takeBetween(results, 1, 500)
      const written = yield* claims.complete(batch, config.nodeId).pipe(
        Effect.retry({ times: 3 }),
        Effect.catchCause((cause) =>
          // Unrecorded outcomes are not lost work: the leases expire and the deliveries are sent again.
          Effect.as(Effect.logError("webhook outcomes not recorded", { count: batch.length, cause: Cause.pretty(cause) }), [])
        ),
        // Whatever happened, these outcomes are no longer waiting here (their slots came back with their responses).
        Effect.ensuring(Effect.andThen(unwritten.release(batch.length), Queue.offer(freed, undefined)))
      )
      const writtenBySeq = new Map(written.map((delivery) => [delivery.seq, delivery]))
      let retries = false
      for (const outcome of batch) {
        const delivery = writtenBySeq.get(outcome.seq)
        if (!outcome.ok && delivery?.state === "PENDING") retries = true
        yield* report(outcome, delivery)
      }
      if (retries) yield* Queue.offer(wake, undefined)
    }
  })

  const listenLoop = Effect.scoped(Effect.gen(function*() {
    const notifications = yield* pg.listen(WEBHOOK_CHANNEL)
    // Whatever was committed while no listener was connected.
    yield* Queue.offer(wake, undefined)
    while (true) {
      yield* Queue.take(notifications)
      yield* Queue.offer(wake, undefined)
    }
  }))

  /**
   * Supervision: a failing loop (database outage) logs, waits a poll period and starts over: one line when
   * it starts failing, then at most one a minute with the count, never one per restart.
   */
  const supervise = <E>(name: string, loop: Effect.Effect<unknown, E>) =>
    supervised(loop, { name: `webhook ${name}`, pause: Math.max(250, config.pollMillis), remindEvery: "1 minute" }).pipe(Effect.forkScoped)

  /**
   * Retention (WEBHOOK_RETENTION_DAYS): every WEBHOOK_RETENTION_SWEEP_MS, finished deliveries older than
   * the retention go, with their attempt logs, in batches; one log line when any went. Several nodes may
   * sweep at once (the batches skip each other's locked rows).
   */
  const retentionLoop = Effect.gen(function*() {
    while (true) {
      yield* Effect.sleep(config.retentionSweepMillis)
      const before = new Date((yield* Clock.currentTimeMillis) - config.retentionMillis)
      let purged = 0
      // until a statement finds nothing: a batch's count mixes delivery rows and chunk rows' entries
      for (let count = 1; count > 0;) {
        count = yield* deliveryLog.purgeFinished(before, RETENTION_BATCH)
        purged += count
      }
      for (let count = 1; count > 0;) count = yield* requestLog.purge(before, RETENTION_BATCH)
      if (purged > 0) yield* Effect.logInfo("webhook deliveries purged", { deliveries: purged, before: before.toISOString() })
    }
  })

  yield* supervise("listener", listenLoop)
  const retention = config.retentionMillis > 0 ? yield* supervise("retention", retentionLoop) : undefined
  yield* supervise("writer", writeLoop)
  const claimer = yield* supervise("claimer", claimLoop)

  // Shutdown (runs before the loops are interrupted and the sends' FiberSet is closed): claim nothing
  // more (a claim under way completes first), then wait until every permit is back, i.e. every attempt
  // in flight has finished and its outcome is written, for at most one attempt's timeout. Whatever is
  // still open then is resent by another node (or this one, restarted) when its lease expires.
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      yield* Fiber.interrupt(claimer)
      if (retention !== undefined) yield* Fiber.interrupt(retention)
      yield* unwritten.take(unwrittenCapacity)
    }).pipe(Effect.timeoutOption(Math.min(config.timeoutMillis + 1_000, 15_000)))
  )
}))
