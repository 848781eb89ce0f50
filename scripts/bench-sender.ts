/**
 * node scripts/bench-sender.ts — the node's HTTP client path for one delivery (sender.ts: the attempt's
 * headers and Standard Webhooks signature, the egress policy, `attempt` on the keep-alive pools) against a
 * bare keep-alive `node:http` POST loop of the same bodies and headers to the same receiver, in the same run,
 * rounds alternating. No database: only the send is measured (issue 26, part 4).
 *
 * The receiver runs in a child process (answers 200 at once, keep-alive), so the figures are the client's.
 * Prints deliveries/s and client CPU µs per request of each, and the ratio path ÷ bare (1.0: the path costs
 * nothing over a bare POST). Absolute figures depend on the machine and its load; the ratio is the figure.
 *
 * BENCH_SENDER_BEFORE=<another checkout>/src/webhooks/sender.ts adds that commit's `attempt` as a third column,
 * alternating with the others in each round (before/after in one run). Its headers are made as here.
 */
import * as ChildProcess from "node:child_process"
import * as Http from "node:http"
import { attempt, attemptHeaders, destroyAgents, makeAgents } from "../src/webhooks/sender.ts"
import { parseAllowlist, systemResolve } from "../src/webhooks/urlPolicy.ts"

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 10_000)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 128) // WEBHOOK_PER_HOST's default
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)

const receiverSource = `
  const http = require("node:http")
  const server = http.createServer({ keepAliveTimeout: 60000 }, (req, res) => {
    req.on("data", () => {})
    req.on("end", () => { res.writeHead(200, { "content-length": "0" }); res.end() })
  })
  server.listen(0, "127.0.0.1", () => process.stdout.write(String(server.address().port) + "\\n"))
`

const startReceiver = () =>
  new Promise<{ port: number; child: ChildProcess.ChildProcess }>((resolve, reject) => {
    const child = ChildProcess.spawn(process.execPath, ["-e", receiverSource], { stdio: ["ignore", "pipe", "inherit"] })
    child.stdout!.once("data", (chunk: Buffer) => resolve({ port: Number(chunk.toString().trim()), child }))
    child.once("error", reject)
  })

// An anchor.confirmed-sized body (~2 KB with its proof), a different one per request (as per record).
const bodyOf = (i: number) =>
  JSON.stringify({
    id: `evt_${i.toString(16).padStart(24, "0")}`,
    type: "anchor.confirmed",
    createdAt: new Date(0).toISOString(),
    data: { recordId: `rec_${i}`, hash: "ab".repeat(32), merkleProof: Array.from({ length: 14 }, (_, k) => `0x${(k + i).toString(16).padStart(64, "0")}`) }
  })
const delivery = (i: number) => ({
  headers: { event: "anchor.confirmed", eventId: `evt_${i}`, hash: "ab".repeat(32), packageMode: "hash", chain: "evm", network: "anvil" },
  attempts: 0,
  body: bodyOf(i),
  signature: "sha256=" + "cd".repeat(32),
  signatureNext: null,
  secret: "whsec_" + Buffer.alloc(32, 7).toString("base64"),
  secretPrevious: null
})

/** Runs `one(i)` for i in [0, n) with `concurrency` in flight; resolves when all are done. */
const pool = async (n: number, concurrency: number, one: (i: number) => Promise<unknown>) => {
  let next = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < n) await one(next++)
  }))
}

const measure = async (label: string, one: (i: number) => Promise<unknown>) => {
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  await pool(REQUESTS, CONCURRENCY, one)
  const ms = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  return { label, perSecond: REQUESTS / (ms / 1000), cpuMicros: (cpu.user + cpu.system) / REQUESTS }
}

const main = async () => {
  const { port, child } = await startReceiver()
  const url = `http://127.0.0.1:${port}/hook`
  const allowlist = parseAllowlist("loopback")
  if (!allowlist.ok) throw new Error(allowlist.message)
  const egress = { allowlist: allowlist.allowlist, resolve: systemResolve }
  const agents = makeAgents()
  const bareAgent = new Http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 256, scheduling: "lifo" })
  const userAgent = "anchord/bench"
  const seconds = () => Math.floor(Date.now() / 1000)

  // The same bytes both ways: the bare loop sends the headers the path made (made beforehand, not timed).
  const bare = (i: number) => {
    const d = delivery(i)
    const headers = { ...attemptHeaders(d, seconds(), userAgent), "Content-Length": String(Buffer.byteLength(d.body)) }
    return () =>
      new Promise<void>((done, fail) => {
        const req = Http.request({ method: "POST", host: "127.0.0.1", port, path: "/hook", agent: bareAgent, headers }, (res) => {
          res.on("data", () => {})
          res.on("end", () => res.statusCode === 200 ? done() : fail(new Error(`HTTP ${res.statusCode}`)))
        })
        req.on("error", fail)
        req.end(d.body)
      })
  }
  const path = (i: number) => {
    const d = delivery(i)
    return async () => {
      const outcome = await attempt(
        { url, environment: "test", body: d.body, headers: attemptHeaders(d, seconds(), userAgent), timeoutMillis: 10_000 },
        agents,
        egress
      )
      if (!outcome.ok) throw new Error(outcome.error ?? "failed")
    }
  }
  // Requests prepared outside the timed loop where only the bare POST is timed; the path makes its headers
  // and signature inside (that is part of what it costs per delivery).
  const bareRequests = Array.from({ length: REQUESTS }, (_, i) => bare(i))
  const pathRequests = Array.from({ length: REQUESTS }, (_, i) => path(i))
  const other = process.env.BENCH_SENDER_BEFORE
  const before: typeof attempt | undefined = other === undefined ? undefined : (await import(other)).attempt
  const otherAgents = other === undefined ? undefined : makeAgents()
  const beforeRequests = before === undefined ? [] : Array.from({ length: REQUESTS }, (_, i) => {
    const d = delivery(i)
    return async () => {
      const outcome = await before(
        { url, environment: "test", body: d.body, headers: attemptHeaders(d, seconds(), userAgent), timeoutMillis: 10_000 },
        otherAgents!,
        egress
      )
      if (!outcome.ok) throw new Error(outcome.error ?? "failed")
    }
  })
  // Warm-up: sockets open in both pools, JIT.
  await pool(2_000, CONCURRENCY, (i) => bareRequests[i]())
  await pool(2_000, CONCURRENCY, (i) => pathRequests[i]())
  if (before !== undefined) await pool(2_000, CONCURRENCY, (i) => beforeRequests[i]())

  const rows: Array<{ label: string; perSecond: number; cpuMicros: number }> = []
  const befores: Array<{ label: string; perSecond: number; cpuMicros: number }> = []
  for (let r = 0; r < ROUNDS; r++) {
    rows.push(await measure("bare", (i) => bareRequests[i]()))
    rows.push(await measure("path", (i) => pathRequests[i]()))
    if (before !== undefined) befores.push(await measure("before", (i) => beforeRequests[i]()))
  }
  destroyAgents(agents)
  if (otherAgents !== undefined) destroyAgents(otherAgents)
  bareAgent.destroy()
  child.kill()

  console.log(`[bench:sender] ${REQUESTS} requests per round, ${CONCURRENCY} in flight, ${ROUNDS} rounds alternating, receiver in a child process`)
  console.log("| round | bare /s | path /s | ratio path ÷ bare | bare CPU µs/req | path CPU µs/req |")
  console.log("|---:|---:|---:|---:|---:|---:|")
  const ratios: Array<number> = []
  for (let r = 0; r < ROUNDS; r++) {
    const b = rows[2 * r]
    const p = rows[2 * r + 1]
    ratios.push(p.perSecond / b.perSecond)
    console.log(
      `| ${r + 1} | ${b.perSecond.toFixed(0)} | ${p.perSecond.toFixed(0)} | ${(p.perSecond / b.perSecond).toFixed(2)} | ${b.cpuMicros.toFixed(0)} | ${
        p.cpuMicros.toFixed(0)
      } |`
    )
  }
  const sorted = [...ratios].sort((a, b) => a - b)
  console.log(`[bench:sender] median ratio path ÷ bare: ${sorted[Math.floor(sorted.length / 2)].toFixed(2)}`)
  if (befores.length > 0) {
    const b = befores.map((x, r) => x.perSecond / rows[2 * r].perSecond).sort((x, y) => x - y)
    console.log(
      `[bench:sender] before (${other}): per round /s ${befores.map((x) => x.perSecond.toFixed(0)).join(", ")}, CPU µs/req ${
        befores.map((x) => x.cpuMicros.toFixed(0)).join(", ")
      }; median ratio before ÷ bare: ${b[Math.floor(b.length / 2)].toFixed(2)}`
    )
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
