/**
 * Fabric networks from configuration (docs/configuration-fabric.md).
 *
 * `FABRIC_NETWORKS` is a JSON array, one object per network (a gateway peer + channel + chaincode).
 * Credentials are file paths (certificate, private key, TLS root certificate): the key is read when
 * the network connects and never logged. A real network (`fabric-byo`) and the dev peer of
 * `anchord dev` (`fabric-dev`) go through the same code.
 */
import { Config, Context, Effect, Layer, Schema } from "effect"
import { commonDefaults, commonNetworkFields, type CommonNetworkConfig, NonNegativeInt, parseNetworkList, PositiveInt } from "../anchoring/networkConfig.ts"

export interface FabricNetworkConfig extends CommonNetworkConfig {
  /** Gateway peer `host:port`. */
  readonly peerEndpoint: string
  /** PEM file of the TLS root (CA) certificate; plaintext gRPC when absent (dev peer only). */
  readonly tlsRootCertPath: string | undefined
  /** Name the peer's TLS certificate is checked against (`grpc.ssl_target_name_override`). */
  readonly hostAlias: string | undefined
  readonly mspId: string
  /** PEM file of the client's X.509 certificate. */
  readonly certPath: string
  /** PEM file of the client's private key (P-256). */
  readonly keyPath: string
  readonly channel: string
  readonly chaincode: string
  /** Attempts (endorsement refusals, MVCC conflicts, invalid commits) before a batch is FAILED. */
  readonly maxAttempts: number
  /** Batches endorsed/submitted/awaited at the same time. */
  readonly maxInFlight: number
  /** First block the indexer reads on a fresh database (default 0). */
  readonly startBlock: number
  /** gRPC deadlines per call (ms). */
  readonly evaluateTimeoutMs: number
  readonly endorseTimeoutMs: number
  readonly submitTimeoutMs: number
  readonly commitStatusTimeoutMs: number
  /** The indexer restarts its block stream after this long (ms) on failure. */
  readonly retryIntervalMs: number
}

export const FabricNetworkJson = Schema.Struct({
  ...commonNetworkFields,
  peerEndpoint: Schema.String.check(Schema.isPattern(/^[^\s/]+:[0-9]{1,5}$/)),
  tlsRootCertPath: Schema.optionalKey(Schema.String),
  hostAlias: Schema.optionalKey(Schema.String),
  mspId: Schema.String.check(Schema.isMinLength(1)),
  certPath: Schema.String.check(Schema.isMinLength(1)),
  keyPath: Schema.String.check(Schema.isMinLength(1)),
  channel: Schema.String.check(Schema.isPattern(/^[a-z][a-z0-9.-]*$/)),
  chaincode: Schema.String.check(Schema.isMinLength(1)),
  maxAttempts: Schema.optionalKey(PositiveInt),
  maxInFlight: Schema.optionalKey(PositiveInt),
  startBlock: Schema.optionalKey(NonNegativeInt),
  evaluateTimeoutMs: Schema.optionalKey(PositiveInt),
  endorseTimeoutMs: Schema.optionalKey(PositiveInt),
  submitTimeoutMs: Schema.optionalKey(PositiveInt),
  commitStatusTimeoutMs: Schema.optionalKey(PositiveInt),
  retryIntervalMs: Schema.optionalKey(PositiveInt)
})
export type FabricNetworkJson = typeof FabricNetworkJson.Type

export const fabricFromJson = (n: FabricNetworkJson): FabricNetworkConfig => ({
  ...commonDefaults(n),
  peerEndpoint: n.peerEndpoint,
  tlsRootCertPath: n.tlsRootCertPath,
  hostAlias: n.hostAlias,
  mspId: n.mspId,
  certPath: n.certPath,
  keyPath: n.keyPath,
  channel: n.channel,
  chaincode: n.chaincode,
  maxAttempts: n.maxAttempts ?? 10,
  maxInFlight: n.maxInFlight ?? 16,
  startBlock: n.startBlock ?? 0,
  evaluateTimeoutMs: n.evaluateTimeoutMs ?? 5_000,
  endorseTimeoutMs: n.endorseTimeoutMs ?? 15_000,
  submitTimeoutMs: n.submitTimeoutMs ?? 5_000,
  commitStatusTimeoutMs: n.commitStatusTimeoutMs ?? 60_000,
  retryIntervalMs: n.retryIntervalMs ?? 1_000
})

export class FabricConfigError extends Schema.TaggedError<FabricConfigError>()("FabricConfigError", {
  message: Schema.String
}) {}

const parseList = parseNetworkList({
  variable: "FABRIC_NETWORKS",
  item: FabricNetworkJson,
  fail: (message) => new FabricConfigError({ message })
})

export const parseFabricNetworks = Effect.fn("FabricNetworks.parse")(function*(text: string) {
  return (yield* parseList(text)).map(fabricFromJson) as ReadonlyArray<FabricNetworkConfig>
})

/** The configured Fabric networks (possibly none: then Fabric and hybrid records wait in QUEUED). */
export class FabricNetworks extends Context.Service<FabricNetworks, {
  readonly networks: ReadonlyArray<FabricNetworkConfig>
}>()("anchord/fabric/FabricNetworks") {
  static readonly config = Config.option(Config.String("FABRIC_NETWORKS"))

  /** Reads FABRIC_NETWORKS. */
  static readonly layer = Layer.effect(
    FabricNetworks,
    Effect.gen(function*() {
      const raw = yield* FabricNetworks.config
      if (raw._tag === "None" || raw.value.trim() === "") return FabricNetworks.of({ networks: [] })
      return FabricNetworks.of({ networks: yield* parseFabricNetworks(raw.value) })
    })
  )

  static readonly layerWith = (networks: ReadonlyArray<FabricNetworkConfig>) => Layer.succeed(FabricNetworks, FabricNetworks.of({ networks }))
}
