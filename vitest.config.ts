import { defineConfig } from "vitest/config"
import { appendLog, logFileFor, LOG_DIR } from "./test/support/logs.ts"

/** What both projects share. */
const shared = {
  testTimeout: 60_000,
  hookTimeout: 120_000,
  // The tests' webhook receivers listen on loopback, which the egress policy opens only when told
  // (docs/webhooks.md); test/webhooks/ssrf.test.ts runs its node with nothing opened.
  env: { WEBHOOK_ALLOW_PRIVATE: "loopback" },
  // Output of nodes, servers, child processes and tests goes to .test-logs/<file>.log (see
  // docs/testing.md); the reporter prints one line per file and, for a failed file, its log's tail.
  setupFiles: ["test/support/setupLogs.ts"]
}

/** The handler tests over in-memory stores (test/handlers/, docs/testing.md): no database, so no global setup. */
const HANDLERS = "test/handlers/**/*.test.ts"

export default defineConfig({
  test: {
    // Suites share one PostgreSQL and local chains: files run in parallel workers, tests inside
    // a file in order.
    fileParallelism: true,
    maxWorkers: 2,
    projects: [
      {
        test: {
          ...shared,
          name: "suite",
          include: ["test/**/*.test.ts"],
          exclude: ["**/node_modules/**", "**/.git/**", HANDLERS],
          // The embedded PostgreSQL (or TEST_DATABASE_URL): started only when a file of this project runs.
          globalSetup: ["test/support/globalSetup.ts"]
        }
      },
      { test: { ...shared, name: "handlers", include: [HANDLERS] } }
    ],
    reporters: ["./test/support/reporter.ts"],
    // setupLogs.ts routes the workers' console to the log files; anything that still reaches
    // vitest's console capture goes to the same file (or to one for logs no test can be named for).
    onConsoleLog: (log, _type, entity) => {
      appendLog(entity ? logFileFor(entity.type === "module" ? entity.moduleId : entity.module.moduleId) : `${LOG_DIR}/unattributed.log`,
        log.endsWith("\n") ? log : `${log}\n`)
      return false
    },
    // No performance hints ("modules were evaluated … isolate: false") after the summary.
    experimental: { diagnostics: false }
  }
})
