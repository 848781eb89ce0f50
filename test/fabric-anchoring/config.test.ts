// FABRIC_NETWORKS parsing (defaults, refusals), ingest's Fabric network choice per environment, error
// classification of gateway failures, and the client refusing unreadable credentials without echoing them.
//   npx vitest run test/fabric-anchoring/config.test.ts
import { ConfigProvider, Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { Networks } from "../../src/anchoring/Networks.ts"
import { NetworksLayer } from "../../src/app/layers.ts"
import { EvmNetworks } from "../../src/evm/config.ts"
import { makeFabricClient } from "../../src/fabric/client.ts"
import { fabricFromJson, FabricNetworks } from "../../src/fabric/config.ts"
import { classify } from "../../src/fabric/errors.ts"

const base = {
  peerEndpoint: "peer0.org1.example.com:7051",
  mspId: "Org1MSP",
  certPath: "/x/cert.pem",
  keyPath: "/x/key.pem",
  channel: "mychannel",
  chaincode: "anchord"
}
const provider = (env: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromUnknown(env))
const load = (env: Record<string, string>) =>
  Effect.runPromise(Effect.gen(function*() {
    return (yield* FabricNetworks).networks
  }).pipe(Effect.provide(FabricNetworks.layer.pipe(Layer.provide(provider(env))))))
const loadError = (env: Record<string, string>) => load(env).then(() => "no error", (e) => String(e))

describe("FABRIC_NETWORKS", () => {
  it("no variable: no networks", async () => {
    expect(await load({})).toEqual([])
  })

  it("fills defaults", async () => {
    const [n] = await load({
      FABRIC_NETWORKS: JSON.stringify([{ networkId: "fabric-byo", environment: "live", tlsRootCertPath: "/x/ca.pem", hostAlias: "peer0", ...base }])
    })
    expect(n).toEqual({
      networkId: "fabric-byo",
      environment: "live",
      tlsRootCertPath: "/x/ca.pem",
      hostAlias: "peer0",
      ...base,
      batchMaxSize: 1000,
      batchWindowMs: 1000,
      maxAttempts: 10,
      maxInFlight: 16,
      startBlock: 0,
      evaluateTimeoutMs: 5000,
      endorseTimeoutMs: 15000,
      submitTimeoutMs: 5000,
      commitStatusTimeoutMs: 60000,
      retryIntervalMs: 1000
    })
  })

  it("refuses bad JSON, bad channel names, missing members and duplicate ids", async () => {
    expect(await loadError({ FABRIC_NETWORKS: "[{" })).toMatch(/not valid JSON/)
    expect(await loadError({ FABRIC_NETWORKS: JSON.stringify([{ networkId: "a", ...base, channel: "MyChannel" }]) })).toMatch(/FABRIC_NETWORKS/)
    const { keyPath: _, ...noKey } = base
    expect(await loadError({ FABRIC_NETWORKS: JSON.stringify([{ networkId: "a", ...noKey }]) })).toMatch(/keyPath/)
    expect(await loadError({ FABRIC_NETWORKS: JSON.stringify([{ networkId: "a", ...base }, { networkId: "a", ...base }]) })).toMatch(/duplicate/)
  })

  it("ingest picks the Fabric network of the key's environment (override, first configured, default)", async () => {
    const choose = (env: Record<string, string>) =>
      Effect.runPromise(Effect.gen(function*() {
        return (yield* Networks).choose
      }).pipe(Effect.provide(NetworksLayer.pipe(
        Layer.provideMerge(Layer.merge(EvmNetworks.layer, FabricNetworks.layer)),
        Layer.provide(provider(env))
      ))))
    const configured = JSON.stringify([{ networkId: "f-test", ...base }, { networkId: "f-live", environment: "live", ...base }])
    const a = await choose({ FABRIC_NETWORKS: configured })
    expect(a("test", "fabric").networkId).toBe("f-test")
    expect(a("live", "fabric").networkId).toBe("f-live")
    const b = await choose({ FABRIC_NETWORKS: configured, FABRIC_LIVE_NETWORK_ID: "other" })
    expect(b("live", "fabric").networkId).toBe("other")
    const c = await choose({})
    expect(c("test", "fabric").networkId).toBe("fabric-dev")
    expect(c("live", "fabric").networkId).toBe("fabric-byo")
  })
})

describe("Fabric errors", () => {
  it("classifies gateway failures", () => {
    expect(
      classify({ code: 10, message: "10 ABORTED: failed to endorse transaction",
        details: [{ message: "chaincode response 500, root 0xab is already anchored (batch 1, tx ab)" }] })._tag
    )
      .toBe("AlreadyAnchored")
    expect(classify({ code: 10, message: "10 ABORTED: failed to endorse", details: [{ message: "chaincode response 500, invalid root" }] })._tag)
      .toBe("EndorsementRefused")
    expect(classify({ code: 14, message: "14 UNAVAILABLE: No connection established" })._tag).toBe("PeerUnavailable")
    expect(classify({ code: 4, message: "4 DEADLINE_EXCEEDED" })._tag).toBe("PeerUnavailable")
    expect(classify({ code: 9, message: "9 FAILED_PRECONDITION: channel not found" })._tag).toBe("Rejected")
  })

  it("a missing key file is refused with its path, never contents", async () => {
    const error = await Effect.runPromise(
      Effect.scoped(makeFabricClient(fabricFromJson({ networkId: "x", ...base, keyPath: "/nonexistent/key.pem" }))).pipe(Effect.flip)
    )
    expect(error.reason._tag).toBe("Rejected")
    expect(error.message).toContain("cannot read the certificate, key or TLS root file")
  })
})
