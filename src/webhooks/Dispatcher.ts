/**
 * The webhook dispatcher: a supervised background feature of every node.
 *
 *  - claims due deliveries with `FOR UPDATE SKIP LOCKED` and a lease (`next_attempt_at` moves to the
 *    lease expiry, so several nodes share the work and a crashed node's claims come back by themselves);
 *  - is woken by LISTEN `anchord_webhooks` (the NOTIFY comes from the trigger that creates deliveries,
 *    i.e. after the producing transaction commits), and otherwise sleeps until the next due retry, at
 *    most WEBHOOK_POLL_MS (the polling fallback);
 *  - renders a delivery's body and signature once, stores them before the first send, and reuses them
 *    for every retry and after restarts; an `anchor.confirmed` chunk (leased fan-out row, migration 0017)
 *    is sent first and its delivery rows written with the outcomes, once per chunk;
 *  - sends up to WEBHOOK_CONCURRENCY attempts at once (a semaphore: one permit per attempt, from its
 *    claim until its response is in), at most about WEBHOOK_PER_HOST to one receiver (so a receiver
 *    that hangs cannot take every slot), and records outcomes in batches (one statement logs the
 *    attempts and moves the deliveries on the ladder) while the next attempts go out: at most
 *    UNWRITTEN_FACTOR × WEBHOOK_CONCURRENCY claimed deliveries wait for their outcome's statement;
 *  - yields to anchoring: while this node's anchoring pipelines are behind (AnchoringLag), deliveries start at a
 *    limited rate (./governor.ts), so the batcher, writer and watcher keep the CPU and the database they need;
 *  - logs one structured line per failed attempt (no secrets, no URL path or query);
 *  - on shutdown stops claiming and waits for the attempts in flight and their outcomes (every permit
 *    back), bounded by the attempt timeout;
 *  - deletes finished deliveries and their attempt logs after WEBHOOK_RETENTION_DAYS (default 30).
 */
import * as Crypto from "node:crypto"
import { Cause, Clock, Effect, Fiber, FiberSet, Layer, Queue, Ref, Semaphore } from "effect"
import { PgClient } from "@effect/sql-pg"
import { AnchoringLag } from "../anchoring/AnchoringLag.ts"
import { observeAttempt, observeBatch, setDeliveryRateLimit } from "../metrics/metrics.ts"
import { VERSION } from "../version.ts"
import { ANSWER_MAX_BYTES, batchBody, batchHeaders, failedEventIds, groupRequests } from "./batch.ts"
import { WebhookConfig } from "./config.ts"
import type { Claimed, Completion, Rendering } from "./claimedDeliveries.ts"
import { DeliveryClaims, WEBHOOK_CHANNEL } from "./DeliveryClaims.ts"
import type { Chunk } from "./fanOut.ts"
import { DeliveryLog } from "./DeliveryLog.ts"
import { RequestLog } from "./RequestLog.ts"
import { kindOfServiceEvent, render } from "./payload.ts"
import * as Governor from "./governor.ts"
import { retryDelayMillis } from "./schedule.ts"
import { attempt, attemptHeaders, type AttemptOutcome, type AttemptRequest, destroyAgents, loadExtraCa, makeAgents } from "./sender.ts"
import { makeOpenBatches } from "./openBatches.ts"
import { WebhookEgress } from "./urlPolicy.ts"
import { annotateSampled } from "../tracing/attributes.ts"
import { supervised } from "../supervision.ts"

/** Deliveries deleted per retention statement (bounded, so a large backlog does not hold one long transaction). */
const RETENTION_BATCH = 5_000

/**
 * Attempts whose outcome is not yet written, per process, as a multiple of WEBHOOK_CONCURRENCY: a send frees
 * its slot when its response is in, so the next claim need not wait for the outcome's statement; this bounds
 * how far the sends may run ahead of the writes (memory, and what a crash resends).
 */
const UNWRITTEN_FACTOR = 4

/** Anchoring lag (beyond the batch window) that deliveries yield to: below it, they run unlimited. */
const LAG_TOLERANCE_MS = 500

interface Outcome extends Completion {
  readonly deliveryId: string
  readonly eventId: string
  /** For the logs (logHostOf). */
  readonly host: string
}

/** A claimed delivery with its body, signatures and headers (rendered now or on an earlier claim). */
type Ready = Claimed & { readonly body: string; readonly signature: string; readonly headers: NonNullable<Claimed["headers"]> }

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
const requestKey = (row: Sendable) => `${row.environment}\n${row.url}\n${row.secret}\n${row.headers.event}`

/** An event's outcome of an attempt (alone or in a batch). */
type BatchOutcome = Omit<Completion, "seq" | "token" | "round" | "attempt">

/** What a receiver's answer says of an event it named as not taken (a batch's partial failure). */
const NOT_TAKEN = "not taken: the receiver named this event in failedEventIds"

const isReady = (row: Claimed): row is Ready => row.body !== null && row.signature !== null && row.headers !== null

/** The receiver for the logs: host[:port] only, never the path or query. */
const logHostOf = (url: string) => {
  try {
    return new URL(url).host
  } catch {
    return "(invalid url)"
  }
}

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

export const WebhookDispatcher = Layer.effectDiscard(Effect.gen(function*() {
  const config = yield* WebhookConfig
  // The node's metrics registry (src/app/metrics.ts): attempts by outcome, their durations.
  const metrics = yield* Effect.context<never>()
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

  const wake = yield* Queue.sliding<void>(1)
  /** Outcomes were written: slots are free again, and receivers may be below their per-host cap. */
  const freed = yield* Queue.sliding<void>(1)
  const results = yield* Queue.unbounded<Outcome>()
  /**
   * The attempts in flight in this process: one permit per claimed delivery, taken by the claim and
   * returned once its response is in (or at once when a claim or render comes back short).
   */
  const slots = yield* Semaphore.make(config.concurrency)
  /**
   * The claimed deliveries whose outcome is not yet written: taken with the slot, returned once the outcome
   * is written (or the claim comes back short). Shutdown waits for all of them.
   */
  const unwrittenCapacity = config.concurrency * UNWRITTEN_FACTOR
  const unwritten = yield* Semaphore.make(unwrittenCapacity)
  const sends = yield* FiberSet.make<void, never>()
  /**
   * This process's attempts in flight per receiver (from their start until their response is in):
   * the fan-out's per-host cap. Touched only by the claim fiber and the writer, between yields.
   */
  const inFlight = new Map<string, number>()
  const track = (host: string, delta: number) => {
    const n = (inFlight.get(host) ?? 0) + delta
    if (n > 0) inFlight.set(host, n)
    else inFlight.delete(host)
  }
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
    const eventIds = rows.map((r) => r.headers.eventId)
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
      recordIds: rows.map((r) => r.recordId ?? ""),
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
    if (first.deliveryMode !== "batch") return Effect.map(attemptOnce(first), (o) => [o])
    return first.batchMaxWaitMs > 0 ? openBatches.add(rows) : attemptBatch(rows)
  }

  /** The slots and in-flight counts of attempts whose responses are in: the next claim need not wait for their outcomes' statement. */
  const responded = (hosts: ReadonlyArray<string>) =>
    Effect.suspend(() => {
      for (const host of hosts) track(host, -1)
      return Effect.andThen(slots.release(hosts.length), Queue.offer(freed, undefined))
    })

  /** One request of claimed deliveries (one, or a batch), its outcomes handed to the writer. */
  const send = (rows: ReadonlyArray<Ready>, token: string) => {
    let handedOver = 0
    return attemptRequest(rows).pipe(
      Effect.ensuring(responded(rows.map((row) => row.host))),
      Effect.flatMap((outcomes) =>
        Effect.forEach(rows, (row, k) =>
          Queue.offer(results, {
            seq: row.seq,
            token,
            round: row.round,
            attempt: row.attempts,
            ...outcomes[k]!,
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
    o: Pick<Outcome, "ok" | "statusCode" | "latencyMs" | "error" | "deliveryId" | "eventId" | "host" | "attempt" | "round">,
    next: { readonly state: string; readonly nextAttemptAt: Date | null } | undefined
  ) {
    observeAttempt(metrics, o.ok ? "success" : o.statusCode === null ? "connection_error" : "http_error", o.latencyMs / 1000, !o.ok && next?.state === "FAILED")
    if (o.ok) return
    yield* Effect.logWarning("webhook delivery failed").pipe(Effect.annotateLogs({
      deliveryId: o.deliveryId,
      eventId: o.eventId,
      host: o.host,
      attempt: o.attempt,
      round: o.round,
      statusCode: o.statusCode,
      latencyMs: o.latencyMs,
      error: o.error,
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
    let answered = false
    const answer = Effect.suspend(() => {
      if (answered) return Effect.void
      answered = true
      return responded(chunk.items.map((item) => item.host))
    })
    return Effect.gen(function*() {
      const requests = groupRequests(chunk.items, requestKey)
      const answered = yield* Effect.forEach(requests, attemptRequest, { concurrency: "unbounded" })
      const byItem = new Map(requests.flatMap((rows, r) => rows.map((row, k) => [row, answered[r]![k]!] as const)))
      const outcomes = chunk.items.map((item) => byItem.get(item)!)
      yield* answer
      const written = yield* claims.completeChunk(
        chunk,
        outcomes.map((o, k) => ({ recordId: chunk.items[k].recordId, ...o })),
        config.nodeId
      ).pipe(
        Effect.retry({ times: 3 }),
        Effect.catchCause((cause) => Effect.as(Effect.logError("webhook outcomes not recorded", { count: chunk.items.length, cause: Cause.pretty(cause) }), []))
      )
      const byRecord = new Map(written.map((w) => [w.recordId, w]))
      let retries = false
      for (const [k, item] of chunk.items.entries()) {
        const w = byRecord.get(item.recordId)
        if (w?.state === "PENDING") retries = true
        yield* report({
          ...outcomes[k],
          deliveryId: w?.id ?? item.id,
          eventId: item.eventId,
          host: logHostOf(item.url),
          attempt: 0,
          round: 0
        }, w)
      }
      if (retries) yield* Queue.offer(wake, undefined)
    }).pipe(Effect.ensuring(Effect.andThen(answer, Effect.andThen(unwritten.release(chunk.items.length), Queue.offer(freed, undefined)))))
  }

  /**
   * Bodies and signatures for deliveries claimed for the first time, stored before anything is sent.
   * A delivery that cannot be rendered (its event does not decode: no producer writes such a row) is
   * not sent: it gets a failed attempt, on the ladder like any other, visible in the delivery log.
   */
  const renderMissing = Effect.fnUntraced(function*(rows: ReadonlyArray<Claimed>, token: string) {
    const ready: Array<Ready> = []
    const failed: Array<Outcome> = []
    const missing = rows.filter((r) => !isReady(r))
    if (missing.length === 0) return { ready: rows as ReadonlyArray<Ready>, failed }
    const inputs = yield* claims.renderInputs(missing.map((r) => r.seq))
    const renderings: Array<Rendering> = []
    const unrendered = new Map<string, { readonly eventId: string; readonly error: string }>()
    for (const input of inputs) {
      try {
        renderings.push({ seq: input.seq, ...render(input) })
      } catch (error) {
        unrendered.set(input.seq, { eventId: input.eventId, error: `internal error: ${error instanceof Error ? error.message : String(error)}` })
      }
    }
    const saved = yield* claims.saveRendered(renderings)
    const bySeq = new Map(saved.map((s) => [s.seq, s]))
    const now = yield* Clock.currentTimeMillis
    for (const row of rows) {
      if (isReady(row)) {
        ready.push(row)
        continue
      }
      const s = bySeq.get(row.seq)
      if (s !== undefined) {
        ready.push({ ...row, body: s.body, signature: s.signature, signatureNext: s.signatureNext, headers: s.headers })
        continue
      }
      const problem = unrendered.get(row.seq)
      if (problem === undefined) continue
      failed.push({
        seq: row.seq,
        token,
        round: row.round,
        attempt: row.attempts,
        startedAt: new Date(now),
        statusCode: null,
        latencyMs: 0,
        error: problem.error,
        ok: false,
        retryInMillis: retryDelayMillis(row.attempts, config.retryScale),
        deliveryId: row.id,
        eventId: problem.eventId,
        host: logHostOf(row.url)
      })
    }
    return { ready, failed }
  })

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

  /**
   * Claims, renders and starts up to `want` attempts (their permits taken): due deliveries first (retries,
   * redeliveries, record changes), then new `anchor.confirmed` events fanned out with the slots left.
   * Those claimed are started before the fan-out runs, so a failing fan-out strands none of them; `progress`
   * counts what was started, whatever fails after. Whether more work may be waiting.
   */
  const claimAndStart = Effect.fnUntraced(function*(want: number, progress: { started: number }) {
    const token = Crypto.randomUUID()
    const claimed = yield* claims.claim(want, config.leaseMillis, config.nodeId, token, config.perHostConcurrency)
    if (claimed.length > 0) {
      const { failed, ready } = yield* renderMissing(claimed, token)
      yield* start(ready, failed, token, progress)
    }
    if (claimed.length === want) return true
    const fanned = yield* claims.fanOut(want - claimed.length, config.leaseMillis, config.nodeId, token, config.perHostConcurrency, inFlight)
    // Rendered in the fan-out's own transaction, leased as chunks; their delivery rows are written with their outcomes.
    yield* start([], [], token, progress, fanned.chunks)
    return fanned.found
  })

  const governor = yield* Ref.make(Governor.initial(yield* Clock.currentTimeMillis))

  /**
   * Waits until the governor lets one more delivery start; how many may start now. Logs when deliveries
   * start and stop yielding to anchoring.
   */
  const admitted = Effect.gen(function*() {
    while (true) {
      const now = yield* Clock.currentTimeMillis
      const lag = yield* anchoringLag.current
      const before = yield* Ref.get(governor)
      const g = Governor.step(before, now, lag > LAG_TOLERANCE_MS)
      yield* Ref.set(governor, g)
      if (g.rate !== before.rate) {
        setDeliveryRateLimit(metrics, g.rate ?? 0)
        if (before.rate === undefined) {
          yield* Effect.logInfo("webhook deliveries yielding to anchoring", { anchoringLagMs: lag, eventsPerSecond: Math.round(g.rate!) })
        } else if (g.rate === undefined) yield* Effect.logInfo("webhook deliveries at full rate again")
      }
      const wait = Governor.waitMillis(g)
      if (wait === 0) return Governor.allowance(g)
      yield* Effect.sleep(wait)
    }
  })

  /**
   * One claim: waits for a free slot and the governor, takes as many as are free and admitted (at most a
   * claim batch), and gives back those the claim did not fill. Uninterruptible once the permits are taken,
   * so shutdown never cuts a claim between the database and the sends (nor loses track of its permits).
   */
  const claimOnce = Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const limit = yield* restore(admitted)
      yield* restore(unwritten.take(1))
      yield* restore(slots.take(1)).pipe(Effect.onInterrupt(() => unwritten.release(1)))
      // `release(0)` releases nothing and answers how many permits are free. Only this fiber takes
      // permits while the dispatcher runs, so they are still free on the next lines.
      const more = Math.min(config.claimBatch - 1, yield* slots.release(0), yield* unwritten.release(0), limit - 1)
      if (more > 0) yield* Effect.andThen(slots.take(more), unwritten.take(more))
      const want = 1 + more
      const progress = { started: 0 }
      const giveBack = Effect.suspend(() => {
        const short = want - progress.started
        return short > 0 ? Effect.andThen(slots.release(short), unwritten.release(short)) : Effect.void
      })
      const waiting = yield* claimAndStart(want, progress).pipe(
        Effect.onError(() => giveBack),
        Effect.ensuring(Effect.suspend(() => Ref.update(governor, (g) => Governor.started(g, progress.started))))
      )
      yield* giveBack
      return waiting ? "more" as const : "idle" as const
    })
  )

  const claimLoop = Effect.gen(function*() {
    while (true) {
      if ((yield* claimOnce) === "more") {
        yield* Effect.yieldNow
        continue
      }
      const due = yield* claims.nextDueMillis
      if (due === 0) {
        // Due now but not claimable: their receivers are at the in-flight cap (or another node
        // holds them). Wait for outcomes to free a slot here, a wake-up, or another node's progress.
        yield* Effect.raceFirst(
          Effect.raceFirst(Queue.take(wake), Queue.take(freed)),
          Effect.sleep(Math.min(config.pollMillis, 100))
        )
      } else {
        const wait = due === null ? config.pollMillis : Math.min(due, config.pollMillis)
        yield* Effect.raceFirst(Queue.take(wake), Effect.sleep(wait))
      }
    }
  })

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
      const next = new Map(written.map((w) => [w.seq, w]))
      let retries = false
      for (const o of batch) {
        const w = next.get(o.seq)
        if (!o.ok && w?.state === "PENDING") retries = true
        yield* report(o, w)
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
      // until a statement finds nothing: a batch's count mixes delivery rows and chunk rows' entries (migration 0023)
      for (let n = 1; n > 0;) {
        n = yield* deliveryLog.purgeFinished(before, RETENTION_BATCH)
        purged += n
      }
      for (let n = 1; n > 0;) n = yield* requestLog.purge(before, RETENTION_BATCH)
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
