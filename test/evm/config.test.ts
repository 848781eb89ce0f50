// EVM_NETWORKS parsing: defaults, the per-network key variable, errors that never echo a key,
// and ingest's network choice per environment.
//   npx vitest run test/evm/config.test.ts
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
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

describe("EVM_NETWORKS deployment (a deployment file instead of contractAddress)", () => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-deployment-"))
  const ADDRESS = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
  const { contractAddress: _, chainId: __, ...noAddress } = base
  const one = (extra: Record<string, unknown>) => ({ EVM_NETWORKS: JSON.stringify([{ networkId: "x", ...noAddress, privateKey: KEY, ...extra }]) })

  it("reads Ignition's deployed_addresses.json (chain id from its journal) and scripts/deploy.ts's file", async () => {
    const ignition = Path.join(dir, "ignition/deployments/chain-31337")
    Fs.mkdirSync(ignition, { recursive: true })
    Fs.writeFileSync(Path.join(ignition, "deployed_addresses.json"), JSON.stringify({ "AnchorRegistryModule#AnchorRegistry": ADDRESS }))
    Fs.writeFileSync(Path.join(ignition, "journal.jsonl"), `\n${JSON.stringify({ chainId: 31337, type: "DEPLOYMENT_INITIALIZE" })}\n`)
    const [a] = await load(one({ deployment: Path.join(ignition, "deployed_addresses.json") }))
    expect(a.contractAddress).toBe(ADDRESS)
    expect(a.chainId).toBe(31337)

    const script = Path.join(dir, "x.json")
    Fs.writeFileSync(script, JSON.stringify({ networkId: "x", contract: "AnchorRegistry", address: ADDRESS, chainId: 5 }))
    const [b] = await load(one({ deployment: script }))
    expect([b.contractAddress, b.chainId]).toEqual([ADDRESS, 5])
  })

  it("refuses a missing file, a file without the contract, and a contradiction with the JSON", async () => {
    expect(await loadError(one({ deployment: Path.join(dir, "none.json") }))).toMatch(/EVM network x: deployment file .*none\.json: no such file/)
    const other = Path.join(dir, "other.json")
    Fs.writeFileSync(other, JSON.stringify({ "LockModule#Lock": ADDRESS }))
    expect(await loadError(one({ deployment: other }))).toMatch(/no AnchorRegistry entry/)
    const script = Path.join(dir, "x.json")
    expect(await loadError(one({ deployment: script, chainId: 6 }))).toMatch(/chainId 6 differs from 5/)
    expect(await loadError(one({ deployment: script, contractAddress: "0x" + "ab".repeat(20) }))).toMatch(/contractAddress .* differs/)
    expect(await loadError(one({ chainId: 1 }))).toMatch(/contractAddress is missing/)
  })
})

describe("EvmError messages", () => {
  it("never carry an RPC URL's path or credentials (API keys live there)", async () => {
    const { classify } = await import("../../src/evm/errors.ts")
    const { HttpRequestError } = await import("viem")
    // What viem throws when the endpoint cannot be reached: its URL (with the secrets) and the request body.
    const reason = classify(
      new HttpRequestError({ url: "https://user:pw@rpc.example/v3/SECRETKEY?apikey=SECRET2", body: { params: ["0x" + "ab".repeat(300)] },
        details: "fetch failed" })
    )
    expect(reason._tag).toBe("RpcUnavailable")
    expect(reason.message).toContain("https://rpc.example/…")
    expect(reason.message).not.toMatch(/SECRET|user:pw/)
  })
})
