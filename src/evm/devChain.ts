/**
 * The local chain of `anchord dev`: Hardhat's EDR simulated network, in process, served as
 * JSON-RPC over HTTP (127.0.0.1:8545 by default, like `hardhat node`), with AnchorRegistry
 * deployed by a funded dev signer.
 *
 * EDR keeps its state in memory only, so every start is a fresh chain. The node remembers the
 * chain it anchored on (`<dataDir>/dev-chain.json`: genesis hash, contract address); when the
 * genesis hash changed or the contract code is missing there, it deploys again and sends every
 * batch of the dev network back to QUEUED, so records are re-anchored on the new chain (and emit
 * `anchor.confirmed` again). Set EVM_NETWORKS to anchor on a chain of your own instead.
 */
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import { Config, Console, Effect, Layer, Redacted } from "effect"
import type { Hex } from "viem"
import { AnchorStore } from "../batching/AnchorStore.ts"
import { AppConfig } from "../config.ts"
import { EvmNetworks, fromJson } from "./config.ts"
import { deployAnchorRegistry, isAnchorRegistryDeployed } from "./deploy.ts"

/** Hardhat's well-known development account #0 (public test key: never use it on a real chain). */
export const DEV_SIGNER_KEY: Hex = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
export const DEV_CHAIN_ID = 31337
export const DEV_NETWORK_ID = "hardhat-local"

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
export const serveEdrChain = (options: { readonly host: string; readonly port: number; readonly chainId?: number }) =>
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
        server.once("error", (e) => resume(Effect.fail(e)))
        server.listen(options.port, options.host, () => {
          const a = server.address()
          resume(Effect.succeed(typeof a === "object" && a !== null ? a.port : options.port))
        })
      }),
      () => Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
    )
    return { rpcUrl: `http://${options.host}:${port}`, port, provider } satisfies DevChainServer
  })

interface SavedDevChain {
  readonly genesisHash: string
  readonly chainId: number
  readonly contractAddress: Hex
}

/**
 * EVM networks for `anchord dev`: EVM_NETWORKS when set; otherwise the in-process dev chain,
 * with the contract deployed (or re-used) and the dev network `hardhat-local` (test).
 */
export const DevChainLayer = Layer.unwrap(Effect.gen(function*() {
  const configured = yield* EvmNetworks.config
  if (configured._tag === "Some" && configured.value.trim() !== "") return EvmNetworks.layer
  return Layer.effect(EvmNetworks, Effect.gen(function*() {
    const config = yield* AppConfig
    const host = yield* Config.String("DEV_CHAIN_HOST").pipe(Config.withDefault("127.0.0.1"))
    const port = yield* Config.Int("DEV_CHAIN_PORT").pipe(Config.withDefault(8545)) // 0: any free port
    const window = yield* Config.Int("DEV_BATCH_WINDOW_MS").pipe(Config.withDefault(1000))
    const chain = yield* serveEdrChain({ host, port }).pipe(
      Effect.catch((e) =>
        Effect.gen(function*() {
          yield* Effect.logWarning(`dev chain: ${host}:${port} unavailable (${e.message}), using a free port`)
          return yield* serveEdrChain({ host, port: 0 })
        })
      )
    )
    const genesis = (yield* Effect.promise(() =>
      chain.provider.request({ method: "eth_getBlockByNumber", params: ["0x0", false] })
    )) as { hash: string }
    const file = Path.resolve(config.dataDir, "dev-chain.json")
    const saved: SavedDevChain | undefined = Fs.existsSync(file) ? JSON.parse(Fs.readFileSync(file, "utf8")) : undefined
    let contractAddress: Hex
    const reusable = saved !== undefined && saved.genesisHash === genesis.hash &&
      (yield* Effect.promise(() => isAnchorRegistryDeployed(chain.rpcUrl, saved.contractAddress)))
    if (reusable) {
      contractAddress = saved!.contractAddress
    } else {
      const d = yield* Effect.promise(() => deployAnchorRegistry({ rpcUrl: chain.rpcUrl, privateKey: DEV_SIGNER_KEY }))
      contractAddress = d.address
      // Batches of the previous dev chain are gone with it: re-queue their records.
      const store = yield* AnchorStore
      const requeued = yield* store.forgetNetwork(DEV_NETWORK_ID)
      if (requeued > 0) yield* Effect.logInfo("dev chain is fresh: records re-queued for anchoring", { requeued })
      Fs.mkdirSync(Path.dirname(file), { recursive: true })
      Fs.writeFileSync(file, JSON.stringify({ genesisHash: genesis.hash, chainId: DEV_CHAIN_ID, contractAddress }, null, 2) + "\n")
    }
    yield* Console.log([
      `Dev chain: ${chain.rpcUrl}  (Hardhat EDR, chainId ${DEV_CHAIN_ID}, network "${DEV_NETWORK_ID}", test keys)`,
      `Contract:  AnchorRegistry at ${contractAddress}`
    ].join("\n"))
    return EvmNetworks.of({
      networks: [fromJson({
        networkId: DEV_NETWORK_ID,
        rpcUrl: chain.rpcUrl,
        chainId: DEV_CHAIN_ID,
        contractAddress,
        environment: "test",
        confirmations: 1,
        batchWindowMs: window,
        batchMaxSize: 1000,
        pollIntervalMs: 250
      }, Redacted.make(DEV_SIGNER_KEY))]
    })
  }).pipe(Effect.provide(AnchorStore.layer)))
}))
