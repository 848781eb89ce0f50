/**
 * The webhook dispatcher: a supervised background feature of every node.
 *
 *  - claims due deliveries with `FOR UPDATE SKIP LOCKED` and a lease (`next_attempt_at` moves to the
 *    lease expiry, so several nodes share the work and a crashed node's claims come back by themselves);
 *  - is woken by LISTEN `anchord_webhooks` (the NOTIFY comes from the trigger that creates deliveries,
 *    i.e. after the producing transaction commits), and otherwise sleeps until the next due retry, at
 *    most WEBHOOK_POLL_MS (the polling fallback);
 *  - renders a delivery's body and signature once, stores them before the first send, and reuses them
 *    for every retry and after restarts;
 *  - sends up to WEBHOOK_CONCURRENCY attempts at once, at most about WEBHOOK_PER_HOST to one receiver
 *    (so a receiver that hangs cannot take every slot), and records outcomes in batches (one statement
 *    logs the attempts and moves the deliveries on the ladder);
 *  - logs one structured line per failed attempt (no secrets, no URL path or query);
 *  - on shutdown stops claiming and lets the attempts in flight finish (bounded by the timeout);
 *  - deletes finished deliveries and their attempt logs after WEBHOOK_RETENTION_DAYS (default 30).
 */
import * as Crypto from "node:crypto"
import { Cause, Clock, Effect, FiberSet, Layer, Queue } from "effect"
import { PgClient } from "@effect/sql-pg"
import { VERSION } from "../version.ts"
import { WebhookConfig } from "./config.ts"
import { render } from "./payload.ts"
import { retryDelayMillis } from "./schedule.ts"
import { attempt, destroyAgents, makeAgents, WebhookResolver } from "./sender.ts"
import { standardSignature } from "./standard.ts"
import { type Claimed, type Completion, WEBHOOK_CHANNEL, WebhookStore } from "./WebhookStore.ts"

/** Deliveries deleted per retention statement (bounded, so a large backlog does not hold one long transaction). */
const RETENTION_BATCH = 5_000

interface Outcome extends Completion {
  readonly deliveryId: string
  readonly eventId: string
  readonly host: string
}

const hostOf = (url: string) => {
  try {
    return new URL(url).host
  } catch {
    return "(invalid url)"
  }
}

export const WebhookDispatcher = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* WebhookConfig
  if (!config.enabled) return
  const store = yield* WebhookStore
  const pg = yield* PgClient.PgClient
  const resolve = yield* WebhookResolver
  const agents = yield* Effect.acquireRelease(Effect.sync(makeAgents), (a) => Effect.sync(() => destroyAgents(a)))

  const wake = yield* Queue.sliding<void>(1)
  const capacity = yield* Queue.sliding<void>(1)
  const results = yield* Queue.unbounded<Outcome>()
  const sends = yield* FiberSet.make<void, never>()
  let inFlight = 0
  let stopping = false
  const userAgent = `anchord/${VERSION}`

  const send = (row: Claimed & { readonly body: string; readonly signature: string }, token: string) =>
    Effect.gen(function*() {
      const h = row.headers!
      const startedMillis = yield* Clock.currentTimeMillis
      const seconds = Math.floor(startedMillis / 1000)
      const headers: Record<string, string> = {
        "Content-Type": "application/json",
        "User-Agent": userAgent,
        "X-Service-Event": h.event,
        "X-Service-Event-Id": h.eventId,
        "X-Service-Timestamp": String(seconds),
        "X-Service-Hash": h.hash,
        "X-Service-Package": h.packageMode,
        "X-Service-Chain": h.chain,
        "X-Service-Network": h.network,
        "X-Service-Retry-Attempt": String(row.attempts),
        "x-webhook-signature": row.signature
      }
      if (row.signatureNext !== null) headers["x-webhook-signature-next"] = row.signatureNext
      // Standard Webhooks (SPEC 5.3): signed over this attempt's timestamp, so made per attempt (the
      // seed's signature above is made once per event), with the account's secrets as of this claim.
      headers["webhook-id"] = h.eventId
      headers["webhook-timestamp"] = String(seconds)
      headers["webhook-signature"] = standardSignature(
        row.secretPrevious === null ? [row.secret] : [row.secretPrevious, row.secret], h.eventId, seconds, row.body
      )
      const startedAt = new Date(startedMillis)
      const outcome = yield* Effect.promise((signal) =>
        attempt(
          { url: row.url, environment: row.environment, body: row.body, headers, timeoutMillis: config.timeoutMillis },
          agents,
          resolve,
          signal
        )
      ).pipe(
        // A bug in the sender must not leak the claim: it becomes a failed attempt like any other.
        Effect.catchDefect((defect) =>
          Effect.map(Clock.currentTimeMillis, (now) =>
            ({ ok: false, statusCode: null, latencyMs: now - startedMillis, error: `internal error: ${String(defect)}` }))
        )
      )
      yield* Queue.offer(results, {
        seq: row.seq,
        token,
        round: row.round,
        attempt: row.attempts,
        startedAt,
        statusCode: outcome.statusCode,
        latencyMs: outcome.latencyMs,
        error: outcome.error,
        ok: outcome.ok,
        retryInMillis: outcome.ok ? null : retryDelayMillis(row.attempts, config.retryScale),
        deliveryId: row.id,
        eventId: h.eventId,
        host: hostOf(row.url)
      })
    })

  /** Bodies and signatures for deliveries claimed for the first time, stored before anything is sent. */
  const renderMissing = (rows: ReadonlyArray<Claimed>) =>
    Effect.gen(function*() {
      const missing = rows.filter((r) => r.body === null || r.headers === null)
      if (missing.length === 0) return rows
      const inputs = yield* store.renderInputs(missing.map((r) => r.seq))
      const saved = yield* store.saveRendered(inputs.map((input) => ({ seq: input.seq, ...render(input) })))
      const bySeq = new Map(saved.map((s) => [s.seq, s]))
      return rows.flatMap((row) => {
        if (row.body !== null && row.headers !== null) return [row]
        const s = bySeq.get(row.seq)
        return s === undefined ? [] : [{ ...row, body: s.body, signature: s.signature, signatureNext: s.signatureNext, headers: s.headers }]
      })
    })

  type Step = "more" | "idle" | "full"
  const claimOnce: Effect.Effect<Step> = Effect.gen(function*() {
    if (stopping) return "idle" as const
    const free = config.concurrency - inFlight
    if (free <= 0) return "full" as const
    const want = Math.min(free, config.claimBatch)
    const token = Crypto.randomUUID()
    const claimed = yield* store.claim(want, config.leaseMillis, config.nodeId, token, config.perHostConcurrency)
    if (claimed.length === 0) return "idle" as const
    const ready = yield* renderMissing(claimed)
    for (const row of ready) {
      inFlight++
      yield* FiberSet.run(sends, send(row as Claimed & { body: string; signature: string }, token))
    }
    return claimed.length === want ? "more" as const : "idle" as const
  })

  const claimLoop = Effect.gen(function*() {
    while (true) {
      const step = yield* claimOnce
      if (step === "more") {
        yield* Effect.yieldNow
      } else if (step === "full") {
        yield* Queue.take(capacity)
      } else {
        const due = yield* store.nextDueMillis
        if (due === 0) {
          // Due now but not claimable: their receivers are at the in-flight cap (or another node
          // holds them). Wait for a slot to free up here, a wake-up, or another node's progress.
          yield* Effect.raceFirst(
            Effect.raceFirst(Queue.take(wake), Queue.take(capacity)),
            Effect.sleep(Math.min(config.pollMillis, 100))
          )
        } else {
          const wait = due === null ? config.pollMillis : Math.min(due, config.pollMillis)
          yield* Effect.raceFirst(Queue.take(wake), Effect.sleep(wait))
        }
      }
    }
  })

  const writeLoop = Effect.gen(function*() {
    while (true) {
      const batch = yield* Queue.takeBetween(results, 1, 500)
      const written = yield* store.complete(batch, config.nodeId).pipe(
        Effect.retry({ times: 3 }),
        Effect.catchCause((cause) =>
          // Unrecorded outcomes are not lost work: the leases expire and the deliveries are sent again.
          Effect.as(Effect.logError("webhook outcomes not recorded", { count: batch.length, cause: Cause.pretty(cause) }), [])
        )
      )
      inFlight -= batch.length
      yield* Queue.offer(capacity, undefined)
      const next = new Map(written.map((w) => [w.seq, w]))
      let retries = false
      for (const o of batch) {
        if (o.ok) continue
        const w = next.get(o.seq)
        if (w?.state === "PENDING") retries = true
        yield* Effect.logWarning("webhook delivery failed").pipe(Effect.annotateLogs({
          deliveryId: o.deliveryId,
          eventId: o.eventId,
          host: o.host,
          attempt: o.attempt,
          round: o.round,
          statusCode: o.statusCode,
          latencyMs: o.latencyMs,
          error: o.error,
          outcome: w === undefined ? "superseded" : w.state === "FAILED" ? "failed: no attempts left" : "retry scheduled",
          nextAttemptAt: w?.nextAttemptAt?.toISOString() ?? null
        }))
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

  /** Supervision: a failing loop (database outage) logs, waits and starts over. */
  const supervised = <E>(name: string, loop: Effect.Effect<unknown, E>) =>
    loop.pipe(
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause)
          ? Effect.failCause(cause)
          : Effect.logWarning(`webhook ${name} restarting`, { error: Cause.pretty(cause).split("\n")[0] }).pipe(
            Effect.andThen(Effect.sleep(Math.max(250, config.pollMillis)))
          )
      ),
      Effect.forever,
      Effect.forkScoped
    )

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
      for (let n = RETENTION_BATCH; n === RETENTION_BATCH && !stopping;) {
        n = yield* store.purgeFinished(before, RETENTION_BATCH)
        purged += n
      }
      if (purged > 0) yield* Effect.logInfo("webhook deliveries purged", { deliveries: purged, before: before.toISOString() })
    }
  })

  yield* supervised("listener", listenLoop)
  if (config.retentionMillis > 0) yield* supervised("retention", retentionLoop)
  yield* supervised("writer", writeLoop)
  yield* supervised("claimer", claimLoop)

  // Shutdown (runs before the loops are interrupted): claim nothing more, let the attempts in flight
  // finish and their outcomes be written, for at most one attempt's timeout. Whatever is still open
  // then is resent by another node (or this one, restarted) when its lease expires.
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      stopping = true
      const until = (yield* Clock.currentTimeMillis) + Math.min(config.timeoutMillis + 1_000, 15_000)
      while (inFlight > 0 && (yield* Clock.currentTimeMillis) < until) yield* Effect.sleep(20)
    })
  )
}))
