/**
 * Setup file (vitest.config.ts `setupFiles`), run in the worker before each test file: everything
 * written to `console` in this worker — logs of the nodes and servers the test starts (Effect's
 * default logger writes to the console), the tests' own console.log, and the lines of child
 * processes forwarded by test/support/process.ts — goes to the test file's log
 * (test/support/logs.ts), not to vitest's output. A failing file's reporter block shows the tail.
 *
 * The console is replaced here, in the worker, rather than filtered in the main process (vitest's
 * onConsoleLog): a log written by a background fiber between tests reaches the main process
 * without a test id, so there it cannot be told which of the files running in parallel wrote it.
 */
import { Console } from "node:console"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Writable } from "node:stream"
import { stripVTControlCharacters } from "node:util"
import { expect } from "vitest"
import { appendLog, LOG_DIR, logFileFor, ROOT_DIR } from "./logs.ts"

const INSTALLED = Symbol.for("anchord.test.console")

/** The test file this worker is running now (vitest sets it before the setup files run). */
const currentTestFile = (): string | undefined =>
  (globalThis as { __vitest_worker__?: { filepath?: string } }).__vitest_worker__?.filepath ?? expect.getState().testPath

const current = currentTestFile()
if (current !== undefined) {
  // Each run of a file starts its log afresh (watch mode reruns too).
  Fs.mkdirSync(LOG_DIR, { recursive: true })
  Fs.writeFileSync(logFileFor(current), `=== ${Path.relative(ROOT_DIR, current)}, ${new Date().toISOString()}, worker pid ${process.pid}\n`)
}

const g = globalThis as typeof globalThis & { [INSTALLED]?: Console }
if (g[INSTALLED] === undefined) {
  // One console per worker, looking up the file at each write: a library that kept a reference to
  // `console` while an earlier file ran in this worker still writes to the current file's log.
  const sink = (stream: "stdout" | "stderr") =>
    new Writable({
      decodeStrings: false,
      write(chunk: string | Buffer, _encoding, callback) {
        const file = currentTestFile()
        const text = stripVTControlCharacters(String(chunk))
        if (file !== undefined) appendLog(logFileFor(file), text)
        else process[stream].write(text)
        callback()
      }
    })
  g[INSTALLED] = new Console({ stdout: sink("stdout"), stderr: sink("stderr"), colorMode: false })
}
globalThis.console = g[INSTALLED]
