/** The dispatcher's rate limit while anchoring lags (src/webhooks/governor.ts): pure steps. */
import { describe, expect, it } from "vitest"
import { allowance, initial, MIN_RATE, started, step, STEP_MS, waitMillis } from "../../src/webhooks/governor.ts"

describe("delivery governor", () => {
  it("has no limit until anchoring lags", () => {
    let g = initial(0)
    for (let t = STEP_MS; t <= 10 * STEP_MS; t += STEP_MS) g = started(step(g, t, false), 10_000)
    expect(g.rate).toBeUndefined()
    expect(allowance(g)).toBe(Number.POSITIVE_INFINITY)
    expect(waitMillis(g)).toBe(0)
  })

  it("limits to 70% of what was sent when anchoring lags, then halves on toward MIN_RATE, never below", () => {
    let g = started(initial(0), 1_000) // 4,000/s over the first step
    g = step(g, STEP_MS, true)
    expect(g.rate).toBeCloseTo(2_800, 0)
    expect(allowance(g)).toBe(0) // the bucket starts empty
    expect(waitMillis(g)).toBeGreaterThan(0)
    for (let t = 2 * STEP_MS; t <= 40 * STEP_MS; t += STEP_MS) g = started(step(g, t, true), allowance(step(g, t, true)))
    expect(g.rate).toBe(MIN_RATE)
    // the bucket holds at most a quarter second of the rate
    const full = step(g, 1_000_000, true)
    expect(allowance(full)).toBeLessThanOrEqual(Math.ceil(MIN_RATE * STEP_MS / 1000))
    expect(allowance(full)).toBeGreaterThanOrEqual(1)
  })

  it("grows back once anchoring caught up, and drops the limit when it no longer holds anything back", () => {
    let g = step(started(initial(0), 1_000), STEP_MS, true)
    let t = STEP_MS
    const rates: Array<number | undefined> = []
    while (g.rate !== undefined && t < 100 * STEP_MS) {
      t += STEP_MS
      g = step(g, t, false)
      rates.push(g.rate)
      g = started(g, allowance(g) === Number.POSITIVE_INFINITY ? 0 : allowance(g))
    }
    expect(g.rate).toBeUndefined()
    const defined = rates.filter((r): r is number => r !== undefined)
    expect(defined.every((r, i) => i === 0 || r > defined[i - 1]!)).toBe(true)
  })
})
