#!/usr/bin/env node
// Keeps every core busy for a bounded time (default: all cores, 60 s): the load under which the
// suite must still pass (docs/testing.md). Usage: node scripts/cpu-burner.mjs [seconds] [workers]
import { Worker } from "node:worker_threads"
import * as Os from "node:os"

const seconds = Number(process.argv[2] ?? 60)
const workers = Number(process.argv[3] ?? Os.availableParallelism())
if (!(seconds > 0 && seconds <= 24 * 3600) || !(workers >= 1 && workers <= 256)) {
  console.error("usage: cpu-burner.mjs [seconds 1..86400] [workers 1..256]")
  process.exit(2)
}
const until = Date.now() + seconds * 1000
const code = `const until = ${until}; let x = 0; while (Date.now() < until) { for (let i = 0; i < 1e6; i++) x = (x * 31 + i) | 0 }`
console.error(`cpu-burner: ${workers} busy threads for ${seconds} s`)
for (let i = 0; i < workers; i++) new Worker(code, { eval: true })
