// `anchord dev`'s chain (src/evm/devChain.ts): EDR served over HTTP, contract deployed by the dev
// signer, records anchored; after a restart the chain is fresh (EDR keeps no state), so the node
// redeploys and anchors the records again on the new chain.
//   npx vitest run test/evm/devchain.test.ts
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { Effect, Layer, ManagedRuntime, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { afterAll, describe, expect, it } from "vitest"
import { Accounts } from "../../src/auth/Accounts.ts"
import { AppConfig } from "../../src/config.ts"
import { EvmNetworks } from "../../src/evm/config.ts"
import { DevChainLayer } from "../../src/evm/devChain.ts"
import { makeNodeLayer } from "../../src/main.ts"
import { anchorRegistryAbi } from "../../src/evm/AnchorRegistry.abi.ts"
import { allAnchored, call, freshDatabase, publicClient, waitFor } from "./support.ts"

const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-devchain-"))
process.env.DEV_CHAIN_PORT = "0"
delete process.env.EVM_NETWORKS

const startDevNode = async (databaseUrl: string) => {
  const runtime = ManagedRuntime.make(makeNodeLayer(DevChainLayer).pipe(Layer.provideMerge(AppConfig.layerWith({
    databaseUrl: Option.some(Redacted.make(databaseUrl)), dataDir, host: "127.0.0.1", port: 0, authCacheMillis: 0
  }))))
  const server = await runtime.runPromise(HttpServer.HttpServer)
  const port = server.address._tag === "UnixPathAddress" ? 0 : server.address.port
  return { runtime, baseUrl: `http://127.0.0.1:${port}` }
}

describe("dev chain", () => {
  afterAll(() => Fs.rmSync(dataDir, { recursive: true, force: true }))

  it("anchors on the in-process Hardhat chain and re-anchors on a fresh chain after a restart", async () => {
    const databaseUrl = await freshDatabase()
    let node = await startDevNode(databaseUrl)
    const key = await node.runtime.runPromise(Effect.gen(function*() {
      const accounts = yield* Accounts
      const account = yield* accounts.createAccount({ name: "dev", plan: "ENTERPRISE" })
      yield* accounts.activate(account.id)
      return (yield* accounts.createKey({ accountId: account.id, environment: "test" })).key
    }))
    const r = await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { dev: 1 } } })
    expect(r.json.data.networkId).toBe("hardhat-local")
    const id = r.json.data.recordId
    await waitFor("ANCHORED", allAnchored(databaseUrl, [id]), 15_000)
    const saved = JSON.parse(Fs.readFileSync(Path.join(dataDir, "dev-chain.json"), "utf8"))
    const first = (await call(node.baseUrl, "GET", `/v1/records/${id}/proof`, { key })).json.data.anchors[0]
    expect(first.contractAddress.toLowerCase()).toBe(saved.contractAddress.toLowerCase())
    await node.runtime.dispose()

    node = await startDevNode(databaseUrl)
    try {
      const saved2 = JSON.parse(Fs.readFileSync(Path.join(dataDir, "dev-chain.json"), "utf8"))
      expect(saved2.genesisHash).not.toBe(saved.genesisHash)
      const a = await waitFor("re-anchored on the fresh chain", async () => {
        const p = await call(node.baseUrl, "GET", `/v1/records/${id}/proof`, { key })
        const anchor = p.json?.data?.anchors?.[0]
        return p.status === 200 && anchor.blockHash !== first.blockHash ? anchor : undefined
      }, 15_000)
      expect(a.contractAddress.toLowerCase()).toBe(saved2.contractAddress.toLowerCase())
      // The proof verifies on the new chain.
      const { networks } = await node.runtime.runPromise(Effect.gen(function*() {
        return yield* EvmNetworks
      }))
      const ok = await publicClient(networks[0].rpcUrl).readContract({
        address: a.contractAddress, abi: anchorRegistryAbi, functionName: "verify", args: [`0x${r.json.data.hash}`, a.merkleProof, a.merkleRoot]
      })
      expect(ok).toBe(true)
    } finally {
      await node.runtime.dispose()
    }
  }, 40_000)
})
