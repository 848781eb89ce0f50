/**
 * npm run soak:patroni — PostgreSQL fails over under a real HA manager, under load.
 *
 * Patroni (three members on PostgreSQL 15, synchronous_mode), one etcd member and HAProxy routing to the
 * member whose Patroni answers GET /primary, all from Debian's packages and the files under ops/
 * (scripts/bench/patroni-cluster.ts); two `anchord start` nodes on HAProxy, anvil, and the failover soak's
 * open-loop client and checks (scripts/bench/failover-run.ts). Faults, one after the other on the same
 * cluster (each on a fresh database, the cluster healthy again in between):
 *   postmaster  kill -9 of the leader's postmaster (Patroni restarts it, or fails over if it cannot);
 *   switchover  a planned `patronictl switchover` to the synchronous standby;
 *   patroni     kill -9 of the leader's Patroni (its PostgreSQL runs on; HAProxy drops it when the REST API
 *               stops answering; the leader key expires after `ttl`; the Patroni is started again once a
 *               new leader is up, and demotes its old primary);
 *   etcd-cut    the leader cut off from etcd (its link closed): its Patroni must demote it before another
 *               is promoted; the soak watches the old primary and reports when it stopped taking writes.
 * With SOAK_REPLICATION=async (synchronous_mode off, each replica's link delayed by SOAK_LINK_DELAY_MS, 200):
 *   host        kill -9 of the leader's Patroni and postmaster together (its machine gone): the records
 *               answered 202 that the promoted replica lacks are counted (lost; not a failure in this mode).
 * After each: every 202'd record present and ANCHORED once, proofs verifying, webhooks delivered, every 503
 * with Retry-After, no other 5xx, and the write pause (the longest stretch without a 202 from the fault on).
 *
 * Installs nothing: without the packages it prints the apt-get line and exits 3. Not part of `npm test`.
 * Appends its figures to docs/benchmarks/runs.md (SOAK_NO_APPEND=1 to skip). Exit 1 when a fault breaks a bound.
 *
 * SOAK_FAULTS ("postmaster,switchover,patroni,etcd-cut"; "host" with SOAK_REPLICATION=async), SOAK_RATE (records/s, 50), SOAK_BEFORE_S (load
 * before the fault, 15), SOAK_AFTER_S (load after it, 45).
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { brokenBounds, type FailoverResult, HANG_BOUND_MS, runFailover, seconds } from "./bench/failover-run.ts"
import { APT_LINE, type Member, missingPackages, type PatroniCluster, startPatroniCluster, versions } from "./bench/patroni-cluster.ts"
import { childPids } from "./bench/pg-pair.ts"

const FAULTS = ["postmaster", "switchover", "patroni", "etcd-cut", "host"] as const
type Fault = typeof FAULTS[number]
/**
 * 50/s: with three PostgreSQL servers, three Patroni, etcd and HAProxy beside two nodes on a shared 2-core
 * machine, the nodes' database probe (1 s) times out now and then even at this rate, and more makes it
 * the rule (503s before any fault, counted apart in the report).
 */
const RATE = Number(process.env.SOAK_RATE ?? 50)
const BEFORE_S = Number(process.env.SOAK_BEFORE_S ?? 15)
const AFTER_S = Number(process.env.SOAK_AFTER_S ?? 45)
/** A new primary serves within this of any fault (Patroni's ttl is 20 s; the loop and a restart add to it). */
const NEW_PRIMARY_BOUND_MS = 90_000
const root = Path.resolve(import.meta.dirname, "..")
const started = Date.now()
const log = (line: string) => console.log(`[soak:patroni ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}`)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const DESCRIPTION: Record<Fault, string> = {
  postmaster: "kill -9 of the leader's postmaster",
  switchover: "patronictl switchover",
  patroni: "kill -9 of the leader's Patroni",
  "etcd-cut": "the leader cut off from etcd",
  host: "the leader's host dies (kill -9 of its Patroni and postmaster)"
}
/** sync: ops/patroni/patroni.yml as written; async: synchronous_mode off, to count what a failover loses. */
const REPLICATION = process.env.SOAK_REPLICATION === "async" ? "async" : "sync"
/** One-way latency of each replica's replication link (0: loopback as it is, which hides what an asynchronous standby lacks). */
const LINK_DELAY_MS = Number(process.env.SOAK_LINK_DELAY_MS ?? (REPLICATION === "async" ? 200 : 0))

interface FaultResult extends FailoverResult {
  readonly fault: Fault
  readonly oldLeader: string
  readonly newLeader: string
  /** etcd-cut: the fault → the old primary no longer taking writes (in recovery or down); requests sent after that and answered 202 before the promotion (none may be: no primary could have committed them). */
  readonly demotedMs: number
  readonly acceptedWithoutPrimary: number
}

/** Waits for a primary other than `old` (another member, or the same member's postmaster restarted): GET /primary 200. */
const waitNewPrimary = async (c: PatroniCluster, old: Member, oldPid: number): Promise<Member> => {
  const until = Date.now() + NEW_PRIMARY_BOUND_MS
  for (;;) {
    // All members at once (one slow to answer must not delay seeing another promoted).
    const found = await Promise.all(c.members.map(async (m) => {
      // The same member counts once its postmaster is a new, live one (Patroni restarted it).
      const pid = c.postmasterPid(m)
      return (m.name !== old.name || (Number.isFinite(pid) && pid !== oldPid)) && await c.isPrimary(m) ? m : undefined
    }))
    const m = found.find((f) => f !== undefined)
    if (m) return m
    if (Date.now() > until) throw new Error(`no new primary within ${NEW_PRIMARY_BOUND_MS} ms`)
    await sleep(100)
  }
}

const runFault = async (c: PatroniCluster, fault: Fault, n: number): Promise<FaultResult> => {
  const { leader, sync } = await c.waitHealthy(240_000)
  const candidate = sync ?? c.members.find((m) => m !== leader)!
  const db = `anchord_${n}_${fault.replace("-", "_")}`
  await c.psql(`CREATE DATABASE ${db}`)
  log(`${fault}: leader ${leader.name}, synchronous standby ${sync?.name ?? "none (asynchronous)"}; database ${db}`)
  let newLeader: Member | undefined
  let demotedAt = NaN
  let promotedAt = NaN
  let faultAt = NaN
  const result = await runFailover({
    label: fault,
    databaseUrl: c.url(db),
    primaryUrl: async () => {
      const { leader } = await c.waitHealthy(240_000)
      return c.url(db, leader.pgPort)
    },
    rate: RATE,
    beforeS: BEFORE_S,
    afterS: AFTER_S,
    log,
    fault: async (marks) => {
      const pid = c.postmasterPid(leader)
      const watchers: Array<Promise<void>> = []
      if (fault === "postmaster") {
        const orphans = childPids(pid)
        process.kill(pid, "SIGKILL")
        marks.fault()
        // A killed postmaster's backends end themselves; any left would hold the old port.
        watchers.push(sleep(5000).then(() => {
          for (const o of orphans) {
            try {
              process.kill(o, "SIGKILL")
            } catch {}
          }
        }))
        log(`${fault}: killed ${leader.name}'s postmaster (pid ${pid})`)
      } else if (fault === "switchover") {
        marks.fault()
        log(`${fault}: ${(await c.patronictl(["switchover", "--leader", leader.name, "--candidate", candidate.name, "--force"])).trim().split("\n").at(-1)}`)
      } else if (fault === "host") {
        // Both at once, and the backends: nothing of the old primary answers, as when its machine is gone.
        const orphans = childPids(pid)
        process.kill(c.patroniPid(leader), "SIGKILL")
        process.kill(pid, "SIGKILL")
        for (const o of orphans) {
          try {
            process.kill(o, "SIGKILL")
          } catch {}
        }
        marks.fault()
        log(`${fault}: killed ${leader.name}'s Patroni and postmaster`)
      } else if (fault === "patroni") {
        const ppid = c.patroniPid(leader)
        process.kill(ppid, "SIGKILL")
        marks.fault()
        log(`${fault}: killed ${leader.name}'s Patroni (pid ${ppid}); its PostgreSQL runs on`)
      } else {
        leader.etcdLink.point(undefined)
        marks.fault()
        faultAt = performance.now()
        log(`${fault}: ${leader.name} cut off from etcd`)
        // When the old primary stops taking writes: in recovery, or not answering.
        watchers.push((async () => {
          for (const until = Date.now() + NEW_PRIMARY_BOUND_MS; Date.now() < until;) {
            const inRecovery = await c.psql("SELECT pg_is_in_recovery()", leader.pgPort).then((r) => r[0] === "t", () => true)
            if (inRecovery) return void (demotedAt = performance.now())
            await sleep(100)
          }
        })())
      }
      newLeader = await waitNewPrimary(c, leader, pid)
      marks.promoted()
      promotedAt = performance.now()
      log(`${fault}: ${newLeader.name} is primary (${newLeader.name === leader.name ? "restarted in place" : "failed over"})`)
      await Promise.all(watchers)
      // Put back what the fault took away, as an operator (or systemd) would.
      // (The host's Patroni, started again, rewinds away what its primary had and the new one lacks.)
      if (fault === "patroni" || fault === "host") c.startPatroni(leader)
      if (fault === "etcd-cut") leader.etcdLink.point(c.etcdPort)
    }
  })
  const demotedMs = demotedAt - faultAt
  const acceptedWithoutPrimary = fault === "etcd-cut" ? result.acceptedTimes.filter((t) => t.sent > demotedAt && t.at < promotedAt).length : 0
  if (fault === "etcd-cut") {
    log(`${fault}: old primary stopped taking writes ${seconds(demotedMs)} after the cut, the new one was primary after ${seconds(promotedAt - faultAt)}; ` +
      `${acceptedWithoutPrimary} requests sent after the demotion answered 202 before the promotion`)
  }
  return { ...result, fault, oldLeader: leader.name, newLeader: newLeader?.name ?? "—", demotedMs, acceptedWithoutPrimary }
}

const bounds = (r: FaultResult): Array<string> => [
  // Asynchronous replication is there to count what it loses: only the other bounds hold.
  ...brokenBounds(r).filter((b) => REPLICATION === "sync" || b !== "records lost"),
  ...(r.fault === "etcd-cut" && !(r.demotedMs < r.faultToPromotedMs) ? ["the old primary was not demoted before the new one was promoted"] : []),
  ...(r.acceptedWithoutPrimary > 0 ? ["records answered 202 while no primary was up"] : [])
]

const main = async () => {
  const missing = missingPackages()
  if (missing.length > 0) {
    console.error(`soak:patroni needs Debian's ${missing.join(", ")} (not found; this soak installs nothing). As root:\n  apt-get update && ${APT_LINE}`)
    return 3
  }
  // Bounded: the whole soak ends within this whatever hangs.
  const deadline = setTimeout(() => {
    log("the soak overran its 40 minutes: giving up")
    process.exit(2)
  }, 40 * 60_000)
  deadline.unref()
  const faults = (process.env.SOAK_FAULTS ?? (REPLICATION === "sync" ? "postmaster,switchover,patroni,etcd-cut" : "host")).split(",").map((f) =>
    f.trim()
  ) as Array<Fault>
  const unknown = faults.filter((f) => !FAULTS.includes(f))
  if (unknown.length > 0) throw new Error(`SOAK_FAULTS: unknown ${unknown.join(", ")} (known: ${FAULTS.join(", ")})`)
  const v = versions()
  log(`Patroni ${v.patroni}, etcd ${v.etcd}, HAProxy ${v.haproxy}, PostgreSQL ${v.postgres}`)
  const c = await startPatroniCluster(log, { synchronous: REPLICATION === "sync", linkDelayMs: LINK_DELAY_MS })
  const results: Array<FaultResult> = []
  try {
    for (const [i, f] of faults.entries()) results.push(await runFault(c, f, i + 1))
  } finally {
    await c.destroy()
  }
  const machine = `${Os.cpus()[0]?.model ?? "cpu"} × ${Os.cpus().length}, Node ${process.version}`
  const row = (r: FaultResult) =>
    `| ${DESCRIPTION[r.fault]} | ${r.oldLeader} → ${r.newLeader} | ${r.accepted} (${r.acceptedBeforeKill} before) | **${
      r.lostBeforeKill + r.lostAfterKill
    }** | ` +
    `${r.answered503} (${r.answered503BeforeFault} before the fault, ${r.without503RetryAfter} without Retry-After) | ${r.other5xx} / ${r.dropped} / ${r.other4xx} | **${
      seconds(r.writePauseMs)
    }** | ` +
    `${seconds(r.faultToPromotedMs)} | ${r.resumeMs.map(seconds).join(", ")} | ${seconds(r.maxLatencyMs)} (${r.slowerThanBound} over ${
      HANG_BOUND_MS / 1000
    } s) | ` +
    `${r.batches} / ${r.duplicateRootsDb + r.duplicateRootsChain} / ${r.confirmedNotOnChain} | ${r.proofsChecked - r.proofsFailing} of ${r.proofsChecked} | ` +
    `${r.undelivered} / ${r.badSignatures} | ${r.notAnchored} |`
  const cut = results.find((r) => r.fault === "etcd-cut")
  const lines = [
    "",
    `## soak:patroni — ${new Date().toISOString()}`,
    "",
    `Machine: ${machine}; shared with other work (timings noisy, counts not). Patroni ${v.patroni}, etcd ${v.etcd}, HAProxy ${v.haproxy}, ` +
    `PostgreSQL ${v.postgres} (Debian packages), ops/ files as committed: three members, ${
      REPLICATION === "sync" ? "synchronous_mode" : "synchronous_mode off (asynchronous)"
    }, replicas' links ${LINK_DELAY_MS} ms each way, ttl 20 / loop_wait 5 / retry_timeout 5, ` +
    `HAProxy checking GET /primary every 1 s. Two \`anchord start\` nodes on HAProxy, anvil; an open-loop client at ${RATE} records/s ` +
    `(single POST /v1/anchor, Idempotency-Key each, a 503 retried after its Retry-After) for ${BEFORE_S} s, the fault, ${AFTER_S} s more. ` +
    "Write pause: the longest stretch without any 202 from the fault on.",
    "",
    "| fault | primary | accepted (202) | lost | 503 | other 5xx / dropped / 4xx | write pause | fault → new primary | 202 again after it (per node) | slowest answer | batches confirmed / anchored twice / not on chain | proofs verifying | webhooks missing / bad signature | not ANCHORED |",
    "|---|---|---|---:|---|---|---:|---:|---|---|---|---|---|---:|",
    ...results.map(row),
    "",
    ...(cut ?
      [
        `Leader cut off from etcd: the old primary stopped taking writes ${seconds(cut.demotedMs)} after the cut, the new one was primary ${
          seconds(cut.faultToPromotedMs)
        } after it; ${cut.acceptedWithoutPrimary} requests sent in between were answered 202 before the promotion.`,
        ""
      ] :
      [])
  ]
  console.log(lines.join("\n"))
  if (process.env.SOAK_NO_APPEND !== "1") {
    Fs.appendFileSync(Path.join(root, "docs/benchmarks/runs.md"), lines.join("\n"))
    log("appended to docs/benchmarks/runs.md")
  }
  let broken = 0
  for (const r of results) {
    for (const b of bounds(r)) {
      broken++
      log(`${r.fault}: ${b}`)
    }
  }
  return broken === 0 ? 0 : 1
}

main().then((code) => process.exit(code), (e) => {
  console.error(e)
  process.exit(1)
})
