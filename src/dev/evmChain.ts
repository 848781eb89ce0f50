/**
 * The local chain of `anchord dev`: Anvil (npm `@foundry-rs/anvil`, a dev dependency with its
 * binary in node_modules), a child process on 127.0.0.1:8545 by default, with AnchorRegistry
 * deployed by a funded dev signer.
 *
 * Its state survives restarts: Anvil loads `<dataDir>/dev-chain/state.json` at start, dumps it
 * every second and at exit (`--state`, `--state-interval 1`), blocks and hashes included, so proofs
 * issued before a restart still verify and nothing is anchored twice. A node killed with SIGKILL
 * leaves its Anvil running (it keeps dumping); the next start stops that orphan (it dumps at exit)
 * and loads the file. Why Anvil and not EDR: docs/dev-chain.md.
 *
 * The node remembers the chain it anchored on (`<dataDir>/dev-chain.json`: genesis hash, contract
 * address). When the genesis hash changed or the contract code is missing (the state file was
 * deleted: a real reset), it deploys again (the dev signer's first transaction: same address) and
 * sends every batch of the dev network back to QUEUED, so records are re-anchored on the new chain.
 * Set EVM_NETWORKS to anchor on a chain of your own instead.
 *
 * `serveEdrChain` (Hardhat's in-memory EDR) stays for tests that want a throwaway in-process chain.
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Module from "node:module"
import * as Path from "node:path"
import { Config, Context, Effect, Layer, Option, Redacted } from "effect"
import type { Hex } from "viem"
import { BatchStore } from "../anchoring/BatchStore.ts"
import { AppConfig } from "../config.ts"
import { freePort } from "./EmbeddedPostgres.ts"
import { EvmNetworks, fromJson } from "../evm/config.ts"
import { deployAnchorRegistry, isAnchorRegistryDeployed } from "../evm/deploy.ts"
import { EvmStore } from "../evm/EvmStore.ts"

/** Hardhat's well-known development account #0 (public test key: never use it on a real chain). */
export const DEV_SIGNER_KEY: Hex = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
export const DEV_CHAIN_ID = 31337
export const DEV_NETWORK_ID = "hardhat-local"
/** The dev chain's genesis time (2023-11-14), the same at every start. */
export const DEV_GENESIS_TIMESTAMP = 1_700_000_000

interface Eip1193 {
  request(args: { method: string; params?: ReadonlyArray<unknown> }): Promise<unknown>
}

export interface DevChainServer {
  readonly rpcUrl: string
  readonly port: number
  readonly provider: Eip1193
}

const jsonRpcError = (id: unknown, e: unknown) => {
  const err = e as { code?: unknown; message?: unknown; data?: unknown }
  return {
    jsonrpc: "2.0",
    id: id ?? null,
    error: {
      code: typeof err?.code === "number" ? err.code : -32603,
      message: typeof err?.message === "string" ? err.message : String(e),
      ...(err?.data !== undefined ? { data: err.data } : {})
    }
  }
}

/** An in-process EDR chain on `host:port` (port 0: any free port), closed with the scope. */
export const serveEdrChain = (options: {
  readonly host: string
  readonly port: number
  readonly chainId?: number
  /** Bind any free port when `port` is taken (tried by binding: no check first that another process could outrun). */
  readonly fallback?: boolean
}) =>
  Effect.gen(function*() {
    const { provider } = yield* Effect.acquireRelease(
      Effect.promise(async () => {
        const { createHardhatRuntimeEnvironment } = await import("hardhat/hre")
        const hre = await createHardhatRuntimeEnvironment({
          networks: { anchordDev: { type: "edr-simulated", chainType: "l1", chainId: options.chainId ?? DEV_CHAIN_ID } }
        } as never)
        const connection = await hre.network.connect({ network: "anchordDev" } as never)
        return { provider: connection.provider as unknown as Eip1193, close: () => connection.close() }
      }),
      (c) => Effect.promise(() => c.close()).pipe(Effect.ignore)
    )
    const handle = async (body: unknown): Promise<unknown> => {
      if (Array.isArray(body)) return Promise.all(body.map(handle))
      const msg = body as { id?: unknown; method?: unknown; params?: unknown }
      try {
        const result = await provider.request({
          method: String(msg.method),
          params: Array.isArray(msg.params) ? msg.params : []
        })
        return { jsonrpc: "2.0", id: msg.id ?? null, result: result ?? null }
      } catch (e) {
        return jsonRpcError(msg.id, e)
      }
    }
    const server = Http.createServer((req, res) => {
      // Any origin, as Anvil answers: the public verify page checks anchors from the browser against it.
      res.setHeader("access-control-allow-origin", "*")
      if (req.method === "OPTIONS") {
        res.writeHead(204, { "access-control-allow-methods": "POST", "access-control-allow-headers": "content-type" }).end()
        return
      }
      if (req.method !== "POST") {
        res.writeHead(405).end()
        return
      }
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        let body: unknown
        try {
          body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
        } catch {
          res.writeHead(200, { "content-type": "application/json" })
            .end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } }))
          return
        }
        void handle(body).then((out) => {
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(out))
        })
      })
    })
    const port = yield* Effect.acquireRelease(
      Effect.callback<number, Error>((resume) => {
        server.once("error", (e: NodeJS.ErrnoException) => {
          if (e.code === "EADDRINUSE" && options.fallback === true && options.port !== 0) {
            server.once("error", (again) => resume(Effect.fail(again)))
            server.listen(0, options.host)
          } else {
            resume(Effect.fail(e))
          }
        })
        server.listen(options.port, options.host, () => {
          const a = server.address()
          resume(Effect.succeed(typeof a === "object" && a !== null ? a.port : options.port))
        })
      }),
      () =>
        Effect.callback<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )
    return { rpcUrl: `http://${options.host}:${port}`, port, provider } satisfies DevChainServer
  })

const require = Module.createRequire(import.meta.url)

/**
 * The Anvil binary: the platform package's executable itself (not the `anvil` npm wrapper, a node
 * process in between that would outlive us as an orphan on SIGKILL), else the wrapper.
 */
export const anvilBinary = (): string => {
  const arch = process.arch === "x64" ? "amd64" : process.arch
  const exe = process.platform === "win32" ? "anvil.exe" : "anvil"
  for (const name of [`@foundry-rs/anvil-${process.platform}-${arch}`, `@foundry-rs/anvil-${process.platform}-${process.arch}`]) {
    try {
      const file = require.resolve(`${name}/bin/${exe}`)
      if (Fs.existsSync(file)) return file
    } catch {}
  }
  try {
    return require.resolve("@foundry-rs/anvil/bin.mjs")
  } catch {
    throw new Error("Anvil is not installed: run `npm install` (it is the dev dependency @foundry-rs/anvil)")
  }
}

const rpcCall = async (rpcUrl: string, method: string, params: ReadonlyArray<unknown> = []): Promise<unknown> => {
  const response = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params })
  })
  const body = (await response.json()) as { result?: unknown; error?: { message: string } }
  if (body.error !== undefined) throw new Error(`${method}: ${body.error.message}`)
  return body.result
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const waitUntil = async (done: () => boolean, timeoutMs: number) => {
  const until = Date.now() + timeoutMs
  while (!done() && Date.now() < until) await new Promise((r) => setTimeout(r, 50))
  return done()
}

/** Whether `pid` is an Anvil serving this state file (not a recycled pid of something else). */
const isOurAnvil = (pid: number, stateFile: string): boolean => {
  try {
    const cmdline = Fs.readFileSync(`/proc/${pid}/cmdline`, "utf8")
    return cmdline.includes("anvil") && cmdline.includes(stateFile)
  } catch {
    try {
      const cmd = ChildProcess.execFileSync("ps", ["-p", String(pid), "-o", "command="], { encoding: "utf8" })
      return cmd.includes("anvil") && cmd.includes(stateFile)
    } catch {
      return false
    }
  }
}

/**
 * An Anvil left running by a node killed with SIGKILL: stopped with SIGTERM, so it dumps its whole
 * state at exit (nothing of the last second lost), before a new one loads that state.
 */
const stopOrphanAnvil = async (pidFile: string, stateFile: string, log: (line: string) => void) => {
  let pid: number
  try {
    pid = Number(JSON.parse(Fs.readFileSync(pidFile, "utf8")).pid)
  } catch {
    return
  }
  if (!Number.isInteger(pid) || !isAlive(pid) || !isOurAnvil(pid, stateFile)) return
  log(`dev chain: stopping the Anvil left running by a killed node (pid ${pid}); it saves its state first`)
  process.kill(pid, "SIGTERM")
  if (!(await waitUntil(() => !isAlive(pid), 15_000))) process.kill(pid, "SIGKILL")
}

/**
 * A state file cut short (the machine died during a dump) would make Anvil refuse to start: keep a
 * copy of the last good one and fall back to it.
 */
const checkStateFile = (stateFile: string, log: (line: string) => void) => {
  const backup = `${stateFile}.bak`
  const parses = (file: string) => {
    try {
      JSON.parse(Fs.readFileSync(file, "utf8"))
      return true
    } catch {
      return false
    }
  }
  if (!Fs.existsSync(stateFile)) return
  if (parses(stateFile)) {
    Fs.copyFileSync(stateFile, backup)
    return
  }
  Fs.renameSync(stateFile, `${stateFile}.corrupt`)
  if (Fs.existsSync(backup) && parses(backup)) {
    Fs.copyFileSync(backup, stateFile)
    log(`dev chain: ${stateFile} was unreadable (kept as .corrupt); using the previous copy`)
  } else {
    log(`dev chain: ${stateFile} was unreadable (kept as .corrupt); starting a new chain`)
  }
}

export interface AnvilChainOptions {
  readonly host: string
  /** 0: the port used last time if free, else any free port. */
  readonly port: number
  /** Where the state (state.json), the pid file and the port live. */
  readonly dir: string
  readonly chainId?: number
  readonly log?: (line: string) => void
}

/**
 * One start of Anvil on `port`: ready once it says it listens (its own bind, not another process that
 * answers on that port) and answers eth_chainId; or its stderr when it exited at start (e.g. the port taken).
 */
const startAnvil = async (o: {
  readonly host: string
  readonly port: number
  readonly chainId: number
  readonly stateFile: string
  readonly pidFile: string
}): Promise<
  | { readonly ok: true; readonly child: ChildProcess.ChildProcess; readonly exited: Promise<void> }
  | { readonly ok: false; readonly stderr: string }
> => {
  const child = ChildProcess.spawn(anvilBinary(), [
    "--host",
    o.host,
    "--port",
    String(o.port),
    "--chain-id",
    String(o.chainId),
    "--state",
    o.stateFile,
    "--state-interval",
    "1",
    // Anvil builds a genesis block at every start and keeps the loaded one too: with the time of
    // day in it, the state file ends up with several blocks 0 and a reload may pick another
    // (measured: docs/dev-chain.md). A fixed genesis time makes them one block.
    "--timestamp",
    String(DEV_GENESIS_TIMESTAMP)
  ], { stdio: ["ignore", "pipe", "pipe"] })
  let stderr = ""
  let listening = false
  child.stdout!.on("data", (d: Buffer) => {
    if (!listening && d.toString().includes("Listening on")) listening = true
  })
  child.stderr!.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000)
  })
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  child.once("error", (e) => {
    stderr += String(e)
  })
  Fs.writeFileSync(o.pidFile, JSON.stringify({ pid: child.pid, port: o.port }) + "\n")
  const rpcUrl = `http://${o.host}:${o.port}`
  const until = Date.now() + 60_000
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await exited
      return { ok: false, stderr }
    }
    try {
      if (listening) {
        await rpcCall(rpcUrl, "eth_chainId")
        return { ok: true, child, exited }
      }
    } catch (e) {
      if (Date.now() > until) {
        child.kill("SIGKILL")
        throw new Error(`anvil did not answer on ${rpcUrl}: ${String(e)} ${stderr}`, { cause: e })
      }
    }
    if (Date.now() > until) {
      child.kill("SIGKILL")
      throw new Error(`anvil did not start listening on ${rpcUrl}: ${stderr}`)
    }
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** Anvil on `host:port` with its state kept in `dir`, stopped (state dumped) with the scope. */
export const serveAnvilChain = (options: AnvilChainOptions) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const log = options.log ?? (() => {})
      const dir = Path.resolve(options.dir)
      Fs.mkdirSync(dir, { recursive: true })
      const stateFile = Path.join(dir, "state.json")
      const pidFile = Path.join(dir, "anvil.pid")
      const portFile = Path.join(dir, "port")
      await stopOrphanAnvil(pidFile, stateFile, log)
      checkStateFile(stateFile, log)
      const lastPort = Fs.existsSync(portFile) ? Number(Fs.readFileSync(portFile, "utf8")) : 0
      // The configured port, the last one, any free one: tried by starting Anvil on each in turn (a
      // port found free may be taken before Anvil binds it, e.g. by a second dev node starting at once).
      const candidates = [...new Set([options.port, lastPort > 0 ? lastPort : 0, 0].filter((p, i, all) => p > 0 || i === all.length - 1))]
      let started: { readonly child: ChildProcess.ChildProcess; readonly port: number; readonly exited: Promise<void> } | undefined
      for (const [i, candidate] of candidates.entries()) {
        const port = candidate === 0 ? await freePort() : candidate
        const attempt = await startAnvil({ host: options.host, chainId: options.chainId ?? DEV_CHAIN_ID, port, stateFile, pidFile })
        if (attempt.ok) {
          started = { child: attempt.child, port, exited: attempt.exited }
          break
        }
        const taken = /address already in use|addrinuse|os error 98/i.test(attempt.stderr)
        if (!taken || i === candidates.length - 1) throw new Error(`anvil exited at start: ${attempt.stderr}`)
        log(`dev chain: ${options.host}:${port} is taken, using another port`)
      }
      const { child, port, exited } = started!
      Fs.writeFileSync(portFile, String(port))
      const rpcUrl = `http://${options.host}:${port}`
      // The fixed genesis time would otherwise also be the clock of every block mined after it, even
      // after loading later blocks: a record anchored today showed anchoredAt 2023-11-14, before its own
      // createdAt. Blocks from now on carry the time of day, never earlier than the loaded head's.
      const head = await rpcCall(rpcUrl, "eth_getBlockByNumber", ["latest", false]) as { timestamp: string }
      await rpcCall(rpcUrl, "evm_setTime", [Math.max(Math.floor(Date.now() / 1000), Number(BigInt(head.timestamp)))])
      const stop = async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill("SIGTERM") // Anvil dumps its state at exit
          const timer = setTimeout(() => child.kill("SIGKILL"), 15_000)
          await exited
          clearTimeout(timer)
        }
        Fs.rmSync(pidFile, { force: true })
      }
      const provider: Eip1193 = { request: ({ method, params }) => rpcCall(rpcUrl, method, params ?? []) }
      return { server: { rpcUrl, port, provider } satisfies DevChainServer, stateFile, stop }
    }),
    ({ stop }) => Effect.promise(stop)
  ).pipe(Effect.map(({ server, stateFile }) => ({ ...server, stateFile })))

/** What `anchord dev`'s banner prints of its chain (absent when EVM_NETWORKS is set). */
export class DevChain extends Context.Service<DevChain, {
  /** DEV_CHAIN: `anvil` (state kept under the data directory) or `hardhat` (Hardhat's EDR in process, state in memory). */
  readonly kind: "anvil" | "hardhat"
  readonly rpcUrl: string
  readonly chainId: number
  readonly networkId: string
  readonly contractAddress: Hex
  /** Anvil's state file; undefined for Hardhat's chain (nothing kept). */
  readonly stateFile: string | undefined
}>()("anchord/evm/DevChain") {}

interface SavedDevChain {
  readonly genesisHash: string
  readonly chainId: number
  readonly contractAddress: Hex
  /**
   * The block that deployed the contract: what tells this chain from a new one (the genesis cannot:
   * it is the same block on every dev chain, its time being fixed).
   */
  readonly deployBlockNumber?: number
  readonly deployBlockHash?: string
}

/**
 * EVM networks for `anchord dev`: EVM_NETWORKS when set; otherwise Anvil under the data directory,
 * with the contract deployed (or re-used) and the dev network `hardhat-local` (test); the DevChain
 * service tells the banner about it.
 */
export const DevChainLayer = Layer.unwrap(Effect.gen(function*() {
  const configured = yield* EvmNetworks.config
  if (configured._tag === "Some" && configured.value.trim() !== "") return EvmNetworks.layer
  return Layer.effectContext(Effect.gen(function*() {
    const config = yield* AppConfig
    const host = yield* Config.String("DEV_CHAIN_HOST").pipe(Config.withDefault("127.0.0.1"))
    const port = yield* Config.Int("DEV_CHAIN_PORT").pipe(Config.withDefault(8545)) // 0: last port or any free one
    const window = yield* Config.Int("DEV_BATCH_WINDOW_MS").pipe(Config.withDefault(1000))
    const kind = yield* Config.Literals(["anvil", "hardhat"], "DEV_CHAIN").pipe(Config.withDefault("anvil" as const))
    const logs: Array<string> = []
    // Hardhat's EDR keeps its chain in memory: every start is a new chain, handled below as a reset
    // (records re-anchored, earlier proofs no longer verify): docs/dev-chain.md.
    const chain: DevChainServer & { readonly stateFile: string | undefined } = kind === "hardhat"
      ? { ...(yield* serveEdrChain({ host, port, fallback: true })), stateFile: undefined }
      : yield* serveAnvilChain({ host, port, dir: Path.resolve(config.dataDir, "dev-chain"), log: (l) => logs.push(l) })
    for (const line of logs) yield* Effect.logInfo(line)
    const blockHash = (n: number) =>
      Effect.promise(() => chain.provider.request({ method: "eth_getBlockByNumber", params: [`0x${n.toString(16)}`, false] }))
        .pipe(Effect.map((b) => (b as { hash?: string } | null)?.hash))
    const genesisHash = (yield* blockHash(0))!
    const file = Path.resolve(config.dataDir, "dev-chain.json")
    const saved: SavedDevChain | undefined = Fs.existsSync(file) ? JSON.parse(Fs.readFileSync(file, "utf8")) : undefined
    let contractAddress: Hex
    const sameChain = saved === undefined ? false : saved.deployBlockHash !== undefined
      ? (yield* blockHash(saved.deployBlockNumber ?? 0)) === saved.deployBlockHash
      : saved.genesisHash === genesisHash
    const reusable = saved !== undefined && sameChain &&
      (yield* Effect.promise(() => isAnchorRegistryDeployed(chain.rpcUrl, saved.contractAddress)))
    if (reusable) {
      contractAddress = saved!.contractAddress
    } else {
      // The dev signer's first transaction on a new chain: the same address every time.
      const d = yield* Effect.promise(() => deployAnchorRegistry({ rpcUrl: chain.rpcUrl, privateKey: DEV_SIGNER_KEY }))
      contractAddress = d.address
      // Batches of the previous dev chain are gone with it: re-queue their records (soft-deleted
      // ones too, so their proofs stay true; they emit no webhook: see docs/dev-chain.md).
      const store = yield* EvmStore
      // At startup a database failure here is fatal (as the node's own migrations would be).
      const requeued = yield* store.resetNetwork(DEV_NETWORK_ID).pipe(Effect.orDie)
      if (saved !== undefined || requeued > 0) {
        yield* Effect.logWarning(
          `dev chain was reset (${
            chain.stateFile === undefined ? "Hardhat's chain starts empty at every start" : `${chain.stateFile} is new`
          }): ${requeued} records re-queued for anchoring on the new chain`
        )
      }
      Fs.mkdirSync(Path.dirname(file), { recursive: true })
      const record: SavedDevChain = {
        genesisHash,
        chainId: DEV_CHAIN_ID,
        contractAddress,
        deployBlockNumber: d.blockNumber,
        deployBlockHash: (yield* blockHash(d.blockNumber))!
      }
      Fs.writeFileSync(file, JSON.stringify(record, null, 2) + "\n")
    }
    const networks = EvmNetworks.of({
      networks: [fromJson({
        networkId: DEV_NETWORK_ID,
        rpcUrl: chain.rpcUrl,
        // Anvil answers CORS for any origin: the verify page checks anchors from the browser against it.
        publicRpcUrl: chain.rpcUrl,
        chainId: DEV_CHAIN_ID,
        contractAddress,
        environment: "test",
        confirmations: 1,
        batchWindowMs: window,
        batchMaxSize: 1000,
        pollIntervalMs: 250
      }, Redacted.make(DEV_SIGNER_KEY))]
    })
    const info = DevChain.of({
      kind,
      rpcUrl: chain.rpcUrl,
      chainId: DEV_CHAIN_ID,
      networkId: DEV_NETWORK_ID,
      contractAddress,
      stateFile: chain.stateFile
    })
    return Context.make(EvmNetworks, networks).pipe(Context.add(DevChain, info))
  }).pipe(Effect.provide(EvmStore.layer.pipe(Layer.provide(BatchStore.layer)))))
}))

/** The dev chain's banner facts, when the node runs one. */
export const devChainInfo = Effect.map(Effect.serviceOption(DevChain), Option.getOrUndefined)
