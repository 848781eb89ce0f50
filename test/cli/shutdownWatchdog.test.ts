/** The shutdown bound: after a signal, a shutdown that does not finish ends the process anyway. */
import { EventEmitter } from "node:events"
import { describe, expect, it } from "vitest"
import { armShutdownWatchdog } from "../../src/cli/shutdownWatchdog.ts"
import { sleep } from "../support/wait.ts"

describe("shutdown watchdog", () => {
  it("exits with code 1 and one ERROR line when shutdown outlasts the bound, once, whatever the signals", async () => {
    const signals = new EventEmitter()
    const exits: Array<number> = []
    const lines: Array<string> = []
    armShutdownWatchdog(60, signals, (code) => exits.push(code), (line) => lines.push(line))
    // Kept sleep: without a signal the watchdog sets no timer, so there is no event to wait for (twice
    // the bound). A loaded machine can only make this check weaker, never fail it wrongly.
    await sleep(120)
    expect(exits).toEqual([]) // no signal, no exit
    signals.emit("SIGTERM")
    signals.emit("SIGINT")
    // These sleeps are orderings, not hopes: timers run in the order they expire, from the same clock,
    // with promise continuations in between; a 30 ms timer set after the watchdog's 60 ms one runs before
    // it, a 130 ms one after it (and after any second timer the second signal could have set), however
    // late the machine runs them.
    await sleep(30)
    expect(exits).toEqual([])
    await sleep(100)
    expect(exits).toEqual([1])
    expect(lines).toHaveLength(1)
    const line = JSON.parse(lines[0]!)
    expect(line).toMatchObject({ level: "ERROR", message: expect.stringContaining("within 60 ms of SIGTERM") })
    // What keeps the process alive, by kind: here at least the test's own sleep timer.
    expect(line.pending.Timeout).toBeGreaterThanOrEqual(1)
    for (const count of Object.values(line.pending)) expect(count).toEqual(expect.any(Number))
  })
})
