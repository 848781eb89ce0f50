/**
 * The dispatcher's claim loop (./Dispatcher.ts): waits for free slots and the anchoring governor, claims due
 * deliveries (rendering those claimed for the first time), fans out `anchor.confirmed` with the slots left, starts
 * their sends (./sending.ts), and sleeps until a wake-up, freed slots or the next due retry.
 */
import * as Crypto from "node:crypto"
import { Clock, Effect, Queue, Ref } from "effect"
import type { AnchoringLag } from "../anchoring/AnchoringLag.ts"
import { type MetricsHandle, setDeliveryRateLimit } from "../metrics/metrics.ts"
import type { Claimed, Rendering } from "./claimedDeliveries.ts"
import type { DispatcherSettings } from "./config.ts"
import type { DeliveryClaims } from "./DeliveryClaims.ts"
import { type DispatchState, logHostOf, type Outcome } from "./dispatchState.ts"
import * as Governor from "./governor.ts"
import { render } from "./payload.ts"
import type { Ready } from "./requestAttempts.ts"
import { retryDelayMillis } from "./schedule.ts"
import type { makeSending } from "./sending.ts"

/** Anchoring lag (beyond the batch window) that deliveries yield to: below it, they run unlimited. */
const LAG_TOLERANCE_MS = 500

const isReady = (row: Claimed): row is Ready => row.body !== null && row.signature !== null && row.headers !== null

export const makeClaimLoop = Effect.fnUntraced(function*({ anchoringLag, claims, config, metrics, start, state }: {
  readonly config: DispatcherSettings
  /** The node's metrics registry (src/app/metrics.ts): the delivery rate limit while yielding to anchoring. */
  readonly metrics: MetricsHandle
  readonly claims: DeliveryClaims["Service"]
  readonly anchoringLag: AnchoringLag["Service"]
  readonly state: DispatchState
  readonly start: ReturnType<typeof makeSending>["start"]
}) {
  const { freed, inFlight, slots, unwritten, wake } = state

  /**
   * Bodies and signatures for deliveries claimed for the first time, stored before anything is sent.
   * A delivery that cannot be rendered (its event does not decode: no producer writes such a row) is
   * not sent: it gets a failed attempt, on the ladder like any other, visible in the delivery log.
   */
  const renderMissing = Effect.fnUntraced(function*(rows: ReadonlyArray<Claimed>, token: string) {
    const ready: Array<Ready> = []
    const failed: Array<Outcome> = []
    const missing = rows.filter((row) => !isReady(row))
    if (missing.length === 0) return { ready: rows as ReadonlyArray<Ready>, failed }
    const inputs = yield* claims.renderInputs(missing.map((row) => row.seq))
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
    const savedBySeq = new Map(saved.map((rendering) => [rendering.seq, rendering]))
    const now = yield* Clock.currentTimeMillis
    for (const row of rows) {
      if (isReady(row)) {
        ready.push(row)
        continue
      }
      const rendering = savedBySeq.get(row.seq)
      if (rendering !== undefined) {
        ready.push({ ...row, body: rendering.body, signature: rendering.signature, signatureNext: rendering.signatureNext, headers: rendering.headers })
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
      const after = Governor.step(before, now, lag > LAG_TOLERANCE_MS)
      yield* Ref.set(governor, after)
      if (after.rate !== before.rate) {
        setDeliveryRateLimit(metrics, after.rate ?? 0)
        if (before.rate === undefined) {
          yield* Effect.logInfo("webhook deliveries yielding to anchoring", { anchoringLagMs: lag, eventsPerSecond: Math.round(after.rate!) })
        } else if (after.rate === undefined) yield* Effect.logInfo("webhook deliveries at full rate again")
      }
      const wait = Governor.waitMillis(after)
      if (wait === 0) return Governor.allowance(after)
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

  return Effect.gen(function*() {
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
})
