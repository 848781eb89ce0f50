/**
 * Anchoring first: the dispatcher's rate while the anchoring pipeline is behind (AnchoringLag). Deliveries
 * are limited by their rate, not their concurrency: a fast receiver answers in a millisecond, so a few
 * attempts in flight can take every core. Pure state and steps; the dispatcher keeps one in a Ref.
 *
 * - No lag: no limit. A limit that exists grows by a quarter (plus MIN_RATE) per step until it is so far
 *   above what the dispatcher sends that it no longer holds anything back, then goes.
 * - Lag: the limit becomes 70% of the lower of the current limit and the rate actually sent over the last
 *   step, never below MIN_RATE: deliveries keep flowing, slower, and catch up when anchoring has.
 *
 * The limit is a token bucket holding at most a quarter second of its rate (at least one claim batch's
 * worth of MIN_RATE), so a step's claims stay small.
 */

/** Events per second the dispatcher always may send, however far behind anchoring is. */
export const MIN_RATE = 50
/** How often the limit moves. */
export const STEP_MS = 250
/** A limit this many times what was sent over the last step holds nothing back: it is dropped. */
const RELEASE_FACTOR = 4
const DECREASE = 0.7
const INCREASE = 1.25

export interface Governor {
  /** Events per second; undefined: no limit. */
  readonly rate: number | undefined
  /** Tokens in the bucket (events that may start now). */
  readonly tokens: number
  /** When the bucket was last filled (epoch ms). */
  readonly filledAt: number
  /** When the limit last moved, and the events started since. */
  readonly stepAt: number
  readonly startedSinceStep: number
}

export const initial = (now: number): Governor => ({ rate: undefined, tokens: 0, filledAt: now, stepAt: now, startedSinceStep: 0 })

const capacity = (rate: number) => Math.max(rate * STEP_MS / 1000, MIN_RATE * STEP_MS / 1000)

/** Moves the limit when a step has passed (`behind`: the anchoring lag is above zero), and fills the bucket. */
export const step = (g: Governor, now: number, behind: boolean): Governor => {
  let next = g
  const elapsed = now - g.stepAt
  if (elapsed >= STEP_MS) {
    const sent = g.startedSinceStep * 1000 / elapsed
    let rate = g.rate
    if (behind) rate = Math.max(MIN_RATE, DECREASE * Math.min(rate ?? Number.POSITIVE_INFINITY, Math.max(sent, MIN_RATE)))
    else if (rate !== undefined) rate = rate >= RELEASE_FACTOR * Math.max(sent, MIN_RATE) ? undefined : rate * INCREASE + MIN_RATE
    next = { ...g, rate, stepAt: now, startedSinceStep: 0, ...(g.rate === undefined && rate !== undefined ? { tokens: 0, filledAt: now } : {}) }
  }
  if (next.rate === undefined) return { ...next, filledAt: now }
  const tokens = Math.min(capacity(next.rate), next.tokens + (now - next.filledAt) * next.rate / 1000)
  return { ...next, tokens, filledAt: now }
}

/** How many events may start now (Infinity without a limit). */
export const allowance = (g: Governor): number => g.rate === undefined ? Number.POSITIVE_INFINITY : Math.floor(g.tokens)

/** Milliseconds until one more event may start (0 when one may now). */
export const waitMillis = (g: Governor): number => g.rate === undefined || g.tokens >= 1 ? 0 : Math.min(STEP_MS, Math.ceil((1 - g.tokens) * 1000 / g.rate))

/** `n` events started. */
export const started = (g: Governor, n: number): Governor => ({
  ...g,
  tokens: g.rate === undefined ? g.tokens : Math.max(0, g.tokens - n),
  startedSinceStep: g.startedSinceStep + n
})
