/**
 * `anchord monitor` against a real chain (anvil, AnchorRegistry from the committed artifact) and a log served over
 * HTTP as C2SP tlog-tiles: an honest log passes (exit 0, one line per checkpoint); each lie of a lying node is caught
 * with its reason (exit 1): a tile changed, a checkpoint signed over another root, an entry changed, a checkpoint the
 * chain never accepted, a history rewritten consistently with itself. The log here is built in memory with src/tlog
 * (the node's own store is tested on its own); the chain holds what the contract accepted.
 */
import * as ChildProcess from "node:child_process"
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import * as Path from "node:path"
import { Effect, Fiber, Result } from "effect"
import { createPublicClient, createWalletClient, type Hex, http } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { toHex } from "../../src/anchoring/rfc9162.ts"
import { anchorRegistryAbi, deployAnchorRegistry } from "../../src/evm/deploy.ts"
import { runMonitor } from "../../src/monitor/monitor.ts"
import { httpTiles } from "../../src/monitor/tiles.ts"
import { rpcClient } from "../../src/verify/evm.ts"
import { signCheckpoint } from "../../src/tlog/checkpoint.ts"
import { leafHash } from "../../src/tlog/hash.ts"
import { consistencyProof, memoryHashReader, merkleTreeHash } from "../../src/tlog/memory.ts"
import { ed25519NoteSigner } from "../../src/tlog/note.ts"
import { ENTRIES_LEVEL, formatEntryBundle, parseTilePath, readTileData } from "../../src/tlog/tiles.ts"
import { appendHashes } from "../../src/tlog/tree.ts"
import { logRun } from "../support/process.ts"
import { waitFor } from "../support/wait.ts"
import { type Anvil, startAnvil } from "../evm/anvil.ts"

const hx = (bytes: Uint8Array): Hex => `0x${toHex(bytes)}`
const ORIGIN = "anchord.test/log/anvil"

/** A log in memory: its entries (record hashes) and stored hashes, grown batch by batch. */
const memoryLog = () => {
  const entries: Array<Uint8Array> = []
  const stored: Array<Uint8Array> = []
  return {
    entries,
    stored,
    /** The size served: the node publishes a checkpoint once the chain holds it. */
    published: 0,
    append: async (batch: ReadonlyArray<Uint8Array>) => {
      stored.push(...await Effect.runPromise(appendHashes(entries.length, batch, memoryHashReader(stored))))
      entries.push(...batch)
    }
  }
}

/** What a lying node may change in what it serves. */
interface Lies {
  tile?: (path: string, bytes: Uint8Array) => Uint8Array
  checkpoint?: () => string
}

/** The log's tiles over HTTP, as a node serves them (checkpoint, hash tiles, entry bundles). */
const serveLog = async (log: ReturnType<typeof memoryLog>, sign: (size: number, root: Uint8Array) => string, lies: Lies) => {
  const server = Http.createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? "/").replace(/^\/log\//, "")
      if (path === "checkpoint") {
        return res.end(lies.checkpoint?.() ?? sign(log.published, merkleTreeHash(log.entries.slice(0, log.published).map((e) => leafHash(e)))))
      }
      const tile = parseTilePath(path)
      if (Result.isFailure(tile)) return res.writeHead(404).end()
      const t = tile.success
      let bytes: Uint8Array
      if (t.level === ENTRIES_LEVEL) bytes = formatEntryBundle(log.entries.slice(t.n * 256, t.n * 256 + t.width))
      else bytes = await Effect.runPromise(readTileData(t, memoryHashReader(log.stored)))
      res.end(lies.tile?.(path, bytes) ?? bytes)
    })().catch(() => res.writeHead(500).end())
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/log`, close: () => server.close() }
}

const recordHashes = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => new Uint8Array(Crypto.createHash("sha256").update(`${tag}:${i}`).digest()))
    .sort((a, b) => Buffer.compare(a, b))

describe("anchord monitor", () => {
  let anvil: Anvil
  let registry: Hex
  const log = memoryLog()
  const keys = Crypto.generateKeyPairSync("ed25519")
  const signer = ed25519NoteSigner(ORIGIN, keys.privateKey)
  const sign = (size: number, root: Uint8Array) => signCheckpoint({ origin: ORIGIN, size, root }, [signer])
  const lies: Lies = {}
  let served: Awaited<ReturnType<typeof serveLog>>
  /** Appends a batch to the log and anchors it with the log's checkpoint after it. */
  let anchorBatch: (n: number, tag: string) => Promise<void>

  beforeAll(async () => {
    anvil = await startAnvil()
    const key = await anvil.fundedKey()
    const deployment = await deployAnchorRegistry({ rpcUrl: anvil.rpcUrl, privateKey: key })
    registry = deployment.address
    const chain = { id: deployment.chainId, name: "anvil", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [anvil.rpcUrl] } } }
    const wallet = createWalletClient({ account: privateKeyToAccount(key), transport: http(anvil.rpcUrl), chain })
    const publicClient = createPublicClient({ transport: http(anvil.rpcUrl) })
    anchorBatch = async (n, tag) => {
      const batch = recordHashes(n, tag)
      const oldSize = log.entries.length
      await log.append(batch)
      const leaves = log.entries.map((e) => leafHash(e))
      const batchRoot = merkleTreeHash(batch.map((e) => leafHash(e)))
      const proof = oldSize === 0 ? [] : consistencyProof(leaves, oldSize).map(hx)
      const hash = await wallet.writeContract({
        address: registry,
        abi: anchorRegistryAbi,
        functionName: "anchorWithCheckpoint",
        args: [hx(Crypto.randomBytes(32)), n, hx(batchRoot), BigInt(oldSize), hx(merkleTreeHash(leaves)), proof],
        account: wallet.account,
        chain
      })
      expect((await publicClient.waitForTransactionReceipt({ hash })).status).toBe("success")
      log.published = log.entries.length
    }
    // Batches across tile boundaries (256 leaves a tile).
    for (const [k, n] of [5, 300, 7, 260, 1].entries()) await anchorBatch(n, `batch${k}`)
    served = await serveLog(log, sign, lies)
  }, 60_000)
  afterAll(async () => {
    served?.close()
    await anvil?.stop()
  })

  const audit = async (key = signer.verifierKey) => {
    const lines: Array<string> = []
    const exit = await Effect.runPromise(runMonitor({
      rpc: rpcClient(anvil.rpcUrl),
      registry,
      tiles: httpTiles(served.url),
      key,
      fromBlock: 0n,
      follow: false,
      intervalMs: 0,
      print: (line) => Effect.sync(() => void lines.push(line))
    }).pipe(Effect.as("consistent"), Effect.catch((e: any) => Effect.succeed(`${e._tag}: ${e.message}`))))
    return { exit, lines }
  }

  it("an honest log: every checkpoint on chain is a prefix of the served one, every batch's entries where the chain says", async () => {
    const { exit, lines } = await audit()
    expect(exit).toBe("consistent")
    expect(lines.length).toBe(6)
    expect(lines[0]).toMatch(/^checkpoint of batch 1 \(block \d+, size 5\): root [0-9a-f]{16}… consistent; the batch's 5 entries in the log$/)
    expect(lines[4]).toMatch(/batch 5 .*size 573\)/)
    expect(lines[5]).toBe(
      `log ${ORIGIN}: size 573, root ${toHex(merkleTreeHash(log.entries.map((e) => leafHash(e)))).slice(0, 16)}…: 5 checkpoint(s) on chain checked`
    )
  })

  it("the CLI: exit 0 on an honest log, 1 with the reason on a lie, 2 when the log cannot be read", async () => {
    // Not spawnSync: the log is served by this process, which must keep answering.
    const run = (args: ReadonlyArray<string>) =>
      new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        const entry = Path.resolve(import.meta.dirname, "../../src/cli/main.ts")
        const all = ["monitor", "--rpc", anvil.rpcUrl, "--registry", registry, "--key", signer.verifierKey, ...args]
        ChildProcess.execFile(process.execPath, [entry, ...all], { encoding: "utf8", timeout: 60_000 }, (error, stdout, stderr) => {
          const result = { status: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr }
          logRun(`anchord ${all.join(" ")}`, result)
          resolve(result)
        })
      })
    const ok = await run(["--log", served.url])
    expect(ok.status).toBe(0)
    expect(ok.stdout.trim().split("\n").at(-1)).toMatch(/^log anchord.test\/log\/anvil: size 573/)
    lies.checkpoint = () => sign(573, new Uint8Array(32))
    try {
      const lie = await run(["--log", served.url])
      expect(lie.status).toBe(1)
      expect(lie.stderr).toMatch(/^anchord monitor: INCONSISTENT: the node's checkpoint of size 573 has root 0{64}; the chain accepted/m)
    } finally {
      delete lies.checkpoint
    }
    const down = await run(["--log", "http://127.0.0.1:9/log"])
    expect(down.status).toBe(2)
    expect(down.stderr).toMatch(/could not check/)
  })

  it("catches a tile changed, an entry changed, a checkpoint the chain never accepted, a rewritten history, a wrong key", async () => {
    const caught = async (what: string, set: () => void, reason: RegExp) => {
      set()
      try {
        const { exit } = await audit()
        expect(exit, what).toMatch(reason)
      } finally {
        delete lies.tile
        delete lies.checkpoint
      }
    }
    const flip = (bytes: Uint8Array, at: number) => {
      const copy = bytes.slice()
      copy[at] = copy[at]! ^ 1
      return copy
    }
    await caught("a hash tile changed", () => {
      lies.tile = (path, bytes) => path === "tile/0/001" ? flip(bytes, 40) : bytes
    }, /^TileMismatch|^Inconsistency/)
    await caught("an entry changed", () => {
      lies.tile = (path, bytes) => path === "tile/entries/001" ? flip(bytes, 2 + 34 * 9) : bytes
    }, /^Inconsistency: checkpoint of batch 2 .*: entry 265 does not hash to the log's leaf 265/)
    await caught("a checkpoint signed over another root", () => {
      lies.checkpoint = () => sign(573, Crypto.randomBytes(32))
    }, /^Inconsistency: the node's checkpoint of size 573 has root [0-9a-f]{64}; the chain accepted [0-9a-f]{64} \(batch 5/)
    await caught("a checkpoint the chain never accepted", () => {
      lies.checkpoint = () => sign(600, Crypto.randomBytes(32))
    }, /^Inconsistency: the node serves a checkpoint of size 600 .* that the chain never accepted \(the chain's newest: size 573\)/)
    await caught("another key", () => {
      lies.checkpoint = () =>
        signCheckpoint({ origin: ORIGIN, size: 573, root: merkleTreeHash(log.entries.map((e) => leafHash(e))) }, [
          ed25519NoteSigner(ORIGIN, Crypto.generateKeyPairSync("ed25519").privateKey)
        ])
    }, /^Inconsistency: the node's checkpoint is not signed by --key/)
    // A rewritten history, consistent with itself: the first batch's entries replaced, every tile and the checkpoint
    // recomputed. The chain's checkpoints are not prefixes of it.
    const forged = memoryLog()
    await forged.append(recordHashes(5, "forged"))
    await forged.append(log.entries.slice(5))
    forged.published = forged.entries.length
    const forgedRoot = merkleTreeHash(forged.entries.map((e) => leafHash(e)))
    const honest = await serveLog(forged, sign, {})
    try {
      const lines: Array<string> = []
      const exit = await Effect.runPromise(runMonitor({
        rpc: rpcClient(anvil.rpcUrl),
        registry,
        tiles: httpTiles(honest.url),
        key: signer.verifierKey,
        fromBlock: 0n,
        follow: false,
        intervalMs: 0,
        print: (line) => Effect.sync(() => void lines.push(line))
      }).pipe(Effect.as("consistent"), Effect.catch((e: any) => Effect.succeed(`${e._tag}: ${e.message}`))))
      expect(exit).toBe(
        `Inconsistency: the node's checkpoint of size 573 has root ${toHex(forgedRoot)}; the chain accepted ${
          toHex(merkleTreeHash(log.entries.map((e) => leafHash(e))))
        } (batch 5, block ${exit.match(/block (\d+)\)/)?.[1]})`
      )
    } finally {
      honest.close()
    }
    // A chain whose first checkpoint is not a prefix of the served log (our contract refuses such a checkpoint, so the
    // chain's answer is altered here, the one failure no real registry can cause): the monitor checks every step itself.
    const rpc = rpcClient(anvil.rpcUrl)
    const alteredRpc = {
      ...rpc,
      call: (method: string, params: ReadonlyArray<unknown>) =>
        Effect.map(rpc.call(method, params), (result: any) => {
          if (method !== "eth_getLogs") return result
          let first = true
          return result.map((l: any) => {
            if (!(first && l.topics.length === 2 && l.data.length === 130)) return l
            first = false
            return { ...l, data: `${l.data.slice(0, -2)}${l.data.endsWith("00") ? "01" : "00"}` }
          })
        })
    }
    const altered = await Effect.runPromise(runMonitor({
      rpc: alteredRpc,
      registry,
      tiles: httpTiles(served.url),
      key: signer.verifierKey,
      fromBlock: 0n,
      follow: false,
      intervalMs: 0,
      print: () => Effect.void
    }).pipe(Effect.as("consistent"), Effect.catch((e: any) => Effect.succeed(`${e._tag}: ${e.message}`))))
    expect(altered).toMatch(
      /^Inconsistency: checkpoint of batch 1 \(block \d+, size 5\): the node's log at size 5 has root [0-9a-f]{64}, the chain [0-9a-f]{64}: the log was rewritten$/
    )
    // Nothing left over: the honest log still passes.
    expect((await audit()).exit).toBe("consistent")
  })

  it("--follow: each new checkpoint on chain and served is audited as it comes, the older tree kept as its prefix", async () => {
    const lines: Array<string> = []
    const fiber = Effect.runFork(runMonitor({
      rpc: rpcClient(anvil.rpcUrl),
      registry,
      tiles: httpTiles(served.url),
      key: signer.verifierKey,
      fromBlock: 0n,
      follow: true,
      intervalMs: 200,
      print: (line) => Effect.sync(() => void lines.push(line))
    }))
    try {
      await waitFor("the first round", async () => lines.some((l) => /^log .*: size 573/.test(l)) || undefined, 20_000)
      await anchorBatch(40, "followed")
      await waitFor("the new checkpoint audited", async () => lines.some((l) => /^log .*: size 613/.test(l)) || undefined, 20_000)
      expect(lines.filter((l) => l.startsWith("checkpoint of batch 6"))).toEqual([
        expect.stringMatching(/size 613\): root .* consistent; the batch's 40 entries/)
      ])
      expect(lines.filter((l) => l.startsWith("checkpoint of batch 1 ")).length).toBe(1)
    } finally {
      await Effect.runPromise(Fiber.interrupt(fiber))
    }
  })
})
