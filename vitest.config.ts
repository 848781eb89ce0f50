import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Suites share one PostgreSQL and local chains: files run in parallel workers, tests inside
    // a file in order.
    fileParallelism: true,
    maxWorkers: 2,
    globalSetup: ["test/support/globalSetup.ts"]
  }
})
