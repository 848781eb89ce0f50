/**
 * The suite's reporter (vitest.config.ts `reporters`): vitest's default reporter, made short.
 * - One line per test file (its counts and duration), plus the skipped tests by full name (a skip
 *   says why in its name, e.g. "skipped: no Redis at 127.0.0.1:6379"), plus every failed test.
 *   A run of a single file on a terminal still shows its whole test tree, as vitest does.
 * - Failures are shown in full by vitest (assertion, diff, stack); after the summary, each failed
 *   file also gets the path of its log (test/support/logs.ts) and the last lines of it.
 */
import * as Path from "node:path"
import type { SerializedError } from "vitest"
import { DefaultReporter, type TestCase, type TestModule, type TestModuleState, type TestRunEndReason } from "vitest/node"
import { logFileFor, ROOT_DIR, tailOf } from "./logs.ts"

const TAIL_LINES = 40
const MAX_LINE = 400

export default class QuietReporter extends DefaultReporter {
  protected override printTestCase(moduleState: TestModuleState, test: TestCase): void {
    const result = test.result()
    if (this.renderSucceed || result.state === "failed") return super.printTestCase(moduleState, test)
    if (result.state === "skipped" && test.options.mode !== "todo") {
      const note = result.note ? ` (${result.note})` : ""
      this.log(`   ${this.getStateSymbol(test)} ${test.fullName}${note}`)
    }
  }

  override onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<SerializedError>,
    reason: TestRunEndReason
  ): void {
    super.onTestRunEnd(testModules, unhandledErrors, reason)
    const failed = testModules.filter((m) => m.state() === "failed")
    for (const testModule of failed) {
      const file = logFileFor(testModule.moduleId)
      const shown = Path.relative(ROOT_DIR, file)
      const tail = tailOf(file, TAIL_LINES)
      if (tail === undefined) {
        this.error(` Log of ${testModule.relativeModuleId}: ${shown} (not written)\n`)
        continue
      }
      const range = tail.total > tail.lines.length ? `last ${tail.lines.length} of ${tail.total} lines` : `all ${tail.total} lines`
      this.error(` Log of ${testModule.relativeModuleId}: ${shown} (${range})`)
      for (const line of tail.lines) {
        this.error(`   | ${line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)} …` : line}`)
      }
      this.error("")
    }
    if (failed.length > 0) this.error(` Logs of every test file of this run: ${Path.relative(ROOT_DIR, Path.dirname(logFileFor("x")))}/\n`)
  }
}
