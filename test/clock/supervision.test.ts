/**
 * The one supervisor of background loops (src/supervision.ts) on virtual time: a failing loop is retried
 * after its pause, logged when it starts failing, reminded at most once per `remindEvery` with the
 * failures since, logged once when it recovers; interruption is no failure.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Logger } from "effect"
import { TestClock } from "effect/testing"
import { supervised } from "../../src/supervision.ts"

interface Line {
  readonly text: string
  readonly fields: Record<string, unknown> | undefined
}

const capturing = (lines: Array<Line>) =>
  Logger.layer([Logger.make<unknown, void>(({ message }) => {
    const parts = Array.isArray(message) ? message : [message]
    lines.push({ text: String(parts[0]), fields: parts[1] as Record<string, unknown> | undefined })
  })])

describe("supervised (TestClock)", () => {
  it.effect("warns once when failing, reminds once a minute with the count, says when it recovers", () => {
    const lines: Array<Line> = []
    return Effect.gen(function*() {
      let down = true
      let runs = 0
      let told = 0
      let recoveries = 0
      const run = Effect.suspend(() => {
        runs++
        return down ? Effect.fail(new Error("database unavailable")) : Effect.void
      })
      const fiber = yield* supervised(run, {
        name: "loop",
        pause: "1 second",
        remindEvery: "1 minute",
        onFailure: () => Effect.sync(() => told++),
        onRecovery: Effect.sync(() => recoveries++)
      }).pipe(Effect.forkChild)
      yield* TestClock.adjust("0 millis")
      assert.strictEqual(runs, 1)
      assert.deepStrictEqual(lines, [{ text: "loop failing (will keep retrying)", fields: { error: "database unavailable", failures: 1 } }])

      // Restarted every second, quiet for the rest of the minute.
      yield* TestClock.adjust("59 seconds")
      assert.strictEqual(runs, 60)
      assert.strictEqual(told, 60)
      assert.strictEqual(lines.length, 1)

      // A minute after the first line: one reminder, with the failures since.
      yield* TestClock.adjust("1 second")
      assert.strictEqual(lines.length, 2)
      assert.deepStrictEqual(lines[1], { text: "loop failing (will keep retrying)", fields: { error: "database unavailable", failures: 60 } })

      down = false
      yield* TestClock.adjust("1 second")
      yield* TestClock.adjust("5 seconds")
      assert.strictEqual(recoveries, 1)
      assert.deepStrictEqual(lines.slice(2), [{ text: "loop recovered", fields: undefined }])

      // Failing again after recovering is news again.
      down = true
      yield* TestClock.adjust("1 second")
      assert.strictEqual(lines.length, 4)
      assert.deepStrictEqual(lines[3]!.fields, { error: "database unavailable", failures: 1 })

      yield* Fiber.interrupt(fiber)
      assert.strictEqual(lines.length, 4)
    }).pipe(Effect.provide(capturing(lines)))
  })

  it.effect("without remindEvery: one line per outage, whatever its length", () => {
    const lines: Array<Line> = []
    return Effect.gen(function*() {
      const fiber = yield* supervised(Effect.fail("down"), { name: "watcher", pause: "1 second" }).pipe(Effect.forkChild)
      yield* TestClock.adjust("10 minutes")
      assert.deepStrictEqual(lines.map((l) => l.text), ["watcher failing (will keep retrying)"])
      yield* Fiber.interrupt(fiber)
    }).pipe(Effect.provide(capturing(lines)))
  })
})
