/**
 * npm run soak:cluster (issue 25): three `anchord start` nodes on one PostgreSQL (a fresh database on
 * the machine's server) and one Redis, one anvil and the Fabric dev peer, an open-loop round-robin
 * client (evm / fabric / hybrid records) and a webhook receiver checking every signature; faults on a
 * schedule while the load runs:
 *   1. kill -9 the EVM leader right after its broadcast reached the chain, before it heard back
 *      (aimed by an RPC proxy in front of anvil), restarted 5 s later;
 *   2. kill -9 the EVM leader between cut and broadcast (its signed, stored transaction held at the
 *      proxy, never sent), restarted;
 *   3. kill -9 the Fabric leader with a batch SENT and not confirmed, then with one PENDING (cut, not
 *      submitted), each aimed by polling the database every 20 ms, restarted;
 *   4. SIGSTOP the EVM leader past its lease, SIGCONT: it must write nothing after losing its lock
 *      (fencing by the lock, src/anchoring/Leadership.ts);
 *   5. Redis gone for 30 s (a TCP proxy in front of it cut, or SOAK_REDIS=real: the server stopped with
 *      `redis-cli shutdown nosave` and restarted, always, at the end): limits counted per node, no 5xx;
 *   6. a rolling restart: each node in turn taken out of rotation, stopped (SIGTERM) and started again
 *      (the same build: the point is the other nodes carrying on meanwhile);
 * and a key limited to N/s driven at 4N/s across the nodes, with Redis up (N/s in total expected) and
 * while it is gone (per node). Nodes killed or paused are taken out of the client's rotation, as a
 * load balancer's health check would. Afterwards the checks of scripts/bench/cluster-kit.ts, the
 * figures against the bounds of docs/operating.md ("Several nodes"), appended to docs/benchmarks/runs.md.
 *
 * SOAK_SECONDS (load duration, default 300; the load lasts at least until the faults are done),
 * SOAK_RATE (records/s, default 20), SOAK_NODES (2 or 3, default 3), SOAK_ADMIN_URL (default
 * postgres://postgres:test@127.0.0.1:5432/test), SOAK_REDIS=proxy|real, SOAK_NO_APPEND=1.
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { Hex } from "viem"
import { LEADER_LEASE_MS } from "../src/anchoring/Leadership.ts"
import { startDevPeer } from "../src/dev/fabric-peer/index.ts"
import { deployAnchorRegistry } from "../src/evm/deploy.ts"
import { startAnvil } from "./bench/anvil.ts"
import { type Accepted, anchordJson, type ClusterNode, failedChecks, finalChecks, freshDatabase, leaderOf, openLoopClient, pct, pollFor, query,
  type RecordChain, sleep, startNode, startReceiver, startRpcProxy, tcpProxy } from "./bench/cluster-kit.ts"

const SECONDS = Number(process.env.SOAK_SECONDS ?? 300)
const RATE = Number(process.env.SOAK_RATE ?? 20)
const NODES = Number(process.env.SOAK_NODES ?? 3)
const ADMIN_URL = process.env.SOAK_ADMIN_URL ?? "postgres://postgres:test@127.0.0.1:5432/test"
const REAL_REDIS = process.env.SOAK_REDIS === "real"
const LIMIT = 10 // the limited key's per-second limit
const REDIS_DOWN_MS = 30_000
const ANVIL_KEY: Hex = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80" // anvil dev account #0
/** Bounds (docs/operating.md, "Several nodes"). */
const BOUND_KILL_MS = 5_000
const BOUND_PAUSE_MS = LEADER_LEASE_MS + 5_000
const DELAYED_MS = 15_000
const BOUND_DELAY_MS = 60_000
const root = Path.resolve(import.meta.dirname, "..")
const t0 = Date.now()
const log = (line: string) => console.log(`[soak:cluster +${Math.round((Date.now() - t0) / 1000)}s] ${line}`)

const redisServer = {
  stop: () => ChildProcess.execFileSync("redis-cli", ["-p", "6379", "shutdown", "nosave"], { stdio: "ignore" }),
  start: () =>
    ChildProcess.execFileSync("redis-server", ["--daemonize", "yes", "--bind", "127.0.0.1", "-::1", "--port", "6379", "--save", "", "--appendonly", "no",
      "--dir", "/var/lib/redis", "--logfile", "/var/log/redis/ci.log"], { stdio: "ignore" }),
  up: () => {
    try {
      return ChildProcess.execFileSync("redis-cli", ["-p", "6379", "ping"], { encoding: "utf8" }).includes("PONG")
    } catch {
      return false
    }
  }
}

interface Fault {
  readonly name: string
  readonly at: number
  end: number
  /** Leadership handover per network (ms from the fault to another node leading it), or a note. */
  readonly handovers: Array<{ networkId: string; ms: number | undefined }>
  readonly bound: number
  note: string
}

const main = async () => {
  const tmp = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-soak-cluster-"))
  const cleanups: Array<() => unknown> = []
  const cleanup = async () => {
    for (const c of cleanups.reverse()) {
      try {
        await c()
      } catch {}
    }
    cleanups.length = 0
  }
  // Redis is shared with other users of the machine: whatever happens, it runs again when this ends.
  if (REAL_REDIS) {
    cleanups.push(() => {
      if (!redisServer.up()) redisServer.start()
    })
  }
  process.once("SIGINT", () => void cleanup().then(() => process.exit(130)))
  try {
    const db = await freshDatabase(ADMIN_URL)
    log(`database ${db.name}; work files in ${tmp}`)
    cleanups.push(() => db.drop())
    const anvil = await startAnvil()
    cleanups.push(() => anvil.stop())
    const peer = await startDevPeer({ dataDir: Path.join(tmp, "fabric-devpeer") })
    cleanups.push(() => peer.close())
    const d = await deployAnchorRegistry({ rpcUrl: anvil.rpcUrl, privateKey: ANVIL_KEY })
    const rpc = await startRpcProxy(anvil.rpcUrl)
    cleanups.push(() => rpc.close())
    const redis = REAL_REDIS ? undefined : await tcpProxy({ host: "127.0.0.1", port: 6379 })
    if (redis !== undefined) cleanups.push(() => redis.close())
    const receiver = await startReceiver()
    cleanups.push(() => receiver.close())

    const evmId = "soak-anvil"
    const fabricId = "soak-fabric"
    const fabric = {
      networkId: fabricId,
      endpoint: peer.address,
      mspId: peer.mspId,
      certPath: peer.clientIdentity.certPath,
      keyPath: peer.clientIdentity.keyPath,
      channel: peer.channel,
      chaincode: peer.chaincode
    }
    const envFor = (name: string): Record<string, string> => ({
      DATABASE_URL: db.url,
      ANCHORD_DATA_DIR: Path.join(tmp, name),
      REDIS_URL: redis === undefined ? "redis://127.0.0.1:6379" : `redis://127.0.0.1:${redis.port}`,
      EVM_NETWORKS: JSON.stringify([{
        networkId: evmId,
        rpcUrl: rpc.urlFor(name),
        chainId: d.chainId,
        contractAddress: d.address,
        confirmations: 1,
        environment: "test",
        batchMaxSize: 1_000,
        batchWindowMs: 1_000,
        pollIntervalMs: 200
      }]),
      EVM_PRIVATE_KEY_SOAK_ANVIL: ANVIL_KEY,
      FABRIC_NETWORKS: JSON.stringify([{
        networkId: fabricId,
        environment: "test",
        peerEndpoint: peer.address,
        mspId: peer.mspId,
        certPath: peer.clientIdentity.certPath,
        keyPath: peer.clientIdentity.keyPath,
        channel: peer.channel,
        chaincode: peer.chaincode,
        batchMaxSize: 1_000,
        batchWindowMs: 1_000
      }]),
      WEBHOOK_ALLOW_PRIVATE: "loopback",
      LOG_LEVEL: "info"
    })
    for (const name of ["n1", "n2", "n3"]) Fs.mkdirSync(Path.join(tmp, name))
    const cli = envFor("n1")
    const account = anchordJson(["accounts", "create", "soak", "--plan", "ENTERPRISE", "--rate-per-second", "10000000", "--activate", "--json"], cli)
    const key = anchordJson(["keys", "create", account.id, "--json"], cli).key as string
    const limited = anchordJson(["accounts", "create", "limited", "--plan", "ENTERPRISE", "--rate-per-second", String(LIMIT), "--activate", "--json"], cli)
    const limitedKey = anchordJson(["keys", "create", limited.id, "--json"], cli).key as string

    const nodes: Array<ClusterNode> = []
    for (let i = 1; i <= NODES; i++) {
      nodes.push(await startNode(`n${i}`, envFor(`n${i}`), Path.join(tmp, `n${i}.log`))) // one after the other: the first migrates
      cleanups.push(() => nodes[i - 1]!.stop("SIGKILL"))
    }
    log(`${NODES} nodes up: ${nodes.map((n) => `${n.name} ${n.base} pid ${n.child.pid}`).join(", ")}; logs ${tmp}/n*.log`)
    for (const [k, who] of [[key, "soak"], [limitedKey, "limited"]] as const) {
      const put = await fetch(`${nodes[0]!.base}/v1/webhooks`, {
        method: "PUT",
        headers: { authorization: `Bearer ${k}`, "content-type": "application/json" },
        body: JSON.stringify({ url: receiver.url, enabled: true, events: ["anchor.confirmed"] })
      })
      const json = await put.json() as any
      if (put.status !== 200 || typeof json?.data?.secret !== "string") throw new Error(`PUT /v1/webhooks (${who}): ${put.status} ${JSON.stringify(json)}`)
      receiver.secrets.push(json.data.secret)
    }
    const evmLeader0 = await leaderOf(nodes, evmId)
    const fabricLeader0 = await leaderOf(nodes, fabricId)
    log(`leaders: ${evmId} ${evmLeader0?.name}, ${fabricId} ${fabricLeader0?.name}`)

    const out = new Set<ClusterNode>()
    const rotation = () => nodes.filter((n) => !out.has(n))
    const mix: Array<RecordChain> = ["evm", "evm", "evm", "fabric", "hybrid"]
    const client = openLoopClient({ rotation, key, ratePerSecond: RATE, chainOf: (i) => mix[i % mix.length]!, tag: "soak" })
    const progress = setInterval(() => {
      const confirmed = client.accepted.filter((a) => receiver.confirmed.has(a.recordId)).length
      log(`load: ${client.accepted.length} accepted, ${confirmed} confirmed at the receiver, answers ${JSON.stringify(Object.fromEntries(client.statuses))}, ` +
        `no answer ${client.noAnswer}, in rotation ${rotation().map((n) => n.name).join(",")}`)
    }, 15_000)

    const faults: Array<Fault> = []
    const handover = async (networkId: string, from: ClusterNode, since: number, timeoutMs: number) => {
      const next = await leaderOf(nodes, networkId, timeoutMs, from)
      return { networkId, ms: next === undefined ? undefined : Date.now() - since, next }
    }
    const restart = async (node: ClusterNode) => {
      await node.start()
      out.delete(node)
    }

    /** kill -9 of a network's leader when `aim` fires (it resolves with a note once the kill was done). */
    const killLeader = async (name: string, networkId: string, aim: (leader: ClusterNode, kill: () => Promise<void>) => Promise<string>) => {
      const leader = await leaderOf(nodes, networkId)
      if (leader === undefined) throw new Error(`no leader of ${networkId}`)
      let at = 0
      const kill = async () => {
        out.add(leader)
        at = Date.now()
        await leader.stop("SIGKILL")
      }
      const note = await aim(leader, kill)
      if (at === 0) await kill()
      const h = await handover(networkId, leader, at, 30_000)
      const fault: Fault = { name, at, end: Date.now(), handovers: [{ networkId, ms: h.ms }], bound: BOUND_KILL_MS,
        note: `${leader.name} killed ${note}; ${h.next?.name ?? "nobody"} leads` }
      faults.push(fault)
      log(`${name}: ${fault.note} after ${h.ms} ms`)
      await sleep(5_000)
      await restart(leader)
      fault.end = Date.now()
      log(`${name}: ${leader.name} restarted`)
    }
    const fabricState = async (state: ReadonlyArray<string>) =>
      (await query<{ id: string }>(db.url, "SELECT id FROM anchor_batches WHERE network_id = $1 AND state = ANY($2) LIMIT 1", [fabricId, state]))[0]

    let limitsShared = { accepted: 0, seconds: 0 }
    let limitsAlone = { accepted: 0, seconds: 0 }
    const limitedAccepted: Array<Accepted> = []
    /** The limited key at 4N/s round-robin for `seconds`: accepted per second in total. */
    const probeLimit = async (seconds: number) => {
      const c = openLoopClient({ rotation, key: limitedKey, ratePerSecond: 4 * LIMIT, chainOf: () => "evm", tag: "limit" })
      await sleep(seconds * 1000)
      await c.stop()
      limitedAccepted.push(...c.accepted)
      return { accepted: c.accepted.length, seconds, statuses: Object.fromEntries(c.statuses), fiveXx: c.fiveXx.length }
    }

    const schedule = async () => {
      await sleep(20_000)
      limitsShared = await probeLimit(10)
      log(
        `limited key (${LIMIT}/s) at ${4 * LIMIT}/s across ${rotation().length} nodes, Redis up: ${
          (limitsShared.accepted / limitsShared.seconds).toFixed(1)
        }/s accepted`
      )
      await sleep(5_000)

      await killLeader("kill -9 EVM leader after broadcast", evmId, async (leader, kill) =>
        (await rpc.aim(leader.name, "after", kill, 30_000)) ? "with its transaction on chain, unacknowledged" : "(no broadcast within 30 s: not aimed)")
      await sleep(10_000)
      await killLeader("kill -9 EVM leader between cut and broadcast", evmId, async (leader, kill) =>
        (await rpc.aim(leader.name, "hold", kill, 30_000)) ? "with its signed transaction stored, not broadcast" : "(no broadcast within 30 s: not aimed)")
      await sleep(10_000)
      for (const [name, states] of [["kill -9 Fabric leader after submit", ["SENT", "MINED"]], ["kill -9 Fabric leader between cut and submit", [
        "PENDING"
      ]]] as const) {
        await killLeader(name, fabricId, async (_, kill) => {
          const seen = await pollFor(() =>
            fabricState(states), 30_000, 20)
          await kill()
          return seen === undefined ? "(no such batch seen within 30 s: not aimed)" : `with batch ${seen.id} ${states.join("/")} (seen 0–20 ms before)`
        })
        await sleep(10_000)
      }

      // Paused past the lease, then woken.
      {
        const leader = (await leaderOf(nodes, evmId))!
        const led = [evmId, ...(await leaderOf([leader], fabricId, 500)) ? [fabricId] : []]
        out.add(leader)
        const at = Date.now()
        leader.signal("SIGSTOP")
        const hs = await Promise.all(led.map((n) =>
          handover(n, leader, at, BOUND_PAUSE_MS + 20_000)
        ))
        await sleep(Math.max(0, at + LEADER_LEASE_MS + 2_000 - Date.now()))
        const linesBefore = leader.lines.length
        leader.signal("SIGCONT")
        const asFollower = await pollFor(async () => (await leaderOf([leader], evmId, 200)) === undefined ? true : undefined, 15_000)
        await sleep(3_000)
        const fenced = leader.lines.slice(linesBefore).filter((l) => /leadership lost|LeadershipLost/i.test(l)).length
        out.delete(leader)
        const note = `${leader.name} paused ${Math.round((Date.now() - at) / 1000)} s; woken: ${asFollower ? "a follower" : "STILL LEADING"}, ` +
          `${fenced} write(s) refused by the fence after waking`
        faults.push({ name: "SIGSTOP leader past its lease", at, end: Date.now(), handovers: hs.map(({ networkId, ms }) => ({ networkId, ms })),
          bound: BOUND_PAUSE_MS, note })
        log(`SIGSTOP: ${note}; handover ${hs.map((h) => `${h.networkId} ${h.ms} ms`).join(", ")}`)
      }
      await sleep(10_000)

      // Redis gone for 30 s.
      {
        const at = Date.now()
        if (redis !== undefined) await redis.down()
        else redisServer.stop()
        log(`Redis ${redis === undefined ? "stopped" : "cut off"} for ${REDIS_DOWN_MS / 1000} s`)
        await sleep(5_000)
        limitsAlone = await probeLimit(10)
        log(`limited key at ${4 * LIMIT}/s, Redis gone: ${(limitsAlone.accepted / limitsAlone.seconds).toFixed(1)}/s accepted`)
        await sleep(Math.max(0, at + REDIS_DOWN_MS - Date.now()))
        if (redis !== undefined) await redis.up()
        else redisServer.start()
        const back = await pollFor(() => nodes.every((n) => n.lines.some((l) => l.includes("answers again"))) ? true : undefined, 30_000, 200)
        faults.push({ name: "Redis gone 30 s", at, end: Date.now(), handovers: [], bound: 0,
          note: `limits per node meanwhile; every node back to shared counts: ${
            back ? `yes, ${Math.round((Date.now() - at - REDIS_DOWN_MS) / 1000)} s after Redis returned` : "NO (30 s)"
          }` })
      }
      await sleep(10_000)

      // Rolling restart, one node at a time (the same build restarted).
      for (const node of [...nodes]) {
        const at = Date.now()
        const leads = await Promise.all([evmId, fabricId].map(async (n) => (await leaderOf([node], n, 300)) !== undefined ? n : undefined))
        out.add(node)
        await sleep(1_000) // what was sent to it is answered
        await node.stop("SIGTERM")
        const hs = await Promise.all(leads.filter((n) => n !== undefined).map((n) => handover(n!, node, at, 30_000)))
        await restart(node)
        faults.push({ name: `rolling restart ${node.name}`, at, end: Date.now(), handovers: hs.map(({ networkId, ms }) => ({ networkId, ms })),
          bound: BOUND_KILL_MS + 1_000, note: `SIGTERM, started again in ${Math.round((Date.now() - at) / 100) / 10} s` })
        log(`rolling restart: ${node.name} back${hs.length ? `; handover ${hs.map((h) => `${h.networkId} ${h.ms} ms`).join(", ")}` : ""}`)
        await sleep(5_000)
      }
    }
    await schedule()
    await sleep(Math.max(0, t0 + SECONDS * 1000 - Date.now()))
    await client.stop()
    clearInterval(progress)
    const accepted = [...client.accepted, ...limitedAccepted]
    log(`load stopped: ${accepted.length} accepted; waiting for every record's anchor.confirmed (at most 180 s)`)
    await pollFor(() => accepted.every((a) => receiver.confirmed.has(a.recordId)) ? true : undefined, 180_000, 500)
    await sleep(3_000) // late redeliveries
    log("checking: records, anchors, roots on chain, proofs against the chains, webhooks")
    const checks = await finalChecks({ databaseUrl: db.url, accepted, chains: { evm: { networkId: evmId, rpcUrl: anvil.rpcUrl, contract: d.address }, fabric },
      receiver, base: nodes[0]!.base, log })
    const delays = accepted.map((a) => (receiver.confirmed.get(a.recordId)?.firstAt ?? Infinity) - a.at).sort((x, y) => x - y)
    const delayed = delays.filter((ms) => ms > DELAYED_MS).length
    // A 503 with Retry-After is the node shedding load or a request outliving its deadline on the
    // database (docs/operating.md): counted and shown; any other 5xx fails the soak.
    const shed = client.fiveXx.filter((f) => f.status === 503 && f.retryAfter !== undefined)
    const fiveXx = client.fiveXx.length - shed.length
    for (const f of client.fiveXx.slice(0, 5)) {
      log(`5xx from ${f.node} at +${Math.round((f.at - t0) / 1000)}s: ${f.status} (Retry-After ${f.retryAfter ?? "none"}) ${f.body}`)
    }
    const failures = failedChecks(checks)
    const handoverLine = (f: Fault) =>
      f.handovers.map((h) => `${h.networkId} ${h.ms === undefined ? "none" : `${(h.ms / 1000).toFixed(1)} s`}`).join(", ") || "—"
    const allHandovers = faults.flatMap((f) => f.handovers.map((h) => ({ ...h, bound: f.bound })))
    const overBound = allHandovers.filter((h) => h.ms === undefined || h.ms > h.bound)
    const sharedRate = limitsShared.accepted / Math.max(1, limitsShared.seconds)
    const aloneRate = limitsAlone.accepted / Math.max(1, limitsAlone.seconds)
    const sharedOk = sharedRate <= LIMIT * 1.3 && sharedRate >= LIMIT * 0.7
    if (delays.at(-1)! > BOUND_DELAY_MS) {
      failures.push(`a record took ${(delays.at(-1)! / 1000).toFixed(0)} s to its webhook (bound ${BOUND_DELAY_MS / 1000} s)`)
    }
    if (fiveXx > 0) failures.push(`${fiveXx} 5xx answers`)
    if (overBound.length > 0) failures.push(`${overBound.length} handovers over their bound`)
    if (!sharedOk) failures.push(`shared limit: ${sharedRate.toFixed(1)}/s for a key limited to ${LIMIT}/s`)
    // Redis gone: each node counts alone, so more than N/s in total, never more than N per node.
    if (!(aloneRate > LIMIT * 1.3 && aloneRate <= LIMIT * NODES * 1.3)) {
      failures.push(`limit with Redis gone: ${aloneRate.toFixed(1)}/s (per-node counting expected)`)
    }
    if (receiver.counts.badSignature > 0) failures.push(`${receiver.counts.badSignature} deliveries with a bad signature`)

    const machine = `${Os.cpus()[0]?.model ?? "cpu"} × ${Os.cpus().length}, ${
      (Os.totalmem() / 2 ** 30).toFixed(0)
    } GiB, Node ${process.version}, load average ${Os.loadavg().map((l) => l.toFixed(1)).join(" ")}`
    const lines = [
      "",
      `## soak:cluster — ${new Date().toISOString()}`,
      "",
      `Machine: ${machine} (shared with other work: timings are noisy). ${NODES} \`anchord start\` nodes on the machine's PostgreSQL 15 (a fresh database) and Redis ` +
      `(${
        REAL_REDIS ? "stopped for real" : "through a TCP proxy the soak cuts"
      }), anvil (automine, confirmations 1, through an RPC proxy that aims kills), the Fabric dev peer; ` +
      `open-loop round-robin client at ${RATE} records/s (3 evm : 1 fabric : 1 hybrid) for ${
        Math.round((Date.now() - t0) / 1000)
      } s in all; webhook receiver checking signatures. ` +
      `Nodes killed or paused leave the client's rotation (as behind a load balancer's health check). The rolling restart restarts the same build.`,
      "",
      "| fault | handover (per network) | bound | what happened |",
      "|---|---|---:|---|",
      ...faults.map((f) => `| ${f.name} | ${handoverLine(f)} | ${f.bound ? `${f.bound / 1000} s` : "—"} | ${f.note} |`),
      "",
      `Handover p50 / max: kill -9 ${secsOf(allHandovers.filter((h) => h.bound === BOUND_KILL_MS))}; SIGSTOP ${
        secsOf(allHandovers.filter((h) => h.bound === BOUND_PAUSE_MS))
      }; ` +
      `rolling restart ${secsOf(allHandovers.filter((h) => h.bound === BOUND_KILL_MS + 1_000))}.`,
      "",
      `Accepted (202) ${checks.accepted}: missing **${checks.missing}**, not ANCHORED ${checks.notAnchored}, wrong anchors (a network missing or twice) **${checks.wrongAnchors}**, ` +
      `roots twice on chain **${checks.rootsTwiceOnChain}** / in the database ${checks.rootsTwiceInDb}, proofs verified against the chains ${checks.proofsChecked} (failing **${checks.proofsFailing}**), ` +
      `without a signed anchor.confirmed **${checks.unconfirmed}**, duplicate anchor.confirmed (two event ids) **${checks.duplicateEvents}**, redeliveries of one event ${checks.redeliveries}, ` +
      `bad signatures ${receiver.counts.badSignature}. 5xx answered **${fiveXx}** other than 503 with Retry-After, and ${shed.length} of those (${
        [...new Set(shed.map((f) => {
          try {
            return String(JSON.parse(f.body).error)
          } catch {
            return f.body.slice(0, 80)
          }
        }))].join("; ") || "none"
      }); no answer (node killed under the request) ${client.noAnswer}; ` +
      `answers ${JSON.stringify(Object.fromEntries(client.statuses))}.`,
      `POST → anchor.confirmed p50 / p99 / max ${(pct(delays, 50) / 1000).toFixed(1)} / ${(pct(delays, 99) / 1000).toFixed(1)} / ${
        (delays.at(-1)! / 1000).toFixed(1)
      } s; ` +
      `delayed over ${DELAYED_MS / 1000} s: ${delayed} records (bound on any: ${BOUND_DELAY_MS / 1000} s).`,
      `Shared limit, a key at ${LIMIT}/s driven at ${4 * LIMIT}/s round-robin: ${sharedRate.toFixed(1)}/s accepted with Redis (expected ${LIMIT} ± 30%), ` +
      `${aloneRate.toFixed(1)}/s with Redis gone (per-node counting: up to ${LIMIT} × the nodes in rotation).`,
      "",
      failures.length === 0 ? "**All held.**" : `**Did not hold:** ${failures.join("; ")}.`,
      ...checks.examples.map((e) => `- ${e}`),
      ""
    ]
    console.log(lines.join("\n"))
    if (process.env.SOAK_NO_APPEND !== "1") {
      Fs.appendFileSync(Path.join(root, "docs/benchmarks/runs.md"), lines.join("\n"))
      log("appended to docs/benchmarks/runs.md")
    }
    if (failures.length === 0) await cleanup().then(() => Fs.rmSync(tmp, { recursive: true, force: true }))
    return failures.length === 0
  } finally {
    await cleanup()
  }
}

const secsOf = (hs: ReadonlyArray<{ ms: number | undefined }>) => {
  const ms = hs.map((h) => h.ms ?? Infinity).sort((a, b) => a - b)
  return ms.length === 0 ? "—" : `${(pct(ms, 50) / 1000).toFixed(1)} / ${(ms.at(-1)! / 1000).toFixed(1)} s`
}

main().then((ok) => process.exit(ok ? 0 : 1), (e) => {
  console.error(e)
  process.exit(1)
})
