/**
 * Soak of `npm start`'s restarts (issue 14): ten starts of `anchord dev` on one temporary data
 * directory, stopped alternately with SIGKILL and cleanly (SIGINT), with records (EVM and hybrid, one
 * soft-deleted) sending `anchor.confirmed` to a local webhook receiver, and CLI commands run beside
 * the node under load. Prints, at the end:
 *   - re-anchored: records whose anchors changed across a restart (expected 0),
 *   - proofs failing: proofs saved before a restart that no longer verify (expected 0),
 *   - duplicate anchor.confirmed: records with more than one anchor.confirmed event id (expected 0;
 *     a delivery retried after SIGKILL carries the same event id and is not a duplicate),
 *   - 503s: API answers 503 while CLI commands ran (expected 0), and CLI commands that failed.
 *
 *   npm run soak:dev [-- --rounds 10 --records 3]
 */
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Effect from "effect/Effect"
import { freePort } from "../src/dev/EmbeddedPostgres.ts"
import { readFabricProfile } from "../src/verify/command.ts"
import { rpcClient } from "../src/verify/evm.ts"
import { readInput } from "../src/verify/input.ts"
import { verifyInput } from "../src/verify/verify.ts"
import { type DevNode, runCli, startDevNode, tempDataDir } from "./dev-node.ts"

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : fallback
}
const ROUNDS = arg("rounds", 10)
const RECORDS = arg("records", 3)

const dataDir = tempDataDir("anchord-soak-")
const log = (line: string) => console.log(`[soak ${new Date().toISOString().slice(11, 19)}] ${line}`)

// The webhook receiver: anchor.confirmed event ids per record hash.
const confirmedIds = new Map<string, Set<string>>()
let deliveries = 0
const receiver = Http.createServer((req, res) => {
  req.resume()
  req.on("end", () => {
    deliveries++
    if (req.headers["x-service-event"] === "ANCHORED") {
      const hash = String(req.headers["x-service-hash"])
      const ids = confirmedIds.get(hash) ?? new Set()
      ids.add(String(req.headers["x-service-event-id"]))
      confirmedIds.set(hash, ids)
    }
    res.writeHead(200).end("ok")
  })
})
const receiverPort = await freePort()
await new Promise<void>((r) => receiver.listen(receiverPort, "127.0.0.1", () => r()))
const webhookUrl = `http://127.0.0.1:${receiverPort}/hook`

const api = async (node: DevNode, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${node.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${node.key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { status: res.status, json: await res.json().catch(() => undefined) as any }
}

const waitFor = async <A>(what: string, f: () => Promise<A | undefined>, timeoutMs = 90_000): Promise<A> => {
  const until = Date.now() + timeoutMs
  for (;;) {
    const v = await f().catch(() => undefined)
    if (v !== undefined) return v
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

interface Saved {
  readonly recordId: string
  readonly hash: string
  /** txHash per network, as first anchored. */
  readonly anchors: string
  readonly proof: unknown
  deleted: boolean
}
const saved: Array<Saved> = []
const anchorKey = (anchors: ReadonlyArray<{ networkId: string; txHash: string }>) => anchors.map((a) => `${a.networkId}:${a.txHash}`).sort().join(",")

let reanchored = 0
let proofsFailing = 0
let proofsChecked = 0
let unavailable = 0
let cliFailures = 0
let cliRuns = 0

const verifySaved = async (node: DevNode) => {
  const p = readFabricProfile(node.fabricProfile)
  const fabric = { endpoint: p.peerEndpoint, mspId: p.mspId, certPath: p.certPath, keyPath: p.keyPath, channel: p.channel, chaincode: p.chaincode }
  const rpc = rpcClient(node.rpcUrl, 10_000)
  for (const s of saved) {
    const report = await Effect.runPromise(verifyInput(readInput(s.proof), { rpcFor: () => rpc, fabric }))
    proofsChecked++
    if (report.exitCode !== 0) {
      proofsFailing++
      log(`proof of ${s.recordId} no longer verifies: ${JSON.stringify(report).slice(0, 400)}`)
    }
  }
}

const checkAnchorsKept = async (node: DevNode) => {
  const list = await api(node, "GET", "/v1/records?includeDeleted=true&limit=100")
  const byId = new Map<string, any>((list.json?.data?.records ?? []).map((r: any) => [r.recordId, r]))
  for (const s of saved) {
    const r = byId.get(s.recordId)
    if (r === undefined) throw new Error(`record ${s.recordId} missing from the list`)
    if (anchorKey(r.anchors) !== s.anchors || (r.status !== "ANCHORED" && r.status !== "DELETED")) {
      reanchored++
      log(`record ${s.recordId} changed: ${r.status} ${anchorKey(r.anchors)} (was ${s.anchors})`)
    }
  }
}

/** CLI commands beside the node while a client keeps reading: every 503 counted. */
const cliUnderLoad = async (node: DevNode) => {
  let running = true
  const load = (async () => {
    while (running) {
      const r = await api(node, "GET", "/v1/records?limit=5").catch(() => ({ status: 0 }))
      if (r.status === 503 || r.status === 0) unavailable++
    }
  })()
  for (const args of [["accounts", "list"], ["keys", "list"], ["migrate"]]) {
    const r = await runCli(dataDir, args)
    cliRuns++
    if (r.code !== 0) {
      cliFailures++
      log(`anchord ${args.join(" ")} failed (${r.code}): ${r.stderr.slice(0, 300)}`)
    }
  }
  running = false
  await load
  const health = await fetch(`${node.baseUrl}/v1/health`)
  if (!health.ok) {
    unavailable++
    log(`health after the CLI commands: ${health.status}`)
  }
}

try {
  for (let round = 1; round <= ROUNDS; round++) {
    const signal: NodeJS.Signals = round % 2 === 1 ? "SIGKILL" : "SIGINT"
    const started = Date.now()
    const node = await startDevNode(dataDir)
    log(`round ${round}/${ROUNDS}: node up in ${Date.now() - started} ms (${node.baseUrl}, chain ${node.rpcUrl})`)
    if (node.output().includes("dev chain was reset")) log("the node says the dev chain was reset")
    await checkAnchorsKept(node)
    await verifySaved(node)
    await cliUnderLoad(node)

    const created: Array<{ recordId: string; hash: string }> = []
    for (let i = 0; i < RECORDS; i++) {
      const r = await api(node, "POST", "/v1/anchor", {
        data: { soak: round, i, at: Date.now() },
        webhookUrl,
        ...(i === 0 ? { chain: "hybrid" } : {})
      })
      if (r.status !== 202) throw new Error(`POST /v1/anchor: ${r.status} ${JSON.stringify(r.json)}`)
      created.push({ recordId: r.json.data.recordId, hash: r.json.data.hash })
    }
    for (const c of created) {
      const record = await waitFor(`${c.recordId} ANCHORED`, async () => {
        const r = await api(node, "GET", `/v1/records/${c.recordId}`)
        return r.json?.data?.status === "ANCHORED" ? r.json.data : undefined
      })
      const proof = await api(node, "GET", `/v1/records/${c.recordId}/proof`)
      saved.push({ recordId: c.recordId, hash: c.hash, anchors: anchorKey(record.anchors), proof: proof.json, deleted: false })
    }
    // Its anchor.confirmed delivered before the stop: a second one after a restart is a duplicate.
    await waitFor("anchor.confirmed deliveries", async () => created.every((c) => confirmedIds.has(c.hash)) ? true : undefined)
    if (round === 2) {
      const victim = saved[0]
      if ((await api(node, "DELETE", `/v1/records/${victim.recordId}`)).status !== 200) throw new Error("soft delete failed")
      victim.deleted = true
      log(`soft-deleted ${victim.recordId}`)
    }
    await node.stop(signal)
    log(`round ${round}: stopped with ${signal}; ${saved.length} records, ${deliveries} deliveries so far`)
  }
  // One more start: what the last stop left must still hold.
  const last = await startDevNode(dataDir)
  await checkAnchorsKept(last)
  await verifySaved(last)
  // Late deliveries (retries after a kill) have had their chance by the end of a start + checks.
  await last.stop("SIGINT")
} finally {
  receiver.close()
}

const duplicates = [...confirmedIds.values()].filter((ids) => ids.size > 1).length
const missing = saved.filter((s) => !confirmedIds.has(s.hash)).length
console.log([
  "",
  `soak: ${ROUNDS} restarts (${Math.ceil(ROUNDS / 2)} SIGKILL, ${Math.floor(ROUNDS / 2)} clean), ${saved.length} records, ${deliveries} webhook deliveries`,
  `  re-anchored after a restart:      ${reanchored}`,
  `  earlier proofs failing:           ${proofsFailing} of ${proofsChecked} checks`,
  `  duplicate anchor.confirmed:       ${duplicates}   (records never confirmed: ${missing})`,
  `  503 / refused while CLI ran:      ${unavailable}   (CLI commands failed: ${cliFailures} of ${cliRuns})`,
  `  data directory:                   ${dataDir}`
].join("\n"))
const ok = reanchored === 0 && proofsFailing === 0 && duplicates === 0 && unavailable === 0 && cliFailures === 0 && missing === 0
if (ok) Fs.rmSync(dataDir, { recursive: true, force: true })
process.exitCode = ok ? 0 : 1
