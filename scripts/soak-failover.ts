/**
 * npm run soak:failover (issue 25, part 2) — PostgreSQL itself fails over under load.
 *
 * Per mode (synchronous, then asynchronous replication): a primary and a streaming standby from
 * PostgreSQL 15's binaries (scripts/bench/pg-pair.ts), a TCP switch in front of them standing in for the
 * endpoint an HA manager moves (scripts/bench/tcp-switch.ts: the driver takes one host), anvil with the
 * AnchorRegistry, two `anchord start` nodes on the switch, and an open-loop client posting single EVM
 * records round-robin with an Idempotency-Key each (a 503 is retried after its Retry-After, as a client
 * should). Mid-load the primary's postmaster is killed (-9); after DETECT_MS (the HA manager's
 * detection, here a fixed stand-in) the standby is promoted with `pg_ctl promote` and the switch moved.
 *
 * Then, on the new primary: every record answered 202 (before the kill and after) is there, ANCHORED;
 * each confirmed batch's root is on chain exactly once; every proof verifies against the chain; every
 * record got a validly signed anchor.confirmed. Also counted: 503s (each must carry Retry-After), any
 * other 5xx or dropped connection, answers slower than HANG_BOUND_MS, and how long after the promotion
 * each node answered 202 again and the first batch was cut. The asynchronous run reports how many
 * 202'd records the promoted standby lacks (the reason docs/operating.md requires the synchronous setup).
 *
 * Prints progress and figures, appends them to docs/benchmarks.md (SOAK_NO_APPEND=1 to skip), removes
 * every process and directory it made. Exit 1 when the synchronous run breaks a bound.
 *
 * SOAK_MODES ("sync,async"), SOAK_RATE (records/s, 40), SOAK_BEFORE_S (load before the kill, 20),
 * SOAK_AFTER_S (load after it, 40), SOAK_DETECT_MS (kill → promote, 2000), SOAK_LINK_DELAY_MS (one-way latency of the
 * standby's replication link, 0: on loopback an asynchronous standby is microseconds behind, which hides what
 * a standby in another zone loses).
 */
import * as ChildProcess from "node:child_process"
import { createHmac, timingSafeEqual } from "node:crypto"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { Effect, Redacted } from "effect"
import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "effect/sql"
import type { Hex } from "viem"
import { freePort } from "../src/dev/EmbeddedPostgres.ts"
import { deployAnchorRegistry } from "../src/evm/deploy.ts"
import { ANCHORED_TOPIC, rpcClient } from "../src/verify/evm.ts"
import { readInput } from "../src/verify/input.ts"
import { verifyInput } from "../src/verify/verify.ts"
import { startAnvil } from "./bench/anvil.ts"
import { buildPgPair, childPids, type PgPair, psqlAsync } from "./bench/pg-pair.ts"
import { startTcpSwitch } from "./bench/tcp-switch.ts"

const MODES = (process.env.SOAK_MODES ?? "sync,async").split(",").map((m) => m.trim()) as Array<"sync" | "async">
const RATE = Number(process.env.SOAK_RATE ?? 40)
const BEFORE_S = Number(process.env.SOAK_BEFORE_S ?? 20)
const AFTER_S = Number(process.env.SOAK_AFTER_S ?? 40)
const DETECT_MS = Number(process.env.SOAK_DETECT_MS ?? 2000)
/** One-way latency of the standby's replication link (0: loopback as it is; 20: a standby in another zone, roughly). */
const LINK_DELAY_MS = Number(process.env.SOAK_LINK_DELAY_MS ?? 0)
/** Records a client has outstanding at most (waiting for an answer or for their retry); past it, new ones are not sent (counted). */
const MAX_OUTSTANDING = 200
const NODES = 2
/** No answer may take longer: the request deadline (REQUEST_DEADLINE_MS, 2 s) plus slack for a loaded machine. */
const HANG_BOUND_MS = 5_000
/** The client gives up on a request after this (counted as a hang beyond the bound). */
const CLIENT_TIMEOUT_MS = 15_000
/** Each node answers 202 again within this after the promotion (the breaker's probe is every 1 s, the pool reconnects). */
const RESUME_BOUND_MS = 10_000
/** After the load: everything accepted is ANCHORED and delivered within this. */
const DRAIN_MS = 120_000
const ANVIL_KEY: Hex = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80" // anvil/hardhat dev account #0
const root = Path.resolve(import.meta.dirname, "..")
const started = Date.now()
const log = (line: string) => console.log(`[soak:failover ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}`)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
/** `anchord <args> --json`, not blocking the event loop (the switch the CLI connects through runs in it). */
const runCli = (args: Array<string>, env: Record<string, string>) =>
  new Promise<any>((resolve, reject) =>
    ChildProcess.execFile(process.execPath, [Path.join(root, "src/cli/main.ts"), ...args], { cwd: root, env: { ...process.env, ...env }, encoding: "utf8",
      timeout: 120_000 }, (error, stdout) => error ? reject(error) : resolve(JSON.parse(stdout)))
  )
const inChunks = async <A>(items: ReadonlyArray<A>, concurrency: number, f: (a: A) => Promise<void>) => {
  let next = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) await f(items[next++]!)
  }))
}

interface ModeResult {
  readonly mode: "sync" | "async"
  readonly accepted: number
  readonly acceptedBeforeKill: number
  readonly lostBeforeKill: number
  readonly lostAfterKill: number
  readonly walLagBytesAtKill: number
  readonly answered503: number
  readonly without503RetryAfter: number
  readonly other5xx: number
  readonly dropped: number
  readonly other4xx: number
  readonly notSent: number
  readonly slowerThanBound: number
  readonly maxLatencyMs: number
  readonly retriedRecords: number
  readonly gaveUp: number
  readonly promoteMs: number
  readonly resumeMs: ReadonlyArray<number>
  readonly firstBatchAfterPromotionMs: number
  readonly notAnchored: number
  readonly batches: number
  readonly duplicateRootsDb: number
  readonly duplicateRootsChain: number
  readonly confirmedNotOnChain: number
  readonly chainRootsWithoutBatch: number
  readonly proofsChecked: number
  readonly proofsFailing: number
  readonly undelivered: number
  readonly badSignatures: number
  readonly duplicateConfirmations: number
}

const runMode = async (mode: "sync" | "async"): Promise<ModeResult> => {
  const cleanups: Array<() => unknown> = []
  const logsDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-failover-nodes-"))
  cleanups.push(() => process.env.SOAK_KEEP_LOGS === "1" ? log(`node logs kept in ${logsDir}`) : Fs.rmSync(logsDir, { recursive: true, force: true }))
  let pair: PgPair | undefined
  let orphans: Array<number> = []
  try {
    pair = await buildPgPair(mode === "sync", log, LINK_DELAY_MS)
    const p = pair
    cleanups.unshift(() => {
      // What a killed postmaster's backends did not end themselves (they normally notice at once).
      for (const pid of orphans) {
        try {
          process.kill(pid, "SIGKILL")
        } catch {}
      }
      p.destroy()
    })
    const sw = await startTcpSwitch(p.primary.port)
    cleanups.unshift(() => sw.close())
    const anvil = await startAnvil()
    cleanups.unshift(() => anvil.stop())
    const d = await deployAnchorRegistry({ rpcUrl: anvil.rpcUrl, privateKey: ANVIL_KEY })
    const env: Record<string, string> = {
      DATABASE_URL: `postgres://postgres@127.0.0.1:${sw.port}/anchord`,
      ANCHORD_DATA_DIR: logsDir,
      EVM_NETWORKS: JSON.stringify([{
        networkId: "soak-anvil",
        rpcUrl: anvil.rpcUrl,
        chainId: d.chainId,
        contractAddress: d.address,
        confirmations: 1,
        environment: "test",
        batchWindowMs: 1000,
        pollIntervalMs: 250
      }]),
      EVM_PRIVATE_KEY_SOAK_ANVIL: ANVIL_KEY,
      WEBHOOK_ALLOW_PRIVATE: "loopback",
      LOG_LEVEL: "warn",
      LOG_FORMAT: "json"
    }
    const account = await runCli(["accounts", "create", "soak", "--plan", "ENTERPRISE", "--rate-per-second", "100000", "--activate", "--json"], env)
    const key = (await runCli(["keys", "create", account.id, "--json"], env)).key as string

    // The receiver: every anchor.confirmed, its signature checked against the account's test secret.
    let secret = ""
    const confirmations = new Map<string, Set<string>>()
    let badSignatures = 0
    const receiver = Http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const raw = Buffer.concat(chunks)
        const expected = Buffer.from("sha256=" + createHmac("sha256", secret).update(raw).digest("hex"))
        const given = Buffer.from(String(req.headers["x-webhook-signature"] ?? ""))
        if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
          badSignatures++
          return void res.writeHead(401).end()
        }
        // anchor.confirmed in the default form B (docs/webhooks.md): the record's id at the top.
        const body = JSON.parse(raw.toString("utf8")) as { recordId?: string }
        if (req.headers["x-service-event"] === "ANCHORED" && body.recordId !== undefined) {
          const ids = confirmations.get(body.recordId) ?? new Set()
          // A redelivery carries the same event id: two ids for one record is a duplicate.
          ids.add(String(req.headers["x-service-event-id"]))
          confirmations.set(body.recordId, ids)
        }
        res.writeHead(200).end("ok")
      })
    })
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r))
    cleanups.unshift(() => receiver.close())

    // The nodes: `anchord start` on the switch, the same configuration each.
    const bases: Array<string> = []
    for (let n = 0; n < NODES; n++) {
      const port = await freePort()
      const out = Fs.openSync(Path.join(logsDir, `node-${n}.log`), "a")
      const child = ChildProcess.spawn(process.execPath, [Path.join(root, "src/cli/main.ts"), "start"], {
        cwd: root,
        env: { ...process.env, ...env, PORT: String(port) },
        stdio: ["ignore", out, out]
      })
      cleanups.unshift(async () => {
        child.kill("SIGTERM")
        const exited = await Promise.race([new Promise((r) => child.once("exit", () => r(true))), sleep(35_000).then(() => false)])
        if (!exited && child.exitCode === null) child.kill("SIGKILL")
      })
      bases.push(`http://127.0.0.1:${port}`)
    }
    for (const base of bases) {
      for (let i = 0;; i++) {
        try {
          if ((await fetch(`${base}/v1/health`)).ok) break
        } catch {}
        if (i > 600) throw new Error(`node ${base} did not start (logs in ${logsDir})`)
        await sleep(100)
      }
    }
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" }
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`
    const put = await fetch(`${bases[0]}/v1/webhooks`, { method: "PUT", headers,
      body: JSON.stringify({ url: receiverUrl, enabled: true, events: ["anchor.confirmed"] }) })
    if (put.status !== 200) throw new Error(`PUT /v1/webhooks ${put.status}`)
    secret = ((await (await fetch(`${bases[0]}/v1/webhooks`, { headers })).json()) as any).data.secret
    log(`${mode}: ${NODES} nodes up on the switch (:${sw.port} → primary :${p.primary.port}); load ${RATE} records/s, kill after ${BEFORE_S} s`)

    // The load: open loop, round-robin, a 503 retried after its Retry-After with the same Idempotency-Key.
    const accepted = new Map<string, { at: number; node: number }>()
    const counts = { other4xx: 0, notSent: 0, answered503: 0, without503RetryAfter: 0, other5xx: 0, dropped: 0, slower: 0, maxLatency: 0, retried: 0,
      gaveUp: 0 }
    const inFlight = new Set<Promise<void>>()
    /** What the refusals said, for the log. */
    const reasons = new Map<string, number>()
    let loadEnd = 0
    const send = (i: number, attempt: number): Promise<void> => {
      const node = i % NODES
      const sent = performance.now()
      return fetch(`${bases[node]}/v1/anchor`, {
        method: "POST",
        headers: { ...headers, "idempotency-key": `soak-${mode}-${i}` },
        body: JSON.stringify({ data: { soak: mode, i } }),
        signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS)
      }).then(async (res) => {
        const body = await res.json().catch(() => undefined) as any
        return { status: res.status, retryAfter: res.headers.get("retry-after"), body }
      }, () => ({ status: 0, retryAfter: null, body: undefined })).then(async ({ status, retryAfter, body }) => {
        const answered = performance.now()
        const latency = answered - sent
        counts.maxLatency = Math.max(counts.maxLatency, latency)
        if (latency > HANG_BOUND_MS) counts.slower++
        if (status === 202) return void accepted.set(body.data.recordId, { at: answered, node })
        const reason = `${status} ${body?.error?.code ?? ""} ${String(body?.error?.message ?? "").slice(0, 80)}`
        reasons.set(reason, (reasons.get(reason) ?? 0) + 1)
        if (status === 503) {
          counts.answered503++
          if (retryAfter === null) counts.without503RetryAfter++
        } else if (status >= 500) counts.other5xx++
        else if (status === 0) counts.dropped++
        else counts.other4xx++ // e.g. 400 "not received in time" when the machine is too loaded to read a body
        if (attempt === 0) counts.retried++
        // A client retries until well after the load; one still refused then is counted.
        if (performance.now() > loadEnd + 30_000 || attempt > 20) return void counts.gaveUp++
        // Retry-After as told (no answer at all: 5 s), with jitter, so that refused clients do not come back in step.
        await sleep((Math.max(1, Number(retryAfter ?? 5)) + Math.random()) * 1000)
        return send(i, attempt + 1)
      })
    }

    const t0 = performance.now()
    loadEnd = t0 + (BEFORE_S + AFTER_S) * 1000
    let killAt = Number.POSITIVE_INFINITY
    let promotedAt = Number.POSITIVE_INFINITY
    let promoteMs = NaN
    let walLagBytesAtKill = NaN
    let promotedWall = 0
    const failover = (async () => {
      await sleep(BEFORE_S * 1000)
      // How far the standby was behind at the kill (bytes of WAL not yet replayed), read just before it.
      walLagBytesAtKill = Number(
        (await psqlAsync(p.primary.port, "SELECT coalesce(pg_current_wal_lsn() - flush_lsn, 0) FROM pg_stat_replication WHERE application_name = 'standby1'"))[
          0
        ] ?? NaN
      )
      const pid = p.primary.pid()
      orphans = childPids(pid)
      process.kill(pid, "SIGKILL")
      killAt = performance.now()
      sw.point(undefined)
      log(`${mode}: killed the primary's postmaster (pid ${pid}) after ${accepted.size} accepted; the switch points nowhere`)
      await sleep(DETECT_MS)
      const promoting = performance.now()
      await p.promote()
      promoteMs = performance.now() - promoting
      sw.point(p.standby.port)
      promotedAt = performance.now()
      promotedWall = Date.now()
      log(`${mode}: standby promoted in ${promoteMs.toFixed(0)} ms, the switch points at it (:${p.standby.port})`)
    })()
    const health = () =>
      Promise.all(
        bases.map((b) =>
          fetch(`${b}/v1/health`, { signal: AbortSignal.timeout(2000) }).then(async (r) => ((await r.json()) as any)?.data?.database?.status ?? r.status, () =>
            "no answer")
        )
      )
    const progress = setInterval(
      () =>
        void health().then((h) =>
          log(`${mode}: ${((performance.now() - t0) / 1000).toFixed(0)} of ${BEFORE_S + AFTER_S} s, ${accepted.size} accepted, ${counts.answered503} × 503, ` +
            `${counts.dropped} dropped, ${inFlight.size} in flight; nodes' database: ${h.join(", ")}`)
        ),
      10_000
    )
    const interval = 1000 / RATE
    for (let i = 0; performance.now() < loadEnd; i++) {
      const wait = t0 + i * interval - performance.now()
      if (wait > 1) await sleep(wait)
      // A client has a bounded number of requests outstanding (its connection pool), retries included.
      if (inFlight.size >= MAX_OUTSTANDING) {
        counts.notSent++
        continue
      }
      const q = send(i, 0).finally(() => inFlight.delete(q))
      inFlight.add(q)
    }
    await failover
    while (inFlight.size > 0) await Promise.race([...inFlight])
    clearInterval(progress)
    log(`${mode}: load over, ${accepted.size} accepted; checking on the new primary. Refusals: ${[...reasons].map(([r, n]) => `${n} × ${r}`).join("; ")}`)

    // The new primary, directly (the switch points at it too).
    const sql = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
      Effect.runPromise(Effect.scoped(Effect.flatMap(SqlClient.SqlClient, f).pipe(
        Effect.provide(PgClient.layer({ url: Redacted.make(`postgres://postgres@127.0.0.1:${p.standby.port}/anchord`) }))
      )))
    const ids = [...accepted.keys()]
    const idArray = `{${ids.join(",")}}`
    const presentRows = await sql((s) => s<{ id: string }>`SELECT id FROM records WHERE id = ANY(${idArray}::text[])`)
    const present = new Set(presentRows.map((r) => r.id))
    const missing = ids.filter((id) => !present.has(id))
    const lostBeforeKill = missing.filter((id) => accepted.get(id)!.at < killAt).length
    const lostAfterKill = missing.length - lostBeforeKill
    log(`${mode}: ${missing.length} of ${ids.length} accepted records missing on the new primary (${lostBeforeKill} answered before the kill)`)

    // Drain: every present record ANCHORED and its anchor.confirmed received.
    const drainStart = Date.now()
    let notAnchored = present.size
    for (;;) {
      const rows = await sql((s) => s<{ n: number }>`SELECT count(*)::int AS n FROM record_states WHERE id = ANY(${idArray}::text[]) AND status <> 'ANCHORED'`)
      notAnchored = rows[0]!.n
      const undelivered = [...present].filter((id) => !confirmations.has(id)).length
      if ((notAnchored === 0 && undelivered === 0) || Date.now() - drainStart > DRAIN_MS) break
      await sleep(1000)
    }
    const undelivered = [...present].filter((id) => !confirmations.has(id)).length
    log(`${mode}: drained in ${((Date.now() - drainStart) / 1000).toFixed(0)} s (${notAnchored} not ANCHORED, ${undelivered} not delivered)`)

    // Batches against the chain: each confirmed root on chain once, nothing anchored twice.
    const batches = await sql((s) =>
      s<{ root: string; state: string; createdAt: number }>`
      SELECT merkle_root AS root, state, (extract(epoch from created_at) * 1000)::float8 AS "createdAt" FROM anchor_batches WHERE network_id = 'soak-anvil'`
    )
    const confirmed = batches.filter((b) => b.state === "CONFIRMED")
    const duplicateRootsDb = confirmed.length - new Set(confirmed.map((b) => b.root.toLowerCase())).size
    const logs = await (await fetch(anvil.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getLogs",
        params: [{ address: d.address, topics: [ANCHORED_TOPIC], fromBlock: "0x0", toBlock: "latest" }] })
    })).json() as { result: Array<{ topics: Array<string> }> }
    const onChain = new Map<string, number>()
    for (const l of logs.result) onChain.set(l.topics[2]!.toLowerCase(), (onChain.get(l.topics[2]!.toLowerCase()) ?? 0) + 1)
    const duplicateRootsChain = [...onChain.values()].filter((n) => n > 1).length
    const norm = (r: string) => (r.startsWith("0x") ? r : `0x${r}`).toLowerCase()
    const confirmedNotOnChain = confirmed.filter((b) => onChain.get(norm(b.root)) !== 1).length
    const dbRoots = new Set(batches.map((b) => norm(b.root)))
    const chainRootsWithoutBatch = [...onChain.keys()].filter((r) => !dbRoots.has(r)).length
    const after = batches.filter((b) => b.createdAt >= promotedWall).map((b) => b.createdAt - promotedWall)
    const firstBatchAfterPromotionMs = after.length === 0 ? NaN : Math.min(...after)

    // Every proof against the chain.
    const rpc = rpcClient(anvil.rpcUrl, 10_000)
    let proofsChecked = 0
    let proofsFailing = 0
    await inChunks([...present], 8, async (id) => {
      const res = await fetch(`${bases[proofsChecked % NODES]}/v1/records/${id}/proof`, { headers })
      proofsChecked++
      if (res.status !== 200) return void proofsFailing++
      const report = await Effect.runPromise(verifyInput(readInput(await res.json()), { rpcFor: () => rpc }))
      if (report.exitCode !== 0) proofsFailing++
    })
    log(`${mode}: ${proofsChecked} proofs checked, ${proofsFailing} failing; ${confirmed.length} batches confirmed, ${onChain.size} roots on chain`)

    // Each node's first 202 to a request answered after the promotion.
    const resumeMs = Array.from({ length: NODES }, (_, n) => {
      const firsts = [...accepted.values()].filter((a) => a.node === n && a.at >= promotedAt).map((a) => a.at - promotedAt)
      return firsts.length === 0 ? NaN : Math.min(...firsts)
    })
    return {
      mode,
      accepted: ids.length,
      acceptedBeforeKill: [...accepted.values()].filter((a) => a.at < killAt).length,
      lostBeforeKill,
      lostAfterKill,
      walLagBytesAtKill,
      answered503: counts.answered503,
      without503RetryAfter: counts.without503RetryAfter,
      other5xx: counts.other5xx,
      dropped: counts.dropped,
      other4xx: counts.other4xx,
      notSent: counts.notSent,
      slowerThanBound: counts.slower,
      maxLatencyMs: counts.maxLatency,
      retriedRecords: counts.retried,
      gaveUp: counts.gaveUp,
      promoteMs,
      resumeMs,
      firstBatchAfterPromotionMs,
      notAnchored,
      batches: confirmed.length,
      duplicateRootsDb,
      duplicateRootsChain,
      confirmedNotOnChain,
      chainRootsWithoutBatch,
      proofsChecked,
      proofsFailing,
      undelivered,
      badSignatures,
      duplicateConfirmations: [...confirmations.values()].filter((s) => s.size > 1).length
    }
  } finally {
    for (const c of cleanups) {
      try {
        await c()
      } catch (e) {
        log(`cleanup: ${e instanceof Error ? e.message : String(e)}`)
      }
    }
  }
}

const ms = (n: number) => Number.isFinite(n) ? `${(n / 1000).toFixed(2)} s` : "—"
const main = async () => {
  // Bounded: the whole soak ends within this whatever hangs (cleanups run on the way out).
  const deadline = setTimeout(() => {
    log("the soak overran its 20 minutes: giving up")
    process.exit(2)
  }, 20 * 60_000)
  deadline.unref()
  const results: Array<ModeResult> = []
  for (const mode of MODES) results.push(await runMode(mode))
  const machine = `${Os.cpus()[0]?.model ?? "cpu"} × ${Os.cpus().length}, Node ${process.version}, PostgreSQL 15 (${
    Path.basename(Path.dirname(process.env.PG_BIN ?? "/usr/lib/postgresql/15/bin"))
  })`
  const row = (r: ModeResult) =>
    `| ${
      r.mode === "sync" ? "synchronous" : "asynchronous"
    } | ${r.accepted} (${r.acceptedBeforeKill} before the kill) | **${r.lostBeforeKill}** / ${r.lostAfterKill} | ` +
    `${
      Number.isFinite(r.walLagBytesAtKill) ? r.walLagBytesAtKill : "—"
    } | ${r.answered503} (${r.without503RetryAfter} without Retry-After) | ${r.other5xx} / ${r.dropped} / ${r.other4xx} | ${r.notSent} | ` +
    `${ms(r.maxLatencyMs)} (${r.slowerThanBound} over ${HANG_BOUND_MS / 1000} s) | ${r.gaveUp} | ${ms(r.promoteMs)} | ${r.resumeMs.map(ms).join(", ")} | ${
      ms(r.firstBatchAfterPromotionMs)
    } | ` +
    `${r.batches} / ${r.duplicateRootsDb + r.duplicateRootsChain} / ${r.confirmedNotOnChain} / ${r.chainRootsWithoutBatch} | ${
      r.proofsChecked - r.proofsFailing
    } of ${r.proofsChecked} | ` +
    `${r.undelivered} / ${r.badSignatures} / ${r.duplicateConfirmations} | ${r.notAnchored} |`
  const lines = [
    "",
    `## soak:failover — ${new Date().toISOString()}`,
    "",
    `Machine: ${machine}; shared with other work (timings noisy, counts not). Per mode: a primary and a streaming standby (initdb, pg_basebackup) ` +
    `replicating through a link of ${LINK_DELAY_MS} ms each way, a TCP switch standing in for the VIP / HAProxy / PgBouncer endpoint, anvil, ${NODES} \`anchord start\` nodes. ` +
    `An open-loop client at ${RATE} records/s round-robin (single POST /v1/anchor, Idempotency-Key each, a 503 retried after its Retry-After) for ${BEFORE_S} s; ` +
    `then kill -9 of the primary's postmaster, ${DETECT_MS} ms of nothing behind the switch (the HA manager's detection, a stand-in), \`pg_ctl promote\`, the switch moved, ${
      AFTER_S - DETECT_MS / 1000
    } s more load.`,
    "",
    `| replication | accepted (202) | lost: answered before the kill / after | WAL the standby lacked at the kill (bytes) | 503 | other 5xx / dropped / 4xx | not sent (client at ${MAX_OUTSTANDING} outstanding) | slowest answer | refused after retrying | promote | 202 again after promotion (per node) | first batch after promotion | batches confirmed / anchored twice / not on chain / on chain without a batch | proofs verifying | webhooks missing / bad signature / duplicate | not ANCHORED |`,
    "|---|---|---|---:|---|---|---:|---|---:|---:|---|---:|---|---|---|---:|",
    ...results.map(row),
    "",
    `Bounds (docs/operating.md, "PostgreSQL high availability"): synchronous: 0 lost, every 503 with Retry-After, no other 5xx, no answer slower than ${
      HANG_BOUND_MS / 1000
    } s, ` +
    `each node answering 202 within ${RESUME_BOUND_MS / 1000} s of the promotion, nothing anchored twice, every proof verifying, every record delivered. ` +
    "Asynchronous: reported, not bounded: the lost records are why the synchronous setup is the supported one.",
    ""
  ]
  console.log(lines.join("\n"))
  if (process.env.SOAK_NO_APPEND !== "1") {
    Fs.appendFileSync(Path.join(root, "docs/benchmarks.md"), lines.join("\n"))
    log("appended to docs/benchmarks.md")
  }
  const sync = results.find((r) => r.mode === "sync")
  const broken = sync === undefined ? [] : [
    sync.lostBeforeKill + sync.lostAfterKill > 0 && "records lost",
    sync.without503RetryAfter > 0 && "a 503 without Retry-After",
    sync.other5xx + sync.dropped + sync.other4xx > 0 && "another 5xx, a 4xx or a dropped connection",
    sync.slowerThanBound > 0 && `an answer slower than ${HANG_BOUND_MS} ms`,
    sync.resumeMs.some((t) => !(t <= RESUME_BOUND_MS)) && `a node not answering 202 within ${RESUME_BOUND_MS} ms of the promotion`,
    sync.duplicateRootsDb + sync.duplicateRootsChain + sync.confirmedNotOnChain > 0 && "a root anchored twice or missing on chain",
    sync.proofsFailing > 0 && "proofs failing",
    sync.undelivered + sync.badSignatures > 0 && "webhooks missing or badly signed",
    sync.notAnchored > 0 && "records not ANCHORED",
    sync.gaveUp > 0 && "records still refused after retrying"
  ].filter((b) => b !== false)
  for (const b of broken) log(`synchronous run: ${b}`)
  return broken.length === 0 ? 0 : 1
}

main().then((code) => process.exit(code), (e) => {
  console.error(e)
  process.exit(1)
})
