/**
 * One failover under load, whatever stages it: anvil with the AnchorRegistry, two `anchord start` nodes on
 * the database endpoint they are given, a signed-webhook receiver, and an open-loop client posting single
 * EVM records round-robin with an Idempotency-Key each (a 503 is retried after its Retry-After, as a client
 * should). After `beforeS` seconds of load the fault runs (kill, promotion, switchover: the caller's); the
 * load goes on for `afterS` more. Then, on the primary the caller names: every record answered 202 is there,
 * ANCHORED; each confirmed batch's root is on chain exactly once; every proof verifies against the chain;
 * every record got a validly signed anchor.confirmed. Also counted: 503s (each must carry Retry-After), any
 * other 5xx or dropped connection, answers slower than HANG_BOUND_MS, and the write pause (the fault → each
 * node's first 202 after it, and after the promotion).
 *
 * Used by `npm run soak:failover` (a hand-staged pair behind a TCP switch) and `npm run soak:patroni`
 * (Patroni, etcd and HAProxy).
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
import { freePort } from "../../src/dev/EmbeddedPostgres.ts"
import { deployAnchorRegistry } from "../../src/evm/deploy.ts"
import { ANCHORED_TOPIC, rpcClient } from "../../src/verify/evm.ts"
import { readInput } from "../../src/verify/input.ts"
import { verifyInput } from "../../src/verify/verify.ts"
import { startAnvil } from "./anvil.ts"

/** Records a client has outstanding at most (waiting for an answer or for their retry); past it, new ones are not sent (counted). */
export const MAX_OUTSTANDING = 200
const NODES = 2
/** No answer may take longer: the request deadline (REQUEST_DEADLINE_MS, 2 s) plus slack for a loaded machine. */
export const HANG_BOUND_MS = 5_000
/** The client gives up on a request after this (counted as a hang beyond the bound). */
const CLIENT_TIMEOUT_MS = 15_000
/** Each node answers 202 again within this after the promotion (the breaker's probe is every 1 s, the pool reconnects). */
export const RESUME_BOUND_MS = 10_000
/** After the load: everything accepted is ANCHORED and delivered within this. */
const DRAIN_MS = 120_000
const ANVIL_KEY: Hex = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80" // anvil/hardhat dev account #0
const root = Path.resolve(import.meta.dirname, "../..")
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
/** `anchord <args> --json`, not blocking the event loop (a switch the CLI connects through may run in it). */
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

/** What the fault tells the run, as it happens. */
export interface FaultMarks {
  /** The fault itself (the kill, the switchover command, the cut): the write pause counts from here. */
  readonly fault: () => void
  /** A new primary is serving behind the endpoint (resume times count from here too). */
  readonly promoted: () => void
}

export interface FailoverSpec {
  /** A name for the log and the report ("sync", "leader postmaster kill -9", ...). */
  readonly label: string
  /** The endpoint the nodes use (through the HA manager's VIP / proxy). */
  readonly databaseUrl: string
  /** Runs after `beforeS` of load; calls `marks.fault()` at the fault and `marks.promoted()` when a new primary serves. */
  readonly fault: (marks: FaultMarks) => Promise<void>
  /** The primary after the fault, directly (what the checks read). */
  readonly primaryUrl: () => string | Promise<string>
  readonly rate: number
  readonly beforeS: number
  readonly afterS: number
  readonly log: (line: string) => void
}

export interface FailoverResult {
  readonly label: string
  readonly accepted: number
  readonly acceptedBeforeKill: number
  readonly lostBeforeKill: number
  readonly lostAfterKill: number
  readonly answered503: number
  /** Of which before the fault (the nodes shedding load, or their database slower than the request deadline). */
  readonly answered503BeforeFault: number
  readonly without503RetryAfter: number
  readonly other5xx: number
  readonly dropped: number
  readonly other4xx: number
  readonly notSent: number
  readonly slowerThanBound: number
  readonly maxLatencyMs: number
  readonly retriedRecords: number
  readonly gaveUp: number
  /** The fault → the promotion (NaN: no promotion marked). */
  readonly faultToPromotedMs: number
  /**
   * The write pause: the longest stretch without a 202 (any node) from the fault on, the fault itself
   * counting as the start of the first stretch. (A primary that still takes writes after the fault, as
   * in a switchover before its demotion, does not hide the pause that follows.)
   */
  readonly writePauseMs: number
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
  /** When each request answered 202 was sent and answered (performance.now()), and when the fault was marked. */
  readonly acceptedTimes: ReadonlyArray<{ readonly sent: number; readonly at: number }>
  readonly faultAt: number
}

export const runFailover = async (spec: FailoverSpec): Promise<FailoverResult> => {
  const { label, log, rate: RATE, beforeS: BEFORE_S, afterS: AFTER_S } = spec
  const cleanups: Array<() => unknown> = []
  const logsDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-failover-nodes-"))
  cleanups.push(() => process.env.SOAK_KEEP_LOGS === "1" ? log(`node logs kept in ${logsDir}`) : Fs.rmSync(logsDir, { recursive: true, force: true }))
  try {
    const anvil = await startAnvil()
    cleanups.unshift(() => anvil.stop())
    const d = await deployAnchorRegistry({ rpcUrl: anvil.rpcUrl, privateKey: ANVIL_KEY })
    const env: Record<string, string> = {
      DATABASE_URL: spec.databaseUrl,
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

    // The nodes: `anchord start` on the endpoint, the same configuration each.
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
    log(`${label}: ${NODES} nodes up on ${spec.databaseUrl.replace(/^postgres:\/\/[^@]*@/, "")}; load ${RATE} records/s, fault after ${BEFORE_S} s`)

    // The load: open loop, round-robin, a 503 retried after its Retry-After with the same Idempotency-Key.
    const runId = `${label.replace(/[^a-z0-9]+/gi, "-")}-${Date.now()}`
    const accepted = new Map<string, { at: number; sent: number; node: number }>()
    const counts = { other4xx: 0, notSent: 0, answered503: 0, answered503BeforeFault: 0, without503RetryAfter: 0, other5xx: 0, dropped: 0, slower: 0,
      maxLatency: 0, retried: 0, gaveUp: 0 }
    const inFlight = new Set<Promise<void>>()
    /** What the refusals said, for the log. */
    const reasons = new Map<string, number>()
    let loadEnd = 0
    const send = (i: number, attempt: number): Promise<void> => {
      const node = i % NODES
      const sent = performance.now()
      return fetch(`${bases[node]}/v1/anchor`, {
        method: "POST",
        headers: { ...headers, "idempotency-key": `soak-${runId}-${i}` },
        body: JSON.stringify({ data: { soak: label, i } }),
        signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS)
      }).then(async (res) => {
        const body = await res.json().catch(() => undefined) as any
        return { status: res.status, retryAfter: res.headers.get("retry-after"), body }
      }, () => ({ status: 0, retryAfter: null, body: undefined })).then(async ({ status, retryAfter, body }) => {
        const answered = performance.now()
        const latency = answered - sent
        counts.maxLatency = Math.max(counts.maxLatency, latency)
        if (latency > HANG_BOUND_MS) counts.slower++
        if (status === 202) return void accepted.set(body.data.recordId, { at: answered, sent, node })
        const reason = `${status} ${body?.errorCode ?? ""} ${String(body?.error ?? "").slice(0, 80)}`
        reasons.set(reason, (reasons.get(reason) ?? 0) + 1)
        if (status === 503) {
          counts.answered503++
          if (answered < killAt) counts.answered503BeforeFault++
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
    let promotedWall = 0
    const failover = (async () => {
      await sleep(BEFORE_S * 1000)
      await spec.fault({
        fault: () => void (killAt = performance.now()),
        promoted: () => {
          promotedAt = performance.now()
          promotedWall = Date.now()
        }
      })
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
          log(`${label}: ${((performance.now() - t0) / 1000).toFixed(0)} of ${BEFORE_S + AFTER_S} s, ${accepted.size} accepted, ${counts.answered503} × 503, ` +
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
    log(`${label}: load over, ${accepted.size} accepted; checking on the primary. Refusals: ${[...reasons].map(([r, n]) => `${n} × ${r}`).join("; ")}`)

    // The primary after the fault, directly.
    const primaryUrl = await spec.primaryUrl()
    const sql = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
      Effect.runPromise(Effect.scoped(Effect.flatMap(SqlClient.SqlClient, f).pipe(
        Effect.provide(PgClient.layer({ url: Redacted.make(primaryUrl) }))
      )))
    const ids = [...accepted.keys()]
    const idArray = `{${ids.join(",")}}`
    const presentRows = await sql((s) => s<{ id: string }>`SELECT id FROM records WHERE id = ANY(${idArray}::text[])`)
    const present = new Set(presentRows.map((r) => r.id))
    const missing = ids.filter((id) => !present.has(id))
    const lostBeforeKill = missing.filter((id) => accepted.get(id)!.at < killAt).length
    const lostAfterKill = missing.length - lostBeforeKill
    log(`${label}: ${missing.length} of ${ids.length} accepted records missing on the primary (${lostBeforeKill} answered before the fault)`)

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
    log(`${label}: drained in ${((Date.now() - drainStart) / 1000).toFixed(0)} s (${notAnchored} not ANCHORED, ${undelivered} not delivered)`)

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
    const after = batches.filter((b) => promotedWall > 0 && b.createdAt >= promotedWall).map((b) => b.createdAt - promotedWall)
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
    log(`${label}: ${proofsChecked} proofs checked, ${proofsFailing} failing; ${confirmed.length} batches confirmed, ${onChain.size} roots on chain`)

    // Each node's first 202 to a request answered after the promotion; the write pause: the fault → the first 202 to a request sent after it.
    const resumeMs = Array.from({ length: NODES }, (_, n) => {
      const firsts = [...accepted.values()].filter((a) => a.node === n && a.at >= promotedAt).map((a) => a.at - promotedAt)
      return firsts.length === 0 ? NaN : Math.min(...firsts)
    })
    const answers = [killAt, ...[...accepted.values()].map((a) => a.at).filter((t) => t >= killAt)].sort((a, b) => a - b)
    const writePauseMs = answers.length < 2 ? NaN : Math.max(...answers.slice(1).map((t, i) => t - answers[i]!))
    return {
      label,
      accepted: ids.length,
      acceptedBeforeKill: [...accepted.values()].filter((a) => a.at < killAt).length,
      lostBeforeKill,
      lostAfterKill,
      answered503: counts.answered503,
      answered503BeforeFault: counts.answered503BeforeFault,
      without503RetryAfter: counts.without503RetryAfter,
      other5xx: counts.other5xx,
      dropped: counts.dropped,
      other4xx: counts.other4xx,
      notSent: counts.notSent,
      slowerThanBound: counts.slower,
      maxLatencyMs: counts.maxLatency,
      retriedRecords: counts.retried,
      gaveUp: counts.gaveUp,
      faultToPromotedMs: Number.isFinite(promotedAt) ? promotedAt - killAt : NaN,
      writePauseMs,
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
      duplicateConfirmations: [...confirmations.values()].filter((s) => s.size > 1).length,
      acceptedTimes: [...accepted.values()].map(({ at, sent }) => ({ at, sent })),
      faultAt: killAt
    }
  } finally {
    await runCleanups(cleanups, log)
  }
}

/** Runs every cleanup in order; one that fails is logged and the others still run. */
export const runCleanups = async (cleanups: ReadonlyArray<() => unknown>, log: (line: string) => void) => {
  for (const c of cleanups) {
    try {
      await c()
    } catch (e) {
      log(`cleanup: ${e instanceof Error ? e.message : String(e)}`)
    }
  }
}

/** What breaks the bounds of a run that must lose nothing (docs/operating.md, "PostgreSQL high availability"). */
export const brokenBounds = (r: FailoverResult, resumeBoundFrom: "promotion" | "none" = "promotion"): Array<string> =>
  [
    r.lostBeforeKill + r.lostAfterKill > 0 && "records lost",
    r.without503RetryAfter > 0 && "a 503 without Retry-After",
    r.other5xx + r.dropped + r.other4xx > 0 && "another 5xx, a 4xx or a dropped connection",
    r.slowerThanBound > 0 && `an answer slower than ${HANG_BOUND_MS} ms`,
    resumeBoundFrom === "promotion" && r.resumeMs.some((t) => !(t <= RESUME_BOUND_MS)) &&
    `a node not answering 202 within ${RESUME_BOUND_MS} ms of the promotion`,
    r.duplicateRootsDb + r.duplicateRootsChain + r.confirmedNotOnChain > 0 && "a root anchored twice or missing on chain",
    r.proofsFailing > 0 && "proofs failing",
    r.undelivered + r.badSignatures > 0 && "webhooks missing or badly signed",
    r.notAnchored > 0 && "records not ANCHORED",
    r.gaveUp > 0 && "records still refused after retrying"
  ].filter((b): b is string => b !== false)

export const seconds = (n: number) => Number.isFinite(n) ? `${(n / 1000).toFixed(2)} s` : "—"
