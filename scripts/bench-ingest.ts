/**
 * npm run bench:ingest — loopback HTTP load on POST /v1/anchor with ~1 KB records and 64
 * connections (autocannon), against the node on real PostgreSQL, and in the same run the baseline
 * (scripts/bench/baseline-server.ts), in alternating rounds (BENCH_SECONDS each in BENCH_ROUNDS rounds,
 * default 15 s in 3). Prints records/s, p50/p99 and the ratio node/baseline, checks
 * every 202 is a committed row, and appends the figures to docs/benchmarks/runs.md. A third server, the
 * baseline's work on Effect's HTTP server (scripts/bench/effect-floor-server.ts), shows what the stack
 * itself costs; two more, the baseline's work plus a durable group commit on bare node:http
 * (scripts/bench/commit-ceiling-server.ts: the node's own INSERT into `records`, and the cheapest
 * durable row), show how far any node writing to PostgreSQL on the same machine can get. None of the
 * three enters the ratio.
 *
 * DATABASE_URL selects an external PostgreSQL; otherwise an embedded one in a temporary directory.
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import autocannon from "autocannon"
import { benchDatabase } from "./bench/database.ts"
import { freePort } from "../src/dev/EmbeddedPostgres.ts"

const DURATION = Number(process.env.BENCH_SECONDS ?? 15)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const CONNECTIONS = 64
const root = Path.resolve(import.meta.dirname, "..")
const log = (line: string) => console.log(`[bench:ingest] ${line}`)

/**
 * autocannon's `idReplacement` puts a different 33-character id in place of `[<id>]` in every request,
 * so every record is a different document with its own hash, as from real clients. (Until 2026-11-23
 * every request carried the same record: every row then shared one hash, so the runs measured the
 * insertion of one duplicate index key over and over, not ingest.)
 */
const ID_PLACEHOLDER = "[<id>]"
const ID_LENGTH = 33

const record = () => {
  const data: Record<string, unknown> = { type: "invoice", ref: ID_PLACEHOLDER, issuedAt: new Date().toISOString(), lines: [] as Array<unknown> }
  for (let i = 0; i < 9; i++) (data.lines as Array<unknown>).push({ sku: `SKU-${i}-${"x".repeat(20)}`, qty: i + 1, price: 12.5 * i })
  data.note = "n".repeat(1024 - JSON.stringify({ data }).length - (ID_LENGTH - ID_PLACEHOLDER.length) - 10)
  return JSON.stringify({ data })
}

const run = (url: string, headers: Record<string, string>, body: string, seconds: number) =>
  new Promise<autocannon.Result>((resolve, reject) => {
    // idReplacement is an autocannon option its type definitions do not list.
    const options = { url, method: "POST", headers, body, connections: CONNECTIONS, duration: seconds, idReplacement: true } as autocannon.Options
    const instance = autocannon(
      options,
      (err, result) => err ? reject(err) : resolve(result)
    )
    void instance
  })

const spawnNode = (args: Array<string>, env: Record<string, string>) =>
  ChildProcess.spawn(process.execPath, [Path.join(root, "src/cli/main.ts"), ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "pipe"]
  })

/** CPU time (user + system) a process has used, in ms (Linux /proc). */
const cpuMs = (pid: number | undefined): number => {
  try {
    const fields = Fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return NaN
  }
}

const runCli = (args: Array<string>, env: Record<string, string>) => {
  const out = ChildProcess.execFileSync(process.execPath, [Path.join(root, "src/cli/main.ts"), ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    encoding: "utf8"
  })
  return JSON.parse(out)
}

const waitFor = async (url: string, ms = 30_000) => {
  const until = Date.now() + ms
  while (Date.now() < until) {
    try {
      const r = await fetch(url)
      if (r.status < 500) return
    } catch {}
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`timed out waiting for ${url}`)
}

const main = async () => {
  const tmp = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-bench-"))
  const db = await benchDatabase(tmp, log)
  const databaseUrl = db.url
  // No chain runs here (ingest only): the records name a network another node would serve, else they are
  // refused with CHAIN_NOT_CONFIGURED.
  const env = { DATABASE_URL: databaseUrl, ANCHORD_DATA_DIR: tmp, EVM_TEST_NETWORK_ID: process.env.EVM_TEST_NETWORK_ID ?? "bench-evm" }
  log("creating an ENTERPRISE account with no per-second limit in the way")
  const account = runCli(["accounts", "create", "bench", "--plan", "ENTERPRISE", "--rate-per-second", "10000000", "--activate", "--json"], env)
  const key = runCli(["keys", "create", account.id, "--json"], env).key as string
  // The commit ceiling writing into `records` counts its rows against an account of its own, so that the
  // node's usage counter (the check that every 202 was committed) counts the node's rows only.
  const ceilingAccount = runCli(["accounts", "create", "bench-ceiling", "--plan", "ENTERPRISE", "--activate", "--json"], env)

  const nodePort = await freePort()
  const baselinePort = await freePort()
  const floorPort = await freePort()
  const node = spawnNode(["start"], { ...env, PORT: String(nodePort), LOG_LEVEL: "Warn" })
  node.stderr.on("data", (d) => process.stderr.write(d))
  const baseline = ChildProcess.fork(Path.join(root, "scripts/bench/baseline-server.ts"), [String(baselinePort)], { stdio: "inherit" })
  await waitFor(`http://127.0.0.1:${nodePort}/v1/health`)
  const floor = ChildProcess.fork(Path.join(root, "scripts/bench/effect-floor-server.ts"), [String(floorPort)], { stdio: "inherit" })
  await waitFor(`http://127.0.0.1:${baselinePort}/`)
  await waitFor(`http://127.0.0.1:${floorPort}/`)

  const body = record()
  const headers = { "content-type": "application/json", authorization: `Bearer ${key}` }
  // The commit ceilings write rows as the node would for this account: its network id from a 202.
  const first = await (await fetch(`http://127.0.0.1:${nodePort}/v1/anchor`, { method: "POST", headers, body })).json() as { data: { networkId: string } }
  const ceilingPorts = { records: await freePort(), minimal: await freePort() }
  const ceilings = (["records", "minimal"] as const).map((mode) =>
    ChildProcess.fork(Path.join(root, "scripts/bench/commit-ceiling-server.ts"), [String(ceilingPorts[mode]), mode], {
      stdio: "inherit",
      env: { ...process.env, DATABASE_URL: databaseUrl, ACCOUNT_ID: ceilingAccount.id, NETWORK_ID: first.data.networkId }
    })
  )
  await waitFor(`http://127.0.0.1:${ceilingPorts.records}/`)
  await waitFor(`http://127.0.0.1:${ceilingPorts.minimal}/`)

  log(
    `record body: ${
      Buffer.byteLength(body) + ID_LENGTH - ID_PLACEHOLDER.length
    } bytes, a different record in every request, ${CONNECTIONS} connections, ${DURATION} s per run`
  )
  /** One server under load: where it listens, its process, and its rounds' results and CPU time (ms). */
  const server = (url: string, pid: number | undefined) => ({ url, pid, results: [] as Array<autocannon.Result>, cpu: 0 })
  const baseSide = server(`http://127.0.0.1:${baselinePort}/`, baseline.pid)
  const nodeSide = server(`http://127.0.0.1:${nodePort}/v1/anchor`, node.pid)
  const floorSide = server(`http://127.0.0.1:${floorPort}/`, floor.pid)
  const recordsCeiling = server(`http://127.0.0.1:${ceilingPorts.records}/`, ceilings[0]!.pid)
  const minimalCeiling = server(`http://127.0.0.1:${ceilingPorts.minimal}/`, ceilings[1]!.pid)
  const sides = [baseSide, nodeSide, floorSide, recordsCeiling, minimalCeiling]
  log("warm-up (3 s each)")
  for (const side of sides) await run(side.url, headers, body, 3)
  // The servers are measured in alternating rounds (baseline, node, the references, baseline, ...) so
  // that a change in the machine's speed during the run (seen here: ±30% within minutes) weighs on all alike.
  const per = DURATION / ROUNDS
  const usageBefore = await (await fetch(`http://127.0.0.1:${nodePort}/v1/usage`, { headers })).json() as { data: { used: number } }
  for (let i = 1; i <= ROUNDS; i++) {
    for (const side of sides) {
      const cpu0 = cpuMs(side.pid)
      side.results.push(await run(side.url, headers, body, per))
      side.cpu += cpuMs(side.pid) - cpu0
    }
    const [b, n, f, cr, cm] = sides.map((side) => side.results[i - 1]!["2xx"] / per) as [number, number, number, number, number]
    log(
      `round ${i}/${ROUNDS}: baseline ${b.toFixed(0)}/s, node ${n.toFixed(0)}/s, ratio ${(n / b).toFixed(2)}; Effect HTTP floor ${f.toFixed(0)}/s (${
        (f / b).toFixed(2)
      }); ` +
        `commit ceilings: records ${cr.toFixed(0)}/s (${(cr / b).toFixed(2)}), minimal ${cm.toFixed(0)}/s (${(cm / b).toFixed(2)})`
    )
  }
  const usageAfter = await (await fetch(`http://127.0.0.1:${nodePort}/v1/usage`, { headers })).json() as { data: { used: number } }
  const committed = usageAfter.data.used - usageBefore.data.used
  const sum = (rs: Array<autocannon.Result>, f: (r: autocannon.Result) => number) => rs.reduce((a, r) => a + f(r), 0)
  const base = baseSide.results
  const ours = nodeSide.results
  const accepted = sum(ours, (r) => r["2xx"])

  // Wait for the node to finish its shutdown before its database goes away (and before a next run
  // starts: a node still shutting down would compete for the CPU).
  const exited = new Promise<number | null>((r) => node.once("exit", (code) => r(code)))
  node.kill("SIGTERM")
  baseline.kill("SIGTERM")
  floor.kill("SIGTERM")
  const ceilingsExited = ceilings.map((c) => new Promise<void>((r) => c.once("exit", () => r())))
  for (const c of ceilings) c.kill("SIGTERM")
  await Promise.race([Promise.all(ceilingsExited), new Promise((r) => setTimeout(r, 10_000))])
  const code = await Promise.race([exited, new Promise<"timeout">((r) => setTimeout(() => r("timeout"), 40_000))])
  if (code === "timeout") log("the node had not exited 40 s after SIGTERM")
  await db.stop()
  Fs.rmSync(tmp, { recursive: true, force: true })

  /** Over all rounds: records/s, the median round's p50, the worst round's p99, non-2xx, CPU µs per request. */
  const summary = ({ results: rs, cpu }: { results: Array<autocannon.Result>; cpu: number }) => {
    const p50s = rs.map((r) => r.latency.p50).sort((a, b) => a - b)
    return {
      rps: sum(rs, (r) => r["2xx"]) / DURATION,
      p50: p50s[Math.floor(p50s.length / 2)]!,
      p99: Math.max(...rs.map((r) => r.latency.p99)),
      non2xx: sum(rs, (r) => r.non2xx),
      cpu: ((cpu * 1000) / Math.max(1, sum(rs, (r) => r["2xx"] + r.non2xx))).toFixed(0)
    }
  }
  const o = summary(nodeSide)
  const b = summary(baseSide)
  const f = summary(floorSide)
  const cr = summary(recordsCeiling)
  const cm = summary(minimalCeiling)
  const ratio = o.rps / b.rps
  /** A server's figures after its label: records/s, p50, p99, non-2xx, CPU µs per request. */
  const figures = (label: string, x: ReturnType<typeof summary>) => [label, x.rps.toFixed(0), String(x.p50), String(x.p99), String(x.non2xx), x.cpu]
  const rows = [
    ["", "records/s", "p50 ms", "p99 ms", "non-2xx", "CPU µs/req"],
    figures("anchord POST /v1/anchor (committed)", o),
    figures("baseline node:http JSON+JCS+SHA-256", b),
    figures("(Effect HTTP server, baseline's work)", f),
    figures("(node:http + records group commit)", cr),
    figures("(node:http + minimal group commit)", cm)
  ]
  console.log()
  for (const r of rows) console.log(r.map((c, i) => i === 0 ? c.padEnd(40) : c.padStart(12)).join(""))
  console.log(`\nratio node/baseline: ${ratio.toFixed(2)}   202s: ${accepted}   rows committed (usage counter): ${committed}`)
  console.log(`the Effect HTTP server doing only the baseline's work: ${(f.rps / b.rps).toFixed(2)} of the baseline`)
  console.log(
    `commit ceilings (bare node:http, baseline's work + durable group commit): the node's INSERT into records ${
      (cr.rps / b.rps).toFixed(2)
    }, the minimal durable row ${(cm.rps / b.rps).toFixed(2)} of the baseline`
  )
  const targets = `targets: ≥ 5,000 records/s ${o.rps >= 5000 ? "✔" : "✘"}, p99 ≤ 50 ms ${o.p99 <= 50 ? "✔" : "✘"}, ratio ≥ 0.5 ${ratio >= 0.5 ? "✔" : "✘"}`
  console.log(targets)
  // Requests in flight when the load stopped may commit without being counted as 202: committed ≥ accepted.
  if (committed < accepted) console.log(`LOST RECORDS: ${accepted} accepted but only ${committed} committed`)

  const file = Path.join(root, "docs/benchmarks/runs.md")
  const machine = `${Os.cpus()[0]?.model ?? "cpu"} × ${Os.cpus().length}, ${(Os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`
  const mdRow = (label: string, x: ReturnType<typeof summary>) => `| ${figures(label, x).join(" | ")} |`
  const entry = [
    "",
    `### bench:ingest — ${new Date().toISOString()}`,
    "",
    `Machine: ${machine}. PostgreSQL: ${process.env.DATABASE_URL ? "external (DATABASE_URL)" : "embedded"}. ${CONNECTIONS} connections, ${
      Buffer.byteLength(body) + ID_LENGTH - ID_PLACEHOLDER.length
    }-byte records (a different one in every request), ${DURATION} s each in ${ROUNDS} alternating rounds (p50: median round, p99: worst round).`,
    "",
    "| | records/s | p50 ms | p99 ms | non-2xx | server CPU µs/request |",
    "|---|---:|---:|---:|---:|---:|",
    mdRow("anchord `POST /v1/anchor` (durably committed)", o),
    mdRow("baseline: bare node:http, JSON.parse + JCS + SHA-256", b),
    mdRow("reference: the baseline's work on Effect's HTTP server (scripts/bench/effect-floor-server.ts)", f),
    mdRow("ceiling: bare node:http, baseline's work + the node's group-commit INSERT into `records` (scripts/bench/commit-ceiling-server.ts)", cr),
    mdRow("ceiling: bare node:http, baseline's work + group commit of (id, hash, text) into a primary-key-only table", cm),
    "",
    `Rounds (baseline → node records/s): ${base.map((r, i) => `${(r["2xx"] / per).toFixed(0)} → ${(ours[i]!["2xx"] / per).toFixed(0)}`).join("; ")}.`,
    "",
    `Ratio node/baseline: **${ratio.toFixed(2)}** (Effect HTTP server with the baseline's work: ${(f.rps / b.rps).toFixed(2)}; commit ceilings: records ${
      (cr.rps / b.rps).toFixed(2)
    }, minimal row ${(cm.rps / b.rps).toFixed(2)}). Accepted ${accepted}, committed ${committed}. ${targets}.`,
    ""
  ].join("\n")
  if (!Fs.existsSync(file)) Fs.writeFileSync(file, "# Benchmarks\n\nFigures appended by the `npm run bench:*` scripts.\n")
  Fs.appendFileSync(file, entry)
  log(`appended to ${Path.relative(root, file)}`)
}

main().then(() => process.exit(0)).catch((error) => {
  console.error(error)
  process.exit(1)
})
