/**
 * Two `npm start`s at the same moment on one machine: each wants the Fabric dev peer's port (7051,
 * DEV_FABRIC_PORT) and the dev chain's (8545, DEV_CHAIN_PORT). A port found free may be taken before
 * it is bound, so the port is tried by binding it, and the one that loses falls back to another port
 * instead of exiting with EADDRINUSE (docs/dev-chain.md, docs/fabric-devpeer.md).
 */
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { ConfigProvider, Context, Effect, Layer } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { freePort } from "../../src/dev/EmbeddedPostgres.ts"
import { serveAnvilChain } from "../../src/dev/evmChain.ts"
import { FabricDevPeer } from "../../src/dev/FabricDevPeer.ts"

const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-dev-ports-"))
afterAll(() => Fs.rmSync(dir, { recursive: true, force: true }))

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = Net.connect(port, "127.0.0.1", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
  })

/**
 * The race made certain: the moment any listener on `port` in this process closes (a "free?" check
 * that listens and closes), another server takes the port — the second dev node that wins the race.
 * Nothing is mocked: a real server holds the port. Returns a release.
 */
const takePortAfterItsCheck = (port: number) => {
  const close = Net.Server.prototype.close
  const holders: Array<Net.Server> = []
  Net.Server.prototype.close = function(this: Net.Server, callback?: (err?: Error) => void) {
    const address = this.address()
    if (typeof address !== "object" || address === null || address.port !== port || holders.length > 0) return close.call(this, callback)
    return close.call(this, (err) => {
      const holder = Net.createServer()
      holders.push(holder)
      holder.listen(port, "127.0.0.1", () => callback?.(err))
    })
  }
  return () => {
    Net.Server.prototype.close = close
    for (const h of holders) h.close()
  }
}

describe("dev ports taken between check and bind", { timeout: 180_000 }, () => {
  it("a Fabric dev peer and a dev chain whose port is taken after a check: each listens (on another port)", async () => {
    for (const start of ["fabric", "anvil"] as const) {
      const wanted = await freePort()
      const release = takePortAfterItsCheck(wanted)
      try {
        const port = await Effect.runPromise(Effect.scoped(
          start === "fabric"
            ? Effect.map(Layer.build(FabricDevPeer.layerDev(Path.join(dir, "fabric-raced"))), (c) => Context.get(c, FabricDevPeer).port)
            : Effect.map(serveAnvilChain({ host: "127.0.0.1", port: wanted, dir: Path.join(dir, "chain-raced") }), (c) => c.port)
        ).pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ DEV_FABRIC_PORT: String(wanted) })))))
        expect(port, start).toBeGreaterThan(0)
      } finally {
        release()
      }
    }
  })

  it("a Fabric dev peer and a dev chain whose port is in use: each listens on another port", async () => {
    const holder = Net.createServer()
    const wanted = await new Promise<number>((resolve) => holder.listen(0, "127.0.0.1", () => resolve((holder.address() as Net.AddressInfo).port)))
    try {
      const ports = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const peer = Context.get(yield* Layer.build(FabricDevPeer.layerDev(Path.join(dir, "fabric-held"))), FabricDevPeer)
        const chain = yield* serveAnvilChain({ host: "127.0.0.1", port: wanted, dir: Path.join(dir, "chain-held") })
        return [peer.port, chain.port, ...yield* Effect.promise(() => Promise.all([accepts(peer.port), accepts(chain.port)]))]
      })).pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ DEV_FABRIC_PORT: String(wanted) })))))
      expect(ports[0]).not.toBe(wanted)
      expect(ports[1]).not.toBe(wanted)
      expect(ports.slice(2)).toEqual([true, true])
    } finally {
      holder.close()
    }
  })

  it("two Fabric dev peers started at once on one wanted port: both listen, on different ports", async () => {
    const wanted = await freePort()
    const peers = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const both = yield* Effect.all(
        ["a", "b"].map((name) => Layer.build(FabricDevPeer.layerDev(Path.join(dir, `fabric-${name}`)))),
        { concurrency: "unbounded" }
      )
      const ports = both.map((context) => Context.get(context, FabricDevPeer).port)
      const listening = yield* Effect.promise(() => Promise.all(ports.map(accepts)))
      return { ports, listening }
    })).pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ DEV_FABRIC_PORT: String(wanted) })))))
    expect(peers.ports).toContain(wanted)
    expect(new Set(peers.ports).size).toBe(2)
    expect(peers.listening).toEqual([true, true])
  })

  it("two dev chains (Anvil) started at once on one wanted port: both answer, on different ports", async () => {
    const wanted = await freePort()
    const chains = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const both = yield* Effect.all(
        ["a", "b"].map((name) => serveAnvilChain({ host: "127.0.0.1", port: wanted, dir: Path.join(dir, `chain-${name}`) })),
        { concurrency: "unbounded" }
      )
      const chainIds = yield* Effect.promise(() => Promise.all(both.map((c) => c.provider.request({ method: "eth_chainId", params: [] }))))
      return { ports: both.map((c) => c.port), chainIds }
    })))
    expect(chains.ports).toContain(wanted)
    expect(new Set(chains.ports).size).toBe(2)
    expect(chains.chainIds).toEqual(["0x7a69", "0x7a69"])
  })
})
