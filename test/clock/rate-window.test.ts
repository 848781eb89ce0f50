/**
 * The per-second rate window (SPEC 7) on virtual time: the in-memory limiter reads the Clock, so the
 * window edges are exact here, whatever the machine's load.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { RateLimits } from "../../src/auth/RateLimits.ts"

const T0 = 1_700_000_000_000 // a window edge (whole second)

describe("rate windows (TestClock)", () => {
  it.effect("10 per second: the 11th in the same second is refused until the next second starts", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0 + 500)
      const limits = yield* RateLimits
      const first = yield* Effect.forEach(Array.from({ length: 10 }), () => limits.hit("key-a", 10))
      assert.deepStrictEqual(first.map((s) => s.allowed), Array(10).fill(true))
      assert.deepStrictEqual(first.map((s) => s.remaining), [9, 8, 7, 6, 5, 4, 3, 2, 1, 0])
      assert.isTrue(first.every((s) => s.reset === T0 / 1000 + 1))

      const refused = yield* limits.hit("key-a", 10)
      assert.deepStrictEqual(refused, { allowed: false, limit: 10, remaining: 0, reset: T0 / 1000 + 1, retryAfter: 1 })
      // another key has its own window
      assert.isTrue((yield* limits.hit("key-b", 10)).allowed)

      yield* TestClock.adjust("499 millis") // last millisecond of the window
      assert.isFalse((yield* limits.hit("key-a", 10)).allowed)
      yield* TestClock.adjust("1 millis") // the next second
      const next = yield* limits.hit("key-a", 10)
      assert.deepStrictEqual(next, { allowed: true, limit: 10, remaining: 9, reset: T0 / 1000 + 2, retryAfter: 0 })
    }).pipe(Effect.provide(RateLimits.layerMemory)))

  it.effect("refused hits do not count: a full window stays full, and a limit of 3 admits 3", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const limits = yield* RateLimits
      const states = yield* Effect.forEach(Array.from({ length: 6 }), () => limits.hit("k", 3))
      assert.deepStrictEqual(states.map((s) => s.allowed), [true, true, true, false, false, false])
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual((yield* Effect.forEach(Array.from({ length: 4 }), () => limits.hit("k", 3))).map((s) => s.allowed), [true, true, true, false])
    }).pipe(Effect.provide(RateLimits.layerMemory)))
})
