/**
 * Where the output of a test file goes: `.test-logs/<test file path, slashes as dashes>.log`,
 * e.g. test/auth/limits.test.ts -> .test-logs/test-auth-limits.test.ts.log. Shared by the worker
 * side (test/support/setupLogs.ts writes it) and the main process (the reporter prints its tail).
 */
import * as Fs from "node:fs"
import * as Path from "node:path"

export const ROOT_DIR = Path.resolve(import.meta.dirname, "../..")
export const LOG_DIR = Path.join(ROOT_DIR, ".test-logs")

/** The log file of a test file, given its absolute path or its path relative to the project root. */
export const logFileFor = (testFile: string): string => {
  const relative = Path.relative(ROOT_DIR, Path.resolve(ROOT_DIR, testFile))
  return Path.join(LOG_DIR, `${relative.split(Path.sep).join("-").replace(/^\.+-?/, "")}.log`)
}

/** Empties the log directory (once at the start of a run). */
export const resetLogDir = (): void => {
  Fs.rmSync(LOG_DIR, { recursive: true, force: true })
  Fs.mkdirSync(LOG_DIR, { recursive: true })
}

/** Appends text to a log file, synchronously: nothing is lost if the worker exits right after. */
export const appendLog = (file: string, text: string): void => {
  try {
    Fs.appendFileSync(file, text)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e
    Fs.mkdirSync(Path.dirname(file), { recursive: true })
    Fs.appendFileSync(file, text)
  }
}

/** The last `n` lines of a log file and its total line count (undefined when there is no file). */
export const tailOf = (file: string, n: number): { lines: Array<string>; total: number } | undefined => {
  let text: string
  try {
    text = Fs.readFileSync(file, "utf8")
  } catch {
    return undefined
  }
  const all = text.split("\n")
  if (all.at(-1) === "") all.pop()
  return { lines: all.slice(-n), total: all.length }
}
