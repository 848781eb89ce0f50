// `anchord dev`'s chain (src/evm/devChain.ts, docs/dev-chain.md): Anvil with its state under the
// data directory, contract deployed by the dev signer, records anchored. A restart keeps the chain
// (the proof verifies, nothing is re-anchored, no second anchor.confirmed); deleting the chain's
// state is a reset: the node redeploys at the same address and re-anchors, saying so once.
//   npx vitest run test/evm/devchain.test.ts
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { Effect, Layer, Logger, ManagedRuntime, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { afterAll, describe, expect, it } from "vitest"
import { Accounts } from "../../src/auth/Accounts.ts"
import { AppConfig } from "../../src/config.ts"
import { EvmNetworks } from "../../src/evm/config.ts"
import { DevChainLayer } from "../../src/dev/evmChain.ts"
import { makeNodeLayer } from "../../src/app/layers.ts"
import { anchorRegistryAbi } from "../../src/evm/AnchorRegistry.abi.ts"
import { allAnchored, call, freshDatabase, publicClient, query, waitFor } from "./support.ts"

const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-devchain-"))
process.env.DEV_CHAIN_PORT = "0"
delete process.env.EVM_NETWORKS

const startDevNode = async (databaseUrl: string) => {
  const logs: Array<string> = []
  const capture = Logger.layer([Logger.make(({ message }) => {
    logs.push(Array.isArray(message) ? message.map(String).join(" ") : String(message))
  })])
  const runtime = ManagedRuntime.make(makeNodeLayer(DevChainLayer).pipe(
    Layer.provideMerge(AppConfig.layerWith({
      databaseUrl: Option.some(Redacted.make(databaseUrl)),
      dataDir,
      host: "127.0.0.1",
      port: 0,
      authCacheMillis: 0
    })),
    Layer.provide(capture)
  ))
  const server = await runtime.runPromise(HttpServer.HttpServer)
  const port = server.address._tag === "UnixPathAddress" ? 0 : server.address.port
  const { networks } = await runtime.runPromise(Effect.gen(function*() {
    return yield* EvmNetworks
  }))
  return { runtime, baseUrl: `http://127.0.0.1:${port}`, rpcUrl: networks[0].rpcUrl, logs }
}

const verifiesOnChain = (rpcUrl: string, hash: string, a: { contractAddress: `0x${string}`; merkleProof: Array<`0x${string}`>; merkleRoot: `0x${string}` }) =>
  publicClient(rpcUrl).readContract({
    address: a.contractAddress,
    abi: anchorRegistryAbi,
    functionName: "verify",
    args: [`0x${hash}`, a.merkleProof, a.merkleRoot]
  })

/** A record view anchored no earlier than it was created (block times are whole seconds). */
const expectAnchoredAfterCreated = (view: { anchoredAt: string; createdAt: string }) =>
  expect(Date.parse(view.anchoredAt)).toBeGreaterThanOrEqual(Math.floor(Date.parse(view.createdAt) / 1000) * 1000)

describe("dev chain", () => {
  afterAll(() => Fs.rmSync(dataDir, { recursive: true, force: true }))

  it("keeps its state across a restart; a deleted state is a reset that re-anchors once", async () => {
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
    await waitFor("ANCHORED", allAnchored(databaseUrl, [id]), 30_000)
    // The block carries the time of day, not the fixed genesis time.
    const view = (await call(node.baseUrl, "GET", `/v1/records/${id}`, { key })).json.data
    expectAnchoredAfterCreated(view)
    expect(Date.parse(view.anchoredAt)).toBeLessThanOrEqual(Date.now() + 1000)
    const saved = JSON.parse(Fs.readFileSync(Path.join(dataDir, "dev-chain.json"), "utf8"))
    const first = (await call(node.baseUrl, "GET", `/v1/records/${id}/proof`, { key })).json.data.anchors[0]
    expect(first.contractAddress.toLowerCase()).toBe(saved.contractAddress.toLowerCase())
    const events = async () =>
      (await query(databaseUrl, `SELECT count(*)::int AS n FROM all_events WHERE record_id = '${id}' AND kind = 'anchor.confirmed'`))[0].n
    expect(await events()).toBe(1)
    await node.runtime.dispose()

    // A restart: the same chain (Anvil loaded its state), nothing re-anchored.
    node = await startDevNode(databaseUrl)
    try {
      expect(node.logs.join("\n")).not.toMatch(/reset/)
      const again = (await call(node.baseUrl, "GET", `/v1/records/${id}/proof`, { key })).json.data.anchors[0]
      expect(again).toEqual(first)
      expect(await verifiesOnChain(node.rpcUrl, r.json.data.hash, first)).toBe(true)
      const block = await publicClient(node.rpcUrl).getBlock({ blockNumber: BigInt(first.blockNumber) })
      expect(block.hash).toBe(first.blockHash)
      expect(await events()).toBe(1)
      // A record anchored after the restart: today's time too, and after the first record's block.
      const later = (await call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { dev: 2 } } })).json.data
      await waitFor("ANCHORED after the restart", allAnchored(databaseUrl, [later.recordId]), 30_000)
      const laterView = (await call(node.baseUrl, "GET", `/v1/records/${later.recordId}`, { key })).json.data
      expectAnchoredAfterCreated(laterView)
      expect(Date.parse(laterView.anchoredAt)).toBeGreaterThanOrEqual(Date.parse(view.anchoredAt))
    } finally {
      await node.runtime.dispose()
    }

    // A reset: the chain's state deleted. Same contract address, the record anchored again.
    Fs.rmSync(Path.join(dataDir, "dev-chain"), { recursive: true, force: true })
    node = await startDevNode(databaseUrl)
    try {
      const resetLines = node.logs.filter((l) => /dev chain was reset/.test(l))
      expect(resetLines).toHaveLength(1)
      expect(resetLines[0]).toMatch(/2 records re-queued/)
      const a = await waitFor("re-anchored on the new chain", async () => {
        const p = await call(node.baseUrl, "GET", `/v1/records/${id}/proof`, { key })
        const anchor = p.json?.data?.anchors?.[0]
        return p.status === 200 && anchor.blockHash !== first.blockHash ? anchor : undefined
      }, 30_000)
      expect(a.contractAddress.toLowerCase()).toBe(first.contractAddress.toLowerCase())
      expect(await verifiesOnChain(node.rpcUrl, r.json.data.hash, a)).toBe(true)
    } finally {
      await node.runtime.dispose()
    }
  }, 120_000)
})
