/**
 * A real browser for tests: Chromium from npm `@sparticuz/chromium` (the browser ships compressed
 * inside the package, so nothing is downloaded) driven by `playwright-core`.
 *
 *   const browser = useBrowser()          // at the top of a test file: launched in beforeAll, closed in afterAll
 *   const page = await browser().newPage({ width: 360, height: 740 })
 *
 * - Every wait is bounded: launch, navigation and each page action/locator wait have a timeout
 *   (WAIT_MS), and closing the browser is raced against one.
 * - The pages' console messages, uncaught page errors and failed requests, and the browser's own
 *   output, go to the test file's log (test/support/setupLogs.ts routes this worker's console there).
 *   Page errors and console errors are also kept in `errors()` for tests to assert on.
 * - `screenshot(page, name)` saves `.test-logs/screenshots/<test file>-<name>.png`; a failing test gets
 *   one of each open page automatically.
 */
import { execFile } from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import chromium from "@sparticuz/chromium"
import { chromium as playwright, type Browser, type Page } from "playwright-core"
import { afterAll, beforeAll, beforeEach, expect } from "vitest"
import { LOG_DIR, logFileFor, ROOT_DIR } from "./logs.ts"

/** Bound of every page action and locator wait (generous: a loaded 2-core machine). */
export const WAIT_MS = 20_000
const LAUNCH_MS = 60_000
const CLOSE_MS = 10_000
const EXTRACT_MS = 180_000

/**
 * Flags of `chromium.args` left out. Those weakening the page's security model: tests must see what
 * a visitor's browser does (CORS towards the chain's RPC, the page's Content-Security-Policy).
 * `--single-process` (for AWS Lambda's sandbox): the browser exits when a test closes its page's
 * context. `--headless=…`: playwright sets headless itself.
 */
const LEFT_OUT = new Set(["--disable-web-security", "--allow-running-insecure-content", "--single-process"])

/** Without these, Chromium contacts Google services (component updates, sync, field trials) on a closed network. */
const QUIET = [
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
  "--disable-sync",
  "--disable-default-apps",
  "--disable-breakpad",
  "--metrics-recording-only"
]

const version = (JSON.parse(Fs.readFileSync(Path.join(ROOT_DIR, "node_modules/@sparticuz/chromium/package.json"), "utf8")) as { version: string }).version
const CACHE = Path.join(ROOT_DIR, "node_modules/.cache/anchord-chromium", version)

/**
 * The Chromium binary, inflated once per project and package version into node_modules/.cache.
 * `chromium.executablePath()` inflates into os.tmpdir() and returns any `/tmp/chromium` already
 * there as is: one half-written by a parallel worker, or another project's version. So it runs in a
 * child whose TMPDIR is a private staging directory, renamed into place when complete (the first
 * worker to finish wins; the others drop their copy).
 */
const executablePath = async (): Promise<string> => {
  const exe = Path.join(CACHE, "chromium")
  if (Fs.existsSync(Path.join(CACHE, ".complete"))) return exe
  const staging = `${CACHE}.tmp-${process.pid}-${Crypto.randomBytes(4).toString("hex")}`
  Fs.mkdirSync(staging, { recursive: true })
  try {
    const printed = await new Promise<string>((resolve, reject) => {
      execFile(
        process.execPath,
        ["--input-type=module", "-e", "import c from '@sparticuz/chromium'; console.log(await c.executablePath())"],
        { cwd: ROOT_DIR, env: { ...process.env, TMPDIR: staging }, timeout: EXTRACT_MS },
        (error, stdout, stderr) => {
          if (stderr.trim() !== "") console.log(`[chromium inflate err] ${stderr.trim()}`)
          if (error) reject(new Error(`inflating @sparticuz/chromium failed: ${error.message}`))
          else resolve(stdout.trim())
        }
      )
    })
    if (printed !== Path.join(staging, "chromium")) throw new Error(`@sparticuz/chromium inflated to ${printed}, expected ${staging}/chromium`)
    Fs.writeFileSync(Path.join(staging, ".complete"), `${version}\n`)
    try {
      Fs.renameSync(staging, CACHE)
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code
      if (code !== "ENOTEMPTY" && code !== "EEXIST") throw e
    }
  } finally {
    Fs.rmSync(staging, { recursive: true, force: true })
  }
  return exe
}

export interface BrowserKit {
  readonly browser: Browser
  /** A page in a fresh context (no shared storage), its output routed to the log. */
  readonly newPage: (viewport?: { width: number; height: number }, name?: string) => Promise<Page>
  /** Uncaught page errors and console errors seen so far, oldest first. */
  readonly errors: () => ReadonlyArray<string>
  /** Forgets the errors seen so far (between tests that expect different ones). */
  readonly clearErrors: () => void
  readonly screenshot: (page: Page, name: string) => Promise<string>
  readonly close: () => Promise<void>
}

const currentTestFile = (): string => expect.getState().testPath ?? "unknown"

const screenshotPath = (name: string): string => {
  const prefix = Path.basename(logFileFor(currentTestFile())).replace(/\.log$/, "")
  return Path.join(LOG_DIR, "screenshots", `${prefix}-${name.replace(/[^A-Za-z0-9._-]+/g, "_")}.png`)
}

export const launchBrowser = async (): Promise<BrowserKit> => {
  const args = chromium.args.filter((a) => !LEFT_OUT.has(a) && !a.startsWith("--headless"))
  const browser = await playwright.launch({
    executablePath: await executablePath(),
    args: [...args, ...QUIET],
    headless: true,
    timeout: LAUNCH_MS,
    // The browser process's own output (and playwright's launch log) goes to the test file's log.
    logger: {
      isEnabled: (name, severity) => name === "browser" && severity !== "verbose",
      log: (name, severity, message) => console.log(`[chromium ${name} ${severity}] ${String(message)}`)
    }
  })
  console.log(`[chromium] launched ${browser.version()} (@sparticuz/chromium ${version})`)
  const errors: Array<string> = []
  const pages = new Set<Page>()
  let n = 0

  const newPage = async (viewport = { width: 1024, height: 768 }, name = `page${++n}`) => {
    const context = await browser.newContext({ viewport })
    context.setDefaultTimeout(WAIT_MS)
    context.setDefaultNavigationTimeout(WAIT_MS)
    const page = await context.newPage()
    pages.add(page)
    page.on("close", () => pages.delete(page))
    page.on("console", (m) => {
      const line = `[browser ${name} console.${m.type()}] ${m.text()}`
      console.log(line)
      if (m.type() === "error") errors.push(line)
    })
    page.on("pageerror", (e) => {
      const line = `[browser ${name} pageerror] ${e.stack ?? e.message}`
      console.log(line)
      errors.push(line)
    })
    page.on("requestfailed", (r) => console.log(`[browser ${name} requestfailed] ${r.method()} ${r.url()}: ${r.failure()?.errorText}`))
    return page
  }

  const screenshot = async (page: Page, name: string) => {
    const file = screenshotPath(name)
    Fs.mkdirSync(Path.dirname(file), { recursive: true })
    await page.screenshot({ path: file, fullPage: true, timeout: WAIT_MS })
    console.log(`[browser] screenshot ${Path.relative(ROOT_DIR, file)}`)
    return file
  }

  const close = async () => {
    let timer: NodeJS.Timeout | undefined
    const closed = await Promise.race([
      browser.close().then(() => true),
      new Promise<false>((r) => (timer = setTimeout(() => r(false), CLOSE_MS)))
    ]).finally(() => clearTimeout(timer))
    // playwright kills a browser it launched when this worker exits, so a hung close leaks nothing.
    console.log(closed ? "[chromium] closed" : `[chromium] did not close within ${CLOSE_MS} ms (killed when the worker exits)`)
  }

  return { browser, newPage, errors: () => errors, clearErrors: () => void errors.splice(0), screenshot, close }
}

/**
 * One browser for the test file: launched in beforeAll, closed in afterAll; a failing test gets a
 * screenshot of each open page (named after the test) before anything else closes it.
 */
export const useBrowser = (): () => BrowserKit => {
  let kit: BrowserKit | undefined
  beforeAll(async () => {
    kit = await launchBrowser()
  }, LAUNCH_MS + EXTRACT_MS)
  afterAll(async () => {
    await kit?.close()
  }, CLOSE_MS + 5_000)
  beforeEach((ctx) => {
    ctx.onTestFailed(async () => {
      if (kit === undefined) return
      // Closed contexts have no pages left; each open one is shown as the test left it.
      const open = kit.browser.contexts().flatMap((c) => c.pages())
      for (const [i, page] of open.entries()) {
        await kit.screenshot(page, `FAILED-${ctx.task.name}-${i}`).catch((e) => console.log(`[browser] failure screenshot: ${String(e)}`))
      }
    })
  })
  return () => {
    if (kit === undefined) throw new Error("the browser is not running (useBrowser's beforeAll failed: see the log)")
    return kit
  }
}
