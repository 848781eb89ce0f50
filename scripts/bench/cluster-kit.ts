/**
 * What the cluster soaks share (issue 25: scripts/soak-cluster.ts, scripts/soak-failover.ts): a fresh
 * database on a PostgreSQL server, `anchord start` nodes as children with their logs in files, an
 * open-loop round-robin client, a webhook receiver that checks every signature, an RPC proxy in
 * front of anvil that can aim a kill at a broadcast, and the checks afterwards (every 202 exists, is
 * anchored once per network its type needs, no root twice on chain, every proof verifies against the
 * chains, every record got a valid signed `anchor.confirmed`).
 */
import * as ChildProcess from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Net from "node:net"
import * as Path from "node:path"
import { Effect, Redacted } from "effect"
import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "effect/sql"
import { createPublicClient, http, type Hex } from "viem"
import { anchoredEvent } from "../../src/evm/chain.ts"
import { rpcClient } from "../../src/verify/evm.ts"
import type { FabricOptions } from "../../src/verify/fabric.ts"
import { readInput } from "../../src/verify/input.ts"
import { verifyInput } from "../../src/verify/verify.ts"

const root = Path.resolve(import.meta.dirname, "../..")
const entry = Path.join(root, "src/cli/main.ts")
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))
export const pct = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!

/** Polls `f` every `everyMs` until it gives a value; undefined after `timeoutMs`. */
export const pollFor = async <A>(f: () => Promise<A | undefined> | A | undefined, timeoutMs: number, everyMs = 100): Promise<A | undefined> => {
  const until = Date.now() + timeoutMs
  for (;;) {
    const v = await Promise.resolve().then(f).catch(() => undefined)
    if (v !== undefined) return v
    if (Date.now() > until) return undefined
    await sleep(everyMs)
  }
}

/** Runs `f` with a SqlClient on `url`, closing its pool after. */
export const withSql = <A>(url: string, f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(Effect.scoped(Effect.flatMap(SqlClient.SqlClient, f).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 2 })))))
export const query = <A extends object = Record<string, unknown>>(url: string, text: string, params: ReadonlyArray<unknown> = []) =>
  withSql(url, (sql) => sql.unsafe<A>(text, params as Array<unknown>))

/** A new empty database `<prefix>_<random>` on the server of `adminUrl`; drop() removes it. */
export const freshDatabase = async (adminUrl: string, prefix = "anchord_soak") => {
  const name = `${prefix}_${Crypto.randomBytes(4).toString("hex")}`
  await withSql(adminUrl, (sql) => sql.unsafe(`CREATE DATABASE ${name}`))
  const u = new URL(adminUrl)
  u.pathname = `/${name}`
  return { name, url: u.toString(), drop: () => withSql(adminUrl, (sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)) }
}

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = Net.createServer()
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const a = server.address() as Net.AddressInfo
      server.close(() => resolve(a.port))
    })
  })

/** `anchord <args> --json` against env: its parsed output. */
export const anchordJson = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  JSON.parse(ChildProcess.execFileSync(process.execPath, [entry, ...args], { cwd: root, env: { ...process.env, ...env }, encoding: "utf8" }))

/** One `anchord start` child: its output appended to `logFile`, restartable with the same env. */
export interface ClusterNode {
  readonly name: string
  readonly port: number
  readonly base: string
  child: ChildProcess.ChildProcess
  /** Lines of its output since it (re)started, newest last (the structured JSON log). */
  readonly lines: Array<string>
  readonly alive: () => boolean
  readonly signal: (s: NodeJS.Signals) => void
  /** Sends the signal and resolves when the process has exited. */
  readonly stop: (s?: NodeJS.Signals) => Promise<void>
  /** Starts it again (same env and port); resolves when /v1/health answers. */
  readonly start: () => Promise<void>
}

export const startNode = async (name: string, env: Record<string, string>, logFile: string): Promise<ClusterNode> => {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const out = Fs.createWriteStream(logFile, { flags: "a" })
  const lines: Array<string> = []
  const node: ClusterNode = {
    name,
    port,
    base,
    lines,
    child: undefined as unknown as ChildProcess.ChildProcess,
    alive: () => node.child.exitCode === null && node.child.signalCode === null,
    signal: (s) => void node.child.kill(s),
    stop: async (s = "SIGTERM") => {
      if (!node.alive()) return
      const exited = new Promise((r) => node.child.once("exit", r))
      if (s !== "SIGCONT") node.child.kill("SIGCONT") // a paused process would not act on SIGTERM
      node.child.kill(s)
      await exited
    },
    start: async () => {
      lines.length = 0
      const child = ChildProcess.spawn(process.execPath, [entry, "start"], {
        cwd: root,
        env: { ...process.env, LOG_FORMAT: "json", ...env, PORT: String(port) },
        stdio: ["ignore", "pipe", "pipe"]
      })
      node.child = child
      out.write(`--- ${new Date().toISOString()} ${name} started (pid ${child.pid})\n`)
      for (const stream of [child.stdout!, child.stderr!]) {
        let rest = ""
        stream.on("data", (chunk: Buffer) => {
          out.write(chunk)
          const text = rest + chunk.toString("utf8")
          const parts = text.split("\n")
          rest = parts.pop() ?? ""
          for (const l of parts) lines.push(l)
          if (lines.length > 5000) lines.splice(0, lines.length - 5000)
        })
      }
      child.once("exit", (code, sig) => out.write(`--- ${new Date().toISOString()} ${name} exited (${code ?? sig})\n`))
      const up = await pollFor(async () => (await fetch(`${base}/v1/health`)).ok ? true : undefined, 60_000)
      if (up === undefined) throw new Error(`${name} did not answer on /v1/health within 60 s (log: ${logFile})`)
    }
  }
  await node.start()
  return node
}

/** The networks this node leads, per its /v1/health (undefined when it does not answer). */
export const ledBy = async (node: ClusterNode, timeoutMs = 1_000): Promise<ReadonlySet<string> | undefined> => {
  try {
    const r = await fetch(`${node.base}/v1/health`, { signal: AbortSignal.timeout(timeoutMs) })
    const json = await r.json() as any
    const nets: Array<{ networkId: string; status: string }> = json?.data?.networks ?? json?.networks ?? []
    return new Set(nets.filter((n) => n.status !== "follower").map((n) => n.networkId))
  } catch {
    return undefined
  }
}

/** The live node leading `networkId` (of those given), waiting up to timeoutMs. */
export const leaderOf = (nodes: ReadonlyArray<ClusterNode>, networkId: string, timeoutMs = 30_000, except?: ClusterNode) =>
  pollFor(async () => {
    for (const n of nodes) {
      if (n === except || !n.alive()) continue
      if ((await ledBy(n))?.has(networkId)) return n
    }
    return undefined
  }, timeoutMs, 100)

/** Receives webhooks, checks `x-webhook-signature` against the account's secret(s), keeps what came. */
export interface Receiver {
  readonly url: string
  /** Valid `anchor.confirmed` (ANCHORED) deliveries per record id: event ids, first arrival (ms epoch). */
  readonly confirmed: Map<string, { readonly eventIds: Set<string>; readonly firstAt: number; deliveries: number }>
  readonly counts: { deliveries: number; badSignature: number; unparsable: number }
  /** Secrets a signature may be made with (set once the account's webhook is configured). */
  readonly secrets: Array<string>
  readonly close: () => Promise<void>
}

const signatureOk = (secrets: ReadonlyArray<string>, body: string, header: unknown) => {
  if (typeof header !== "string") return false
  const given = Buffer.from(header, "utf8")
  return secrets.some((s) => {
    const expected = Buffer.from(`sha256=${Crypto.createHmac("sha256", s).update(body, "utf8").digest("hex")}`, "utf8")
    return given.length === expected.length && Crypto.timingSafeEqual(given, expected)
  })
}

export const startReceiver = async (): Promise<Receiver> => {
  const confirmed: Receiver["confirmed"] = new Map()
  const counts = { deliveries: 0, badSignature: 0, unparsable: 0 }
  const secrets: Array<string> = []
  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const at = Date.now()
      counts.deliveries++
      const body = Buffer.concat(chunks).toString("utf8")
      if (!signatureOk(secrets, body, req.headers["x-webhook-signature"])) {
        counts.badSignature++
        res.writeHead(401).end("bad signature")
        return
      }
      try {
        const json = JSON.parse(body) as { type?: string; recordId?: string }
        if (json.type === "ANCHORED" && typeof json.recordId === "string") {
          const seen = confirmed.get(json.recordId) ?? { eventIds: new Set<string>(), firstAt: at, deliveries: 0 }
          seen.eventIds.add(String(req.headers["x-service-event-id"] ?? req.headers["webhook-id"]))
          seen.deliveries++
          confirmed.set(json.recordId, seen)
        }
      } catch {
        counts.unparsable++
      }
      res.writeHead(200, { "content-type": "text/plain" }).end("ok")
    })
  })
  server.keepAliveTimeout = 65_000
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  return {
    url: `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}/hook`,
    confirmed,
    counts,
    secrets,
    close: () => new Promise((r) => server.close(() => r()))
  }
}

export type RecordChain = "evm" | "fabric" | "hybrid"
export interface Accepted {
  readonly recordId: string
  readonly chain: RecordChain
  readonly node: string
  /** The API key it was posted with (its proof is read with it). */
  readonly key: string
  /** When it was posted (ms epoch). */
  readonly at: number
}

/**
 * Open loop: request i goes at t0 + i / rate, whether or not earlier ones were answered, to the
 * next node in rotation (nodes taken out of rotation are skipped, as a load balancer's health check
 * would). Counts every answer by status; a connection refused or reset counts as `noAnswer`.
 */
export const openLoopClient = (options: {
  readonly rotation: () => ReadonlyArray<ClusterNode>
  readonly key: string
  readonly ratePerSecond: number
  /** Chain of request i (e.g. a fixed mix). */
  readonly chainOf: (i: number) => RecordChain
  readonly tag: string
  readonly timeoutMs?: number
}) => {
  const accepted: Array<Accepted> = []
  const statuses = new Map<number, number>()
  const fiveXx: Array<{ node: string; status: number; body: string; retryAfter: string | undefined; at: number }> = []
  let noAnswer = 0
  let running = true
  const agent = new Http.Agent({ keepAlive: true, maxSockets: 32 })
  const inFlight = new Set<Promise<void>>()
  const send = (node: ClusterNode, i: number) => {
    const chain = options.chainOf(i)
    const at = Date.now()
    const body = JSON.stringify({ data: { soak: options.tag, i, at }, chain })
    const p = new Promise<void>((resolve) => {
      const req = Http.request(`${node.base}/v1/anchor`, {
        method: "POST",
        agent,
        timeout: options.timeoutMs ?? 30_000,
        headers: { authorization: `Bearer ${options.key}`, "content-type": "application/json" }
      }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () => {
          const status = res.statusCode ?? 0
          statuses.set(status, (statuses.get(status) ?? 0) + 1)
          const text = Buffer.concat(chunks).toString("utf8")
          if (status === 202) {
            try {
              accepted.push({ recordId: JSON.parse(text).data.recordId, chain, node: node.name, key: options.key, at })
            } catch {
              fiveXx.push({ node: node.name, status, body: `202 without a record id: ${text.slice(0, 200)}`, retryAfter: undefined, at })
            }
          } else if (status >= 500) {
            const retryAfter = res.headers["retry-after"]
            fiveXx.push({ node: node.name, status, body: text.slice(0, 300), retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, at })
          }
          resolve()
        })
        res.on("error", () => {
          noAnswer++
          resolve()
        })
      })
      req.on("timeout", () => req.destroy(new Error("timeout")))
      req.on("error", () => {
        noAnswer++
        resolve()
      })
      req.end(body)
    }).finally(() => inFlight.delete(p))
    inFlight.add(p)
  }
  const done = (async () => {
    const t0 = Date.now()
    let turn = 0
    for (let i = 0; running; i++) {
      const wait = t0 + (i * 1000) / options.ratePerSecond - Date.now()
      if (wait > 1) await sleep(wait)
      const nodes = options.rotation()
      if (nodes.length === 0) continue
      send(nodes[turn++ % nodes.length]!, i)
    }
    await Promise.all([...inFlight])
    agent.destroy()
  })()
  return {
    accepted,
    statuses,
    fiveXx,
    get noAnswer() {
      return noAnswer
    },
    stop: async () => {
      running = false
      await done
    }
  }
}

/**
 * A JSON-RPC proxy in front of an EVM node, one path per anchord node (`/<name>`), so a fault can be
 * aimed at one node's broadcast: `aim(name, "hold")` keeps that node's next eth_sendRawTransaction
 * from the chain (signed and stored, never broadcast) and calls back; `aim(name, "after")` forwards
 * it and calls back with the chain's answer in hand, before the node sees it.
 */
export const startRpcProxy = async (upstream: string) => {
  const aims = new Map<string, { mode: "hold" | "after"; hit: () => Promise<void> }>()
  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", async () => {
      const body = Buffer.concat(chunks).toString("utf8")
      const name = (req.url ?? "/").slice(1)
      const aim = aims.get(name)
      const sends = aim !== undefined && body.includes("\"eth_sendRawTransaction\"")
      if (sends) aims.delete(name)
      if (sends && aim.mode === "hold") {
        await aim.hit() // the node is killed while its broadcast waits here; nothing goes upstream
        res.destroy()
        return
      }
      try {
        const r = await fetch(upstream, { method: "POST", headers: { "content-type": "application/json" }, body })
        const text = await r.text()
        if (sends) await aim.hit() // broadcast done, the node not told yet
        res.writeHead(r.status, { "content-type": "application/json" }).end(text)
      } catch {
        res.destroy()
      }
    })
  })
  const port = await freePort()
  await new Promise<void>((r) => server.listen(port, "127.0.0.1", r))
  return {
    urlFor: (name: string) => `http://127.0.0.1:${port}/${name}`,
    /** Resolves once `hit` has run for that node's next broadcast; undefined after timeoutMs (and the aim is withdrawn). */
    aim: (name: string, mode: "hold" | "after", hit: () => Promise<void>, timeoutMs: number) =>
      new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          aims.delete(name)
          resolve(false)
        }, timeoutMs)
        aims.set(name, { mode, hit: async () => {
          clearTimeout(timer)
          await hit()
          resolve(true)
        } })
      }),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections()
        server.close(() => r())
      })
  }
}

/**
 * A TCP proxy (in front of an RPC endpoint, Redis, …) a test or soak controls: `down()` closes the
 * listener and cuts connections, as a stopped server would, `up()` reopens it on the same port; `freeze()` keeps accepting connections and reading requests but answers nothing (a hung
 * endpoint: no error, no reset), `thaw()` ends the frozen connections and forwards again.
 */
export const tcpProxy = async (target: { host: string; port: number }) => {
  const sockets = new Set<Net.Socket>()
  const held = new Set<Net.Socket>()
  let frozen = false
  let server: Net.Server | undefined
  let port = 0
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = Net.createServer((client) => {
        if (frozen) {
          held.add(client)
          client.on("data", () => {}).on("error", () => {}).on("close", () => held.delete(client))
          return
        }
        const upstream = Net.connect(target.port, target.host)
        sockets.add(client)
        sockets.add(upstream)
        client.pipe(upstream)
        upstream.pipe(client)
        const close = () => {
          client.destroy()
          upstream.destroy()
          sockets.delete(client)
          sockets.delete(upstream)
        }
        client.on("error", close).on("close", close)
        upstream.on("error", close).on("close", close)
      })
      server.on("error", reject)
      server.listen(port, "127.0.0.1", () => {
        const a = server!.address()
        if (typeof a === "object" && a !== null) port = a.port
        resolve()
      })
    })
  await listen()
  return {
    get port() {
      return port
    },
    get url() {
      return `http://127.0.0.1:${port}`
    },
    down: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        sockets.clear()
        server?.close(() => resolve())
      }),
    up: () => listen(),
    freeze: () => {
      frozen = true
      // Connections already open stop forwarding too: their requests go unanswered.
      for (const s of sockets) {
        s.unpipe()
        s.removeAllListeners("data")
        s.on("data", () => {})
        held.add(s)
      }
    },
    thaw: () => {
      frozen = false
      for (const s of held) s.destroy()
      held.clear()
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server?.close(() => resolve())
      })
  }
}

export interface ChainsForChecks {
  readonly evm: { readonly networkId: string; readonly rpcUrl: string; readonly contract: Hex }
  /** The Fabric network's id and how `anchord verify` reaches it. */
  readonly fabric?: FabricOptions & { readonly networkId: string }
}

export interface FinalChecks {
  readonly accepted: number
  readonly missing: number
  readonly notAnchored: number
  /** Records with a wrong set of confirmed anchors (a network missing, or one in two batches). */
  readonly wrongAnchors: number
  /** Roots anchored more than once on the EVM chain (the contract's Anchored events), or twice in the database. */
  readonly rootsTwiceOnChain: number
  readonly rootsTwiceInDb: number
  readonly proofsChecked: number
  readonly proofsFailing: number
  /** Records without a validly signed anchor.confirmed at the receiver. */
  readonly unconfirmed: number
  /** Records whose anchor.confirmed came with more than one event id (a real duplicate). */
  readonly duplicateEvents: number
  /** Deliveries beyond one per record (redeliveries of the same event id: at-least-once, expected to be few). */
  readonly redeliveries: number
  readonly examples: Array<string>
}

/** The checks after a soak, on the database, the chains and the receiver. */
export const finalChecks = async (options: {
  readonly databaseUrl: string
  readonly accepted: ReadonlyArray<Accepted>
  readonly chains: ChainsForChecks
  readonly receiver: Receiver
  /** A node to read proofs from (with each record's key). */
  readonly base: string
  readonly verifyConcurrency?: number
  readonly log?: (line: string) => void
}): Promise<FinalChecks> => {
  const examples: Array<string> = []
  const note = (s: string) => {
    if (examples.length < 10) examples.push(s)
  }
  const ids = options.accepted.map((a) => a.recordId)
  const rows = await query<{ id: string; status: string }>(options.databaseUrl, "SELECT id, status FROM record_states WHERE id = ANY($1)", [ids])
  const status = new Map(rows.map((r) => [r.id, r.status]))
  const missing = ids.filter((id) => !status.has(id))
  missing.slice(0, 3).forEach((id) => note(`202'd record ${id} missing`))
  const notAnchored = ids.filter((id) => status.has(id) && status.get(id) !== "ANCHORED")
  notAnchored.slice(0, 3).forEach((id) => note(`record ${id} is ${status.get(id)}`))

  // Confirmed anchors per record and network (each must be in exactly one confirmed batch).
  const anchors = await query<{ record_id: string; network_id: string; n: number }>(options.databaseUrl, `
    SELECT a.record_id, a.network_id, count(*)::int AS n FROM anchors a JOIN anchor_batches b ON b.id = a.batch_id
    WHERE a.record_id = ANY($1) AND b.state = 'CONFIRMED' GROUP BY a.record_id, a.network_id`, [ids])
  const byRecord = new Map<string, Map<string, number>>()
  for (const a of anchors) byRecord.set(a.record_id, (byRecord.get(a.record_id) ?? new Map()).set(a.network_id, a.n))
  const fabricId = options.chains.fabric?.networkId
  const wrong = options.accepted.filter((a) => {
    const got = byRecord.get(a.recordId) ?? new Map<string, number>()
    const want = a.chain === "evm" ? [options.chains.evm.networkId] : a.chain === "fabric" ? [fabricId] : [options.chains.evm.networkId, fabricId]
    const ok = got.size === want.length && want.every((w) => w !== undefined && got.get(w) === 1)
    if (!ok) note(`record ${a.recordId} (${a.chain}): confirmed anchors ${JSON.stringify([...got])}`)
    return !ok
  })
  const twiceInDb = await query<{ n: number }>(options.databaseUrl, `
    SELECT count(*)::int AS n FROM (SELECT network_id, merkle_root FROM anchor_batches WHERE state = 'CONFIRMED'
      GROUP BY 1, 2 HAVING count(*) > 1) t`)

  const evm = createPublicClient({ transport: http(options.chains.evm.rpcUrl) })
  const logs = await evm.getLogs({ address: options.chains.evm.contract, event: anchoredEvent, fromBlock: 0n, toBlock: "latest" })
  const roots = logs.map((l) => String(l.args.root))
  const rootsTwiceOnChain = roots.length - new Set(roots).size

  // Every proof, as a user would verify it: GET /v1/records/{id}/proof, then `anchord verify`'s code against the chains.
  const rpc = rpcClient(options.chains.evm.rpcUrl, 10_000)
  let proofsChecked = 0
  let proofsFailing = 0
  const keyOf = new Map(options.accepted.map((a) => [a.recordId, a.key]))
  const anchoredIds = ids.filter((id) => status.get(id) === "ANCHORED")
  let next = 0
  const worker = async () => {
    while (next < anchoredIds.length) {
      const id = anchoredIds[next++]!
      try {
        let r = await fetch(`${options.base}/v1/records/${id}/proof`, { headers: { authorization: `Bearer ${keyOf.get(id)}` } })
        // A key with a low per-second limit (the limit probe's) is refused now and then: wait as told.
        for (let tries = 0; r.status === 429 && tries < 30; tries++) {
          await r.arrayBuffer()
          await sleep(1000 * Math.max(1, Number(r.headers.get("retry-after")) || 1))
          r = await fetch(`${options.base}/v1/records/${id}/proof`, { headers: { authorization: `Bearer ${keyOf.get(id)}` } })
        }
        const report = await Effect.runPromise(verifyInput(readInput(await r.json()), { rpcFor: () => rpc, fabric: options.chains.fabric }))
        proofsChecked++
        if (report.exitCode !== 0) {
          proofsFailing++
          note(`proof of ${id} does not verify: ${JSON.stringify(report).slice(0, 300)}`)
        }
      } catch (e) {
        proofsChecked++
        proofsFailing++
        note(`proof of ${id}: ${String(e).slice(0, 200)}`)
      }
      if (proofsChecked % 1000 === 0) options.log?.(`proofs verified: ${proofsChecked} of ${anchoredIds.length}`)
    }
  }
  await Promise.all(Array.from({ length: options.verifyConcurrency ?? 8 }, worker))

  const unconfirmed = ids.filter((id) => !options.receiver.confirmed.has(id))
  unconfirmed.slice(0, 3).forEach((id) => note(`record ${id}: no valid anchor.confirmed`))
  let duplicateEvents = 0
  let redeliveries = 0
  for (const id of ids) {
    const c = options.receiver.confirmed.get(id)
    if (c === undefined) continue
    if (c.eventIds.size > 1) duplicateEvents++
    redeliveries += c.deliveries - 1
  }
  return {
    accepted: ids.length,
    missing: missing.length,
    notAnchored: notAnchored.length,
    wrongAnchors: wrong.length,
    rootsTwiceOnChain,
    rootsTwiceInDb: twiceInDb[0]?.n ?? 0,
    proofsChecked,
    proofsFailing,
    unconfirmed: unconfirmed.length,
    duplicateEvents,
    redeliveries,
    examples
  }
}

/** The failures among the checks (empty: all held). */
export const failedChecks = (c: FinalChecks) =>
  ([
    ["202'd records missing", c.missing],
    ["not ANCHORED", c.notAnchored],
    ["wrong anchors", c.wrongAnchors],
    ["roots twice on chain", c.rootsTwiceOnChain],
    ["roots twice in the database", c.rootsTwiceInDb],
    ["proofs failing", c.proofsFailing],
    ["without a signed anchor.confirmed", c.unconfirmed],
    ["duplicate anchor.confirmed events", c.duplicateEvents]
  ] as const).filter(([, n]) => n > 0).map(([what, n]) => `${n} ${what}`)
