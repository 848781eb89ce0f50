/**
 * What the dispatcher's fibers share (./Dispatcher.ts): the wake-ups, the two bounds on attempts (slots in flight,
 * outcomes not yet written), the queue of outcomes for the writer, the sends' FiberSet, and this process's attempts
 * in flight per receiver (the fan-out's per-host cap).
 */
import { Effect, FiberSet, Queue, Semaphore } from "effect"
import type { Completion } from "./claimedDeliveries.ts"

/**
 * Attempts whose outcome is not yet written, per process, as a multiple of WEBHOOK_CONCURRENCY: a send frees
 * its slot when its response is in, so the next claim need not wait for the outcome's statement; this bounds
 * how far the sends may run ahead of the writes (memory, and what a crash resends).
 */
const UNWRITTEN_FACTOR = 4

/** A claimed delivery's outcome, as the writer records and reports it. */
export interface Outcome extends Completion {
  readonly deliveryId: string
  readonly eventId: string
  /** For the logs (logHostOf). */
  readonly host: string
}

/** The receiver for the logs: host[:port] only, never the path or query. */
export const logHostOf = (url: string) => {
  try {
    return new URL(url).host
  } catch {
    return "(invalid url)"
  }
}

export const makeDispatchState = Effect.fnUntraced(function*(concurrency: number) {
  /** A claim may find work: a NOTIFY, a retry scheduled, the listener (re)connected. */
  const wake = yield* Queue.sliding<void>(1)
  /** Outcomes were written: slots are free again, and receivers may be below their per-host cap. */
  const freed = yield* Queue.sliding<void>(1)
  /** Outcomes of claimed deliveries, for the writer. */
  const results = yield* Queue.unbounded<Outcome>()
  /**
   * The attempts in flight in this process: one permit per claimed delivery, taken by the claim and
   * returned once its response is in (or at once when a claim or render comes back short).
   */
  const slots = yield* Semaphore.make(concurrency)
  /**
   * The claimed deliveries whose outcome is not yet written: taken with the slot, returned once the outcome
   * is written (or the claim comes back short). Shutdown waits for all of them.
   */
  const unwrittenCapacity = concurrency * UNWRITTEN_FACTOR
  const unwritten = yield* Semaphore.make(unwrittenCapacity)
  const sends = yield* FiberSet.make<void, never>()
  /**
   * This process's attempts in flight per receiver (from their start until their response is in):
   * the fan-out's per-host cap. Touched only by the claim fiber and the writer, between yields.
   */
  const inFlight = new Map<string, number>()
  const track = (host: string, delta: number) => {
    const count = (inFlight.get(host) ?? 0) + delta
    if (count > 0) inFlight.set(host, count)
    else inFlight.delete(host)
  }

  /** The slots and in-flight counts of attempts whose responses are in: the next claim need not wait for their outcomes' statement. */
  const responded = (hosts: ReadonlyArray<string>) =>
    Effect.suspend(() => {
      for (const host of hosts) track(host, -1)
      return Effect.andThen(slots.release(hosts.length), Queue.offer(freed, undefined))
    })

  return {
    wake,
    freed,
    results,
    slots,
    unwritten,
    unwrittenCapacity,
    sends,
    inFlight: inFlight as ReadonlyMap<string, number>,
    track,
    responded
  }
})

export type DispatchState = Effect.Success<ReturnType<typeof makeDispatchState>>
