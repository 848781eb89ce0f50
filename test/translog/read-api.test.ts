/**
 * The node's transparency log served as C2SP tlog-tiles (src/translog/http.ts, docs/transparency-log.md) by a real
 * node anchoring on anvil with checkpoints: the read API's answers (status codes, content types, cache headers,
 * access), then `anchord monitor`'s audit (src/monitor/monitor.ts) of the node's own `/log/<network>` against the
 * contract: consistent; and each lie told in the database (a stored hash changed, a published note re-signed over
 * another root, a note's root changed without its signature) caught.
 *   npx vitest run test/translog/read-api.test.ts
 */
import * as ChildProcess from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { ConfigProvider, Effect, Layer, Option, Result } from "effect"
import { PrometheusMetrics } from "effect/observability"
import type { Hex } from "viem"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeNodeLayer } from "../../src/app/layers.ts"
import { EvmNetworks } from "../../src/evm/config.ts"
import { readCheckpoints } from "../../src/verify/checkpoints.ts"
import { runMonitor } from "../../src/monitor/monitor.ts"
import { httpTiles } from "../../src/monitor/tiles.ts"
import { openCheckpoint, signCheckpoint } from "../../src/tlog/checkpoint.ts"
import { leafHash } from "../../src/tlog/hash.ts"
import { merkleTreeHash } from "../../src/tlog/memory.ts"
import { ed25519NoteSigner, parseVerifierKey } from "../../src/tlog/note.ts"
import { checkProofText } from "../../src/tlog/proofText.ts"
import { parseEntryBundle } from "../../src/tlog/tiles.ts"
import { rpcClient } from "../../src/verify/evm.ts"
import { query } from "../support/db.ts"
import { call, startNode, type TestNode } from "../support/node.ts"
import { type Anvil, startAnvil } from "../evm/anvil.ts"
import { allAnchored, deploy, freshDatabase, network, waitFor } from "../evm/support.ts"

const NET = "anvil-tiles"
const ORIGIN = `anchord.test/log/${NET}`
const IMMUTABLE = "public, max-age=31536000, immutable"

let anvil: Anvil
let pk: Hex
let contract: Hex
let chainId: number
let databaseUrl: string
let keyFile: string
const privateKey = Crypto.generateKeyPairSync("ed25519").privateKey
const signer = ed25519NoteSigner(ORIGIN, privateKey)
const nodes: Array<TestNode> = []

/** A node anchoring on the anvil network with checkpoints, its log signed by the test's key under PUBLIC_URL's host. */
const start = async (env: Record<string, string>) => {
  const evm = EvmNetworks.layerWith([network({
    networkId: NET,
    rpcUrl: anvil.rpcUrl,
    chainId,
    contractAddress: contract,
    confirmations: 1,
    batchMaxSize: 100,
    batchWindowMs: 200,
    pollIntervalMs: 150
  }, pk)])
  const node = await startNode({
    databaseUrl,
    config: { baseUrl: Option.some("https://anchord.test") },
    layer: makeNodeLayer(evm).pipe(Layer.provide(ConfigProvider.layerAdd(ConfigProvider.fromUnknown(env))))
  })
  nodes.push(node)
  return node
}

beforeAll(async () => {
  anvil = await startAnvil()
  pk = await anvil.fundedKey()
  const d = await deploy(anvil.rpcUrl, pk)
  contract = d.address
  chainId = d.chainId
  databaseUrl = await freshDatabase()
  keyFile = Path.join(Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-logkey-")), "log.key")
  Fs.writeFileSync(keyFile, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 })
}, 60_000)
afterAll(async () => {
  for (const n of nodes) await n.stop().catch(() => {})
  await anvil?.stop()
  if (keyFile !== undefined) Fs.rmSync(Path.dirname(keyFile), { recursive: true, force: true })
})

const get = (node: TestNode, path: string, init: RequestInit = {}) => fetch(`${node.baseUrl}/log/${NET}/${path}`, init)

/** Every published checkpoint's size and root, oldest first. */
const published = () =>
  query<{ size: number; root: string; note: string | null }>(databaseUrl,
    "SELECT size::int, encode(root, 'hex') AS root, note FROM log_checkpoints WHERE network_id = $1 ORDER BY size", [NET])

const audit = (node: TestNode, key = signer.verifierKey) =>
  Effect.runPromise(runMonitor({
    rpc: rpcClient(anvil.rpcUrl),
    registry: contract,
    tiles: httpTiles(`${node.baseUrl}/log/${NET}`),
    key,
    fromBlock: 0n,
    follow: false,
    intervalMs: 0,
    print: () => Effect.void
  }).pipe(Effect.as("consistent"), Effect.catch((e: any) => Effect.succeed(`${e._tag}: ${e.message}`))))

describe("the transparency log's read API on a real node", () => {
  let node: TestNode
  let entries: Array<string>
  let apiKey = ""
  const recordIds: Array<string> = []

  it("LOG_PUBLIC: nothing before the first checkpoint, then the signed note, tiles and entry bundles with their cache headers", async () => {
    node = await start({ LOG_KEY_FILE: keyFile, LOG_PUBLIC: "true" })
    const none = await call(node.baseUrl, "GET", `/log/${NET}/checkpoint`)
    expect([none.status, none.json]).toEqual([404, { success: false, errorCode: "NOT_FOUND", error: `No signed checkpoint of network ${NET} published yet` }])
    const key = (await node.createKey(await node.createAccount())).key
    apiKey = key
    const ids = recordIds
    for (const k of [0, 1, 2]) {
      const r = await call(node.baseUrl, "POST", "/v1/anchor/batch", { key, body: { records: Array.from({ length: 100 }, (_, i) => ({ data: { k, i } })) } })
      expect(r.status, JSON.stringify(r.json)).toBe(202)
      ids.push(...(r.json.data.results as Array<{ data: { recordId: string } }>).map((x) => x.data.recordId))
    }
    await waitFor("records ANCHORED", allAnchored(databaseUrl, ids), 60_000)
    await waitFor("300 leaves published", async () => (await published()).at(-1)?.size === 300, 30_000)

    const cp = await get(node, "checkpoint")
    expect(cp.status).toBe(200)
    expect(cp.headers.get("content-type")).toBe("text/plain; charset=utf-8")
    expect(cp.headers.get("cache-control")).toBe("public, max-age=10")
    const note = await cp.text()
    const opened = openCheckpoint(note, ORIGIN, [Result.getOrThrow(parseVerifierKey(signer.verifierKey))])
    expect(Result.isSuccess(opened), note).toBe(true)
    const latest = (await published()).at(-1)!
    expect(Result.getOrThrow(opened).checkpoint.size).toBe(300)
    expect(Buffer.from(Result.getOrThrow(opened).checkpoint.root).toString("hex")).toBe(latest.root)

    // The leaves: the entry bundles' record hashes, whose tree has the checkpoint's root.
    const full = await get(node, "tile/entries/000")
    expect([full.status, full.headers.get("content-type"), full.headers.get("cache-control")]).toEqual([200, "application/octet-stream", IMMUTABLE])
    const partial = await get(node, "tile/entries/001.p/44")
    expect([partial.status, partial.headers.get("cache-control")]).toEqual([200, "public, max-age=10"])
    const leaves = [...Result.getOrThrow(parseEntryBundle(new Uint8Array(await full.arrayBuffer()))),
      ...Result.getOrThrow(parseEntryBundle(new Uint8Array(await partial.arrayBuffer())))]
    expect(leaves.length).toBe(300)
    expect(Buffer.from(merkleTreeHash(leaves.map((e) => leafHash(e)))).toString("hex")).toBe(latest.root)
    entries = leaves.map((e) => Buffer.from(e).toString("hex"))

    const tile = await get(node, "tile/0/000")
    expect([tile.status, tile.headers.get("content-type"), tile.headers.get("cache-control")]).toEqual([200, "application/octet-stream", IMMUTABLE])
    const bytes = new Uint8Array(await tile.arrayBuffer())
    expect(bytes.length).toBe(256 * 32)
    expect(Buffer.from(bytes.subarray(0, 32))).toEqual(Buffer.from(leafHash(leaves[0]!)))
    const head = await get(node, "tile/0/001.p/44", { method: "HEAD" })
    expect([head.status, head.headers.get("content-length"), head.headers.get("cache-control")]).toEqual([200, String(44 * 32), "public, max-age=10"])
    expect((await get(node, "tile/1/000.p/1")).status).toBe(200)
  }, 120_000)

  it("refusals in the API's error body: outside the tree 404, a malformed path 400, another method 405, an unknown network 404", async () => {
    const refused = async (path: string, status: number, errorCode: string, error: RegExp, method = "GET") => {
      const r = await call(node.baseUrl, method, path)
      expect([r.status, r.json?.errorCode], path).toEqual([status, errorCode])
      expect(r.json.error, path).toMatch(error)
      expect(r.headers.get("content-type"), path).toMatch(/^application\/json/)
    }
    // A tile wider than the tree, one past its end, a level it does not reach, a bundle past its entries.
    await refused(`/log/${NET}/tile/0/001.p/45`, 404, "NOT_FOUND", /not in the log of anvil-tiles at its latest checkpoint \(size 300\)/)
    await refused(`/log/${NET}/tile/0/001`, 404, "NOT_FOUND", /not in the log/)
    await refused(`/log/${NET}/tile/0/002.p/1`, 404, "NOT_FOUND", /not in the log/)
    await refused(`/log/${NET}/tile/2/000.p/1`, 404, "NOT_FOUND", /not in the log/)
    await refused(`/log/${NET}/tile/entries/001`, 404, "NOT_FOUND", /not in the log/)
    // Malformed: not canonical, a width of 0 or 256, a level past 63, no index, junk.
    for (const p of ["tile/0/1", "tile/0/000.p/0", "tile/0/000.p/256", "tile/0/000.p/044", "tile/64/000", "tile/0", "tile/x/000", "tile/0/x001"]) {
      await refused(`/log/${NET}/${p}`, 400, "VALIDATION_ERROR", /^Not a log path: /)
    }
    await refused(`/log/${NET}/tiles/0/000`, 400, "VALIDATION_ERROR", /^Not a log path: /)
    await refused(`/log/${NET}/checkpoint`, 405, "METHOD_NOT_ALLOWED", /not allowed/, "POST")
    await refused("/log/nowhere/checkpoint", 404, "NOT_FOUND", /No transparency log for network nowhere/)
    await refused(`/log/${NET}`, 404, "NOT_FOUND", /No transparency log/)
    // Measured under one route label, whatever the path (labels never come from client input).
    const metrics = await node.runtime.runPromise(PrometheusMetrics.format())
    expect(metrics).toMatch(/route="\/log",status="400"/)
    expect(metrics).not.toMatch(/route="[^"]*tile/)
  })

  it("the monitor audits the node's own log against the contract: consistent", async () => {
    expect(await audit(node)).toBe("consistent")
  }, 60_000)

  it("a record's tlog-proof: its leaf in the checkpoint anchored with its batch, signed by the log key, that checkpoint on chain", async () => {
    const proofOf = (id: string, query = "") => fetch(`${node.baseUrl}/v1/records/${id}/log-proof${query}`, { headers: { authorization: `Bearer ${apiKey}` } })
    const id = recordIds[150]!
    const hash = (await call(node.baseUrl, "GET", `/v1/records/${id}`, { key: apiKey })).json.data.hash as string
    const verifier = Result.getOrThrow(parseVerifierKey(signer.verifierKey))
    const r = await proofOf(id)
    expect([r.status, r.headers.get("content-type")]).toEqual([200, "text/plain"])
    const text = await r.text()
    expect(text.startsWith("c2sp.org/tlog-proof@v1\nextra ")).toBe(true)
    const checked = Result.getOrThrow(checkProofText(text, Buffer.from(hash, "hex"), ORIGIN, [verifier]))
    const where = JSON.parse(new TextDecoder().decode(checked.proof.extra))
    expect(where).toMatchObject({ chainType: "evm", networkId: NET, contractAddress: contract.toLowerCase() })
    // The checkpoint is the one the chain accepted with the record's batch, in the block the proof names.
    const onChain = await Effect.runPromise(readCheckpoints(rpcClient(anvil.rpcUrl), contract, BigInt(where.blockNumber), BigInt(where.blockNumber)))
    const mine = onChain.find((c) => c.size === checked.checkpoint.size)
    expect(mine, JSON.stringify(where)).toBeDefined()
    expect(Buffer.from(mine!.root)).toEqual(Buffer.from(checked.checkpoint.root))
    expect(checked.proof.index).toBeGreaterThanOrEqual(mine!.size - mine!.leafCount)
    expect(checked.proof.index).toBeLessThan(mine!.size)
    // Against a later checkpoint, on request; not against one before its batch or one never published.
    const later = await proofOf(id, "?size=300")
    expect(later.status).toBe(200)
    expect(Result.getOrThrow(checkProofText(await later.text(), Buffer.from(hash, "hex"), ORIGIN, [verifier])).checkpoint.size).toBe(300)
    for (const [q, reason] of [["?size=1", /is before its batch's checkpoint/], ["?size=299", /no published checkpoint of 299 leaves/]] as const) {
      const refused = await call(node.baseUrl, "GET", `/v1/records/${id}/log-proof${q}`, { key: apiKey })
      expect([refused.status, refused.json.errorCode], q).toEqual([404, "NOT_FOUND"])
      expect(refused.json.error, q).toMatch(reason)
    }
    expect((await call(node.baseUrl, "GET", `/v1/records/${id}/log-proof?size=abc`, { key: apiKey })).status).toBe(400)

    // `anchord verify --tlog-proof`: the same checks from a file, without the node (its data hashed again here).
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-tlog-proof-"))
    try {
      const proofFile = Path.join(dir, "record.tlog-proof")
      const dataFile = Path.join(dir, "data.json")
      Fs.writeFileSync(proofFile, text)
      Fs.writeFileSync(dataFile, JSON.stringify({ k: 1, i: 50 }))
      const verify = (file: string, key = signer.verifierKey) =>
        new Promise<{ code: number; out: string }>((resolve) =>
          ChildProcess.execFile(process.execPath, [
            Path.resolve(import.meta.dirname, "../../src/cli/main.ts"),
            "verify",
            "--tlog-proof",
            file,
            "--log-key",
            key,
            "--data",
            dataFile,
            "--rpc",
            anvil.rpcUrl
          ], { encoding: "utf8", timeout: 60_000 }, (error, stdout, stderr) => {
            console.log(`$ anchord verify --tlog-proof ${file}  (exit ${error?.code ?? 0})\n${stdout}${stderr}`)
            resolve({ code: typeof error?.code === "number" ? error.code : 0, out: stdout + stderr })
          })
        )
      const ok = await verify(proofFile)
      expect(ok.code, ok.out).toBe(0)
      expect(ok.out).toMatch(/PASS +tlog\.signature/)
      expect(ok.out).toMatch(/PASS +tlog\.inclusion +the record hash is leaf \d+ of the checkpoint's tree/)
      expect(ok.out).toMatch(/PASS +tlog\.chain +accepted by 0x[0-9a-f]{40} with batch \d+ in block \d+/)
      expect(ok.out).toMatch(/^VERIFIED \(exit 0\)$/m)
      // Another leaf claimed, another key: not verified.
      const moved = Path.join(dir, "moved.tlog-proof")
      Fs.writeFileSync(moved, text.replace(/^index (\d+)$/m, (_, n) => `index ${Number(n) + 1}`))
      const wrongLeaf = await verify(moved)
      expect([wrongLeaf.code, /FAIL +tlog\.inclusion/.test(wrongLeaf.out)], wrongLeaf.out).toEqual([1, true])
      const otherKey = ed25519NoteSigner(ORIGIN, Crypto.generateKeyPairSync("ed25519").privateKey).verifierKey
      const wrongKey = await verify(proofFile, otherKey)
      expect([wrongKey.code, /FAIL +tlog\.signature/.test(wrongKey.out)], wrongKey.out).toEqual([1, true])
    } finally {
      Fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 90_000)

  it("and catches each lie told in the database: a stored hash, a note re-signed over another root, a note's root changed", async () => {
    // The first leaf's stored hash, one bit flipped (and back): tile 0/000 no longer rebuilds the root the chain holds.
    const flip = () =>
      query(databaseUrl, "UPDATE log_batches SET hashes = set_byte(hashes, 0, get_byte(hashes, 0) # 1) WHERE network_id = $1 AND start = 0", [NET])
    await flip()
    try {
      expect(await audit(node), "a stored hash changed").toMatch(/^Inconsistency: a tile does not match the checkpoint/)
    } finally {
      await flip()
    }
    // The published note replaced (and put back).
    const latest = (await published()).at(-1)!
    const setNote = (note: string) => query(databaseUrl, "UPDATE log_checkpoints SET note = $3 WHERE network_id = $1 AND size = $2", [NET, 300, note])
    const withNote = async (what: string, note: string, reason: RegExp) => {
      await setNote(note)
      try {
        expect(await audit(node), what).toMatch(reason)
      } finally {
        await setNote(latest.note!)
      }
    }
    await withNote("a note re-signed over another root", signCheckpoint({ origin: ORIGIN, size: 300, root: Crypto.randomBytes(32) }, [signer]),
      /^Inconsistency: the node's checkpoint of size 300 has root [0-9a-f]{64}; the chain accepted/)
    const edited = latest.note!.replace(/^(.*\n300\n)[^\n]+\n/, `$1${Crypto.randomBytes(32).toString("base64")}\n`)
    expect(edited).not.toBe(latest.note)
    await withNote("a note's root changed, its signature not", edited, /^Inconsistency: the node's checkpoint is not signed by --key/)
    expect(await audit(node), "the truth restored").toBe("consistent")
  }, 120_000)

  it("without LOG_PUBLIC: a key of the network's environment reads the log, no key is 401, a live key sees no log", async () => {
    await node.stop()
    const keyed = await start({ LOG_KEY_FILE: keyFile })
    const account = await keyed.createAccount()
    const test = (await keyed.createKey(account, "test")).key
    const live = (await keyed.createKey(account, "live")).key
    const anonymous = await call(keyed.baseUrl, "GET", `/log/${NET}/checkpoint`)
    expect([anonymous.status, anonymous.json.errorCode]).toEqual([401, "MISSING_API_KEY"])
    const ok = await get(keyed, "tile/entries/001.p/44", { headers: { authorization: `Bearer ${test}` } })
    expect(ok.status).toBe(200)
    expect(Result.getOrThrow(parseEntryBundle(new Uint8Array(await ok.arrayBuffer()))).map((e) => Buffer.from(e).toString("hex")))
      .toEqual(entries.slice(256))
    expect(ok.headers.get("x-ratelimit-limit")).not.toBeNull()
    const other = await call(keyed.baseUrl, "GET", `/log/${NET}/checkpoint`, { key: live })
    expect([other.status, other.json.errorCode, other.json.error]).toEqual([404, "NOT_FOUND", `No transparency log for network ${NET}`])
  }, 60_000)
})

describe("a node without a log key", () => {
  it("serves no checkpoint: a 404 naming LOG_KEY_FILE", async () => {
    const bare = await start({ LOG_PUBLIC: "true" })
    const r = await call(bare.baseUrl, "GET", `/log/${NET}/checkpoint`)
    expect([r.status, r.json.error]).toEqual([404, "This node signs no checkpoints: it has no log key (LOG_KEY_FILE)"])
    await bare.stop()
  }, 60_000)
})
