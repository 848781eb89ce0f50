/**
 * EVM networks from configuration (docs/configuration-evm.md).
 *
 * `EVM_NETWORKS` is a JSON array, one object per network; a signer key may instead come from
 * `EVM_PRIVATE_KEY_<NETWORK_ID>` (id upper-cased, non-alphanumerics as `_`), so the JSON can live
 * in a config file without the secret. Keys are held as `Redacted` and never logged. Every one of
 * these may come from a file instead (`EVM_NETWORKS_FILE`, `EVM_PRIVATE_KEY_<ID>_FILE`, the member
 * `privateKeyFile`): docs/operating.md, "Secrets from files".
 */
import * as Fs from "node:fs"
import { Config, Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import { secretConfig } from "../config.ts"
import type { Hex } from "viem"
import { commonDefaults, commonNetworkFields, type CommonNetworkConfig, NonNegativeInt, parseNetworkList, perNetworkVariable,
  PositiveInt } from "../anchoring/networkConfig.ts"
import { readDeploymentFile } from "./deploymentFile.ts"

export interface EvmNetworkConfig extends CommonNetworkConfig {
  /** The signer's endpoint: may carry a provider key, so it is never shown to anyone. */
  readonly rpcUrl: string
  /**
   * A JSON-RPC endpoint anyone may use (no key in it), listed by `/verify/config.json` for the public
   * verify page, which checks EVM anchors from the visitor's browser; undefined: not listed.
   */
  readonly publicRpcUrl: string | undefined
  /** Block explorer base URL (`<explorerUrl>/tx/<txHash>`), for the console and the verify page. */
  readonly explorerUrl: string | undefined
  readonly chainId: number
  readonly contractAddress: Hex
  readonly privateKey: Redacted.Redacted<Hex>
  /** Blocks (the including block counts as 1) before a batch counts as confirmed. */
  readonly confirmations: number
  /** Watcher/writer polling period (ms). */
  readonly pollIntervalMs: number
  /** Each JSON-RPC call's bound (ms): an endpoint that accepts and never answers is found down within it. */
  readonly rpcTimeoutMs: number
  /** A sent transaction not mined after this long (ms) is replaced with higher fees. */
  readonly stuckAfterMs: number
  /** Fee bump per replacement, percent (at least 10: nodes reject smaller replacements). */
  readonly feeBumpPercent: number
  /** Replacements (fee bumps) and send attempts before a batch is FAILED. */
  readonly maxAttempts: number
  /** Cap on maxFeePerGas in wei (optional); bumps stop there. */
  readonly maxFeePerGasWei: bigint | undefined
  /** Largest eth_getLogs block range. */
  readonly logRange: number
  /** First block the watcher scans on a fresh database (default: the head at first start). */
  readonly startBlock: number | undefined
}

const HexAddress = Schema.String.check(Schema.isPattern(/^0x[0-9a-fA-F]{40}$/))
const HexKey = Schema.String.check(Schema.isPattern(/^0x[0-9a-fA-F]{64}$/))
const HttpUrl = Schema.String.check(Schema.isPattern(/^https?:\/\/[^\s]+$/))

export const EvmNetworkJson = Schema.Struct({
  ...commonNetworkFields,
  rpcUrl: Schema.String,
  publicRpcUrl: Schema.optionalKey(HttpUrl),
  explorerUrl: Schema.optionalKey(HttpUrl),
  // Both may come from `deployment` instead (src/evm/deploymentFile.ts); given both ways, they must agree.
  chainId: Schema.optionalKey(PositiveInt),
  contractAddress: Schema.optionalKey(HexAddress),
  deployment: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1))),
  privateKey: Schema.optionalKey(HexKey),
  /** A file holding the signer key (0x + 64 hex; one trailing newline allowed). */
  privateKeyFile: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1))),
  confirmations: Schema.optionalKey(PositiveInt),
  pollIntervalMs: Schema.optionalKey(PositiveInt),
  rpcTimeoutMs: Schema.optionalKey(PositiveInt),
  stuckAfterMs: Schema.optionalKey(PositiveInt),
  feeBumpPercent: Schema.optionalKey(Schema.Number.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(10))),
  maxAttempts: Schema.optionalKey(PositiveInt),
  maxFeePerGasWei: Schema.optionalKey(Schema.String.check(Schema.isPattern(/^[0-9]+$/))),
  logRange: Schema.optionalKey(PositiveInt),
  startBlock: Schema.optionalKey(NonNegativeInt)
})
export type EvmNetworkJson = typeof EvmNetworkJson.Type

const keyEnvName = (networkId: string) => perNetworkVariable("EVM_PRIVATE_KEY", networkId)

/** Fills defaults; `privateKey` must be present (from the JSON or the per-network variable). */
export const fromJson = (
  n: EvmNetworkJson & { readonly chainId: number; readonly contractAddress: string },
  privateKey: Redacted.Redacted<Hex>
): EvmNetworkConfig => ({
  ...commonDefaults(n),
  rpcUrl: n.rpcUrl,
  publicRpcUrl: n.publicRpcUrl,
  explorerUrl: n.explorerUrl?.replace(/\/+$/, ""),
  chainId: n.chainId,
  contractAddress: n.contractAddress as Hex,
  privateKey,
  confirmations: n.confirmations ?? 1,
  pollIntervalMs: n.pollIntervalMs ?? 500,
  rpcTimeoutMs: n.rpcTimeoutMs ?? 5_000,
  stuckAfterMs: n.stuckAfterMs ?? 30_000,
  feeBumpPercent: n.feeBumpPercent ?? 20,
  maxAttempts: n.maxAttempts ?? 8,
  maxFeePerGasWei: n.maxFeePerGasWei === undefined ? undefined : BigInt(n.maxFeePerGasWei),
  logRange: n.logRange ?? 2000,
  startBlock: n.startBlock
})

export class EvmConfigError extends Schema.TaggedError<EvmConfigError>()("EvmConfigError", {
  message: Schema.String
}) {}

/** The configured EVM networks (possibly none: then nothing is anchored on EVM and records wait in QUEUED). */
export class EvmNetworks extends Context.Service<EvmNetworks, {
  readonly networks: ReadonlyArray<EvmNetworkConfig>
}>()("anchord/evm/EvmNetworks") {
  /** EVM_NETWORKS or EVM_NETWORKS_FILE: the RPC URLs may carry a provider's key, and the JSON the signer keys. */
  static readonly config = secretConfig("EVM_NETWORKS").pipe(Config.map(Option.map(Redacted.value)))

  /** Reads EVM_NETWORKS (and EVM_PRIVATE_KEY_<ID>), or their _FILE variants. */
  static readonly layer = Layer.effect(
    EvmNetworks,
    Effect.gen(function*() {
      const raw = yield* EvmNetworks.config
      if (raw._tag === "None" || raw.value.trim() === "") return EvmNetworks.of({ networks: [] })
      return EvmNetworks.of({ networks: yield* parseNetworks(raw.value) })
    })
  )

  static readonly layerWith = (networks: ReadonlyArray<EvmNetworkConfig>) => Layer.succeed(EvmNetworks, EvmNetworks.of({ networks }))
}

const parseList = parseNetworkList({
  variable: "EVM_NETWORKS",
  item: EvmNetworkJson,
  fail: (message) => new EvmConfigError({ message }),
  // The message names the field, never the value (it may hold a key).
  redact: (message) => message.replace(/0x[0-9a-fA-F]{64}/g, "0x…")
})

export const parseNetworks = Effect.fn("EvmNetworks.parse")(function*(text: string) {
  const out: Array<EvmNetworkConfig> = []
  for (const n of yield* parseList(text)) {
    const variable = keyEnvName(n.networkId)
    const fromEnv = yield* secretConfig(variable).pipe(
      Effect.mapError((e) => new EvmConfigError({ message: `EVM network ${n.networkId}: ${e.message}` }))
    )
    if (n.privateKey !== undefined && n.privateKeyFile !== undefined) {
      return yield* new EvmConfigError({ message: `EVM network ${n.networkId}: privateKey and privateKeyFile are both set: set only one` })
    }
    const fromFile = n.privateKeyFile === undefined ? undefined : yield* readKeyFile(n.networkId, n.privateKeyFile)
    const key = fromEnv._tag === "Some"
      ? Redacted.value(fromEnv.value)
      : fromFile ?? n.privateKey
    if (key === undefined || !/^0x[0-9a-fA-F]{64}$/.test(key)) {
      return yield* new EvmConfigError({
        message: key === undefined
          ? `EVM network ${n.networkId}: no signer key (set privateKey, privateKeyFile, ${variable} or ${variable}_FILE; 0x + 64 hex)`
          // Says where the bad key came from, never what it is.
          : `EVM network ${n.networkId}: the signer key from ${
            fromEnv._tag === "Some" ? variable : fromFile !== undefined ? `privateKeyFile ${JSON.stringify(n.privateKeyFile)}` : "privateKey"
          } is not 0x + 64 hex`
      })
    }
    out.push(fromJson(yield* resolveDeployment(n), Redacted.make(key as Hex)))
  }
  return out as ReadonlyArray<EvmNetworkConfig>
})

/** `contractAddress` and `chainId` from the network's JSON and/or its `deployment` file, which must agree. */
const resolveDeployment = (n: EvmNetworkJson) =>
  Effect.gen(function*() {
    const fail = (message: string) => new EvmConfigError({ message: `EVM network ${n.networkId}: ${message}` })
    let chainId = n.chainId
    let contractAddress = n.contractAddress
    if (n.deployment !== undefined) {
      const file = yield* Effect.try({ try: () => readDeploymentFile(n.deployment!), catch: (e) => fail((e as Error).message) })
      if (contractAddress !== undefined && contractAddress.toLowerCase() !== file.address.toLowerCase()) {
        return yield* fail(`contractAddress ${contractAddress} differs from ${file.address} in ${n.deployment}`)
      }
      if (chainId !== undefined && file.chainId !== undefined && chainId !== file.chainId) {
        return yield* fail(`chainId ${chainId} differs from ${file.chainId} in ${n.deployment}`)
      }
      contractAddress = file.address
      chainId = chainId ?? file.chainId
    }
    if (contractAddress === undefined) return yield* fail("contractAddress is missing (give it, or `deployment`: a deployment file)")
    if (chainId === undefined) return yield* fail("chainId is missing (the deployment file does not say it)")
    return { ...n, chainId, contractAddress }
  })

/** A `privateKeyFile` member's key (one trailing newline dropped); the error names the file, never its content. */
const readKeyFile = (networkId: string, path: string) =>
  Effect.try({
    try: () => Fs.readFileSync(path, "utf8").replace(/\r?\n$/, ""),
    catch: (e) =>
      new EvmConfigError({
        message: `EVM network ${networkId}: privateKeyFile ${JSON.stringify(path)} cannot be read (${(e as NodeJS.ErrnoException).code ?? "error"})`
      })
  })
