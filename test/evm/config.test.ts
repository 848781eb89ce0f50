// EVM_NETWORKS parsing: defaults, the per-network key variable, errors that never echo a key,
// and ingest's network choice per environment.
//   npx vitest run test/evm/config.test.ts
import { ConfigProvider, Effect, Layer, Redacted } from "effect"
import { describe, expect, it } from "vitest"
import { Networks } from "../../src/anchoring/Networks.ts"
import { NetworksLayer } from "../../src/app/layers.ts"
import { EvmNetworks } from "../../src/evm/config.ts"

const KEY = "0x" + "11".repeat(32)
const OTHER = "0x" + "22".repeat(32)
const base = { rpcUrl: "http://127.0.0.1:8545", chainId: 31337, contractAddress: "0x" + "ab".repeat(20) }

const load = (env: Record<string, string>) =>
  Effect.runPromise(Effect.gen(function*() {
    return (yield* EvmNetworks).networks
  }).pipe(
    Effect.provide(EvmNetworks.layer.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(env)))))
  ))

const loadError = (env: Record<string, string>) => load(env).then(() => "no error", (e) => String(e))

describe("EVM_NETWORKS", () => {
  it("no variable: no networks", async () => {
    expect(await load({})).toEqual([])
  })

  it("fills defaults and takes the key from EVM_PRIVATE_KEY_<ID> over the JSON", async () => {
    const [a, b] = await load({
      EVM_NETWORKS: JSON.stringify([
        { networkId: "base-sepolia", ...base, privateKey: KEY },
        { networkId: "main", ...base, chainId: 1, environment: "live", confirmations: 12, batchMaxSize: 5000, batchWindowMs: 60000 }
      ]),
      EVM_PRIVATE_KEY_BASE_SEPOLIA: OTHER,
      EVM_PRIVATE_KEY_MAIN: KEY
    })
    expect(a.networkId).toBe("base-sepolia")
    expect(Redacted.value(a.privateKey)).toBe(OTHER)
    expect(a.environment).toBe("test")
    expect(a.confirmations).toBe(1)
    expect(a.batchMaxSize).toBe(1000)
    expect(a.batchWindowMs).toBe(1000)
    expect(b.environment).toBe("live")
    expect(b.confirmations).toBe(12)
    expect(String(a.privateKey)).not.toContain("11")
    expect(JSON.stringify(a)).not.toContain(OTHER.slice(2))
  })

  it("rejects bad input without echoing secrets", async () => {
    expect(await loadError({ EVM_NETWORKS: "{" })).toMatch(/not valid JSON/)
    expect(await loadError({ EVM_NETWORKS: JSON.stringify([{ networkId: "x", ...base }]) })).toMatch(/no signer key.*EVM_PRIVATE_KEY_X/)
    const bad = await loadError({ EVM_NETWORKS: JSON.stringify([{ networkId: "x", ...base, chainId: "1", privateKey: KEY }]) })
    expect(bad).toMatch(/EVM_NETWORKS/)
    expect(bad).not.toContain("11".repeat(32))
    expect(await loadError({
      EVM_NETWORKS: JSON.stringify([{ networkId: "x", ...base, privateKey: KEY }, { networkId: "x", ...base, privateKey: KEY }])
    })).toMatch(/duplicate/)
  })

  it("ingest picks the configured network of the key's environment", async () => {
    const env = {
      EVM_NETWORKS: JSON.stringify([
        { networkId: "t1", ...base, privateKey: KEY },
        { networkId: "l1", ...base, environment: "live", privateKey: KEY }
      ])
    }
    const choose = await Effect.runPromise(Effect.gen(function*() {
      return (yield* Networks).choose
    }).pipe(Effect.provide(NetworksLayer.pipe(
      Layer.provide(EvmNetworks.layer),
      Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(env)))
    ))))
    expect(choose("test", "evm").networkId).toBe("t1")
    expect(choose("test", "hybrid").networkId).toBe("t1")
    expect(choose("live", "evm").networkId).toBe("l1")
    expect(choose("test", "fabric").networkId).toBe("fabric-dev")
  })
})

describe("EvmError messages", () => {
  it("never carry an RPC URL's path or credentials (API keys live there)", async () => {
    const { classify } = await import("../../src/evm/errors.ts")
    const reason = classify(new Error("HTTP request failed.\nURL: https://user:pw@rpc.example/v3/SECRETKEY?apikey=SECRET2\nRequest body: {}"))
    expect(reason._tag).toBe("RpcUnavailable")
    expect(reason.message).toContain("https://rpc.example/…")
    expect(reason.message).not.toMatch(/SECRET|user:pw/)
  })
})
