/**
 * Which network a new record is anchored on (ingest hot path: pure lookups, no I/O).
 *
 * EVM: the configured network of the key's environment (EVM_NETWORKS; when several share an
 * environment, EVM_TEST_NETWORK_ID / EVM_LIVE_NETWORK_ID pick one, else the first listed).
 * Without a configured network of the environment (nor an EVM_<ENV>_NETWORK_ID naming one, which another
 * node of the same database may serve) EVM records are refused at ingest (`anchorable`). Fabric: likewise from FABRIC_NETWORKS (FABRIC_TEST_NETWORK_ID /
 * FABRIC_LIVE_NETWORK_ID pick one), defaults `fabric-dev` / `fabric-byo`. A hybrid record's
 * `networkId` is its EVM network; the Fabric network of its environment anchors it too.
 */
import { Config, Context, Effect, Layer, Option } from "effect"
import type { ChainType } from "../api/recordSchemas.ts"
import type { AnchorChainType, Environment } from "./model.ts"

/** A configured network as the chain-neutral side sees it (EVM and Fabric configurations give these). */
export interface NetworkSummary {
  readonly networkId: string
  readonly chainType: AnchorChainType
  readonly environment: Environment
  /** Where its transactions are shown (`<explorerUrl>/tx/<txHash>`): EVM networks that configure one. */
  readonly explorerUrl: string | null
}

/**
 * Every configured network, of either chain, EVM networks first: the one list that ingest's choice
 * and the console read (the node's assembly builds it from EVM_NETWORKS and FABRIC_NETWORKS).
 */
export class ConfiguredNetworks extends Context.Service<ConfiguredNetworks, ReadonlyArray<NetworkSummary>>()(
  "anchord/anchoring/ConfiguredNetworks"
) {}

/** The Fabric network of an environment: the override, else the first configured one, else the default id. */
export const chooseFabricNetwork = (
  networks: ReadonlyArray<{ readonly networkId: string; readonly environment: Environment }>,
  environment: Environment,
  override: Option.Option<string>
): string =>
  Option.isSome(override)
    ? override.value
    : networks.find((n) => n.environment === environment)?.networkId ?? (environment === "test" ? "fabric-dev" : "fabric-byo")

export const fabricOverrides = Config.all({
  test: Config.option(Config.String("FABRIC_TEST_NETWORK_ID")),
  live: Config.option(Config.String("FABRIC_LIVE_NETWORK_ID"))
})

export interface NetworkChoice {
  /** The primary network (for hybrid records: the EVM one). */
  readonly networkId: string
}

export class Networks extends Context.Service<Networks, {
  readonly choose: (environment: Environment, chain: ChainType) => NetworkChoice
  /**
   * Whether a configured network anchors this chain in this environment, else the record is refused
   * at ingest (CHAIN_NOT_CONFIGURED) rather than left in QUEUED forever: EVM records need an EVM
   * network of the environment (or EVM_<ENV>_NETWORK_ID naming one, which another node of the same
   * database may anchor), Fabric records a Fabric one (likewise), hybrid records both: docs/doctor.md.
   */
  readonly anchorable: (environment: Environment, chain: ChainType) => boolean
}>()("anchord/anchoring/Networks") {
  static readonly layer = Layer.effect(
    Networks,
    Effect.gen(function*() {
      const configured = yield* ConfiguredNetworks
      const networks = configured.filter((n) => n.chainType === "evm")
      const fabricNetworks = configured.filter((n) => n.chainType === "fabric")
      const ids = yield* Config.all({
        evmTest: Config.option(Config.String("EVM_TEST_NETWORK_ID")),
        evmLive: Config.option(Config.String("EVM_LIVE_NETWORK_ID")),
        fabric: fabricOverrides
      })
      const evmFor = (environment: Environment, wanted: Option.Option<string>, fallback: string) => ({
        networkId: Option.isSome(wanted)
          ? wanted.value
          : networks.find((n) => n.environment === environment)?.networkId ?? fallback
      })
      const evmTest = evmFor("test", ids.evmTest, "hardhat-local")
      const evmLive = evmFor("live", ids.evmLive, "evm-live")
      const fabricTest = { networkId: chooseFabricNetwork(fabricNetworks, "test", ids.fabric.test) }
      const fabricLive = { networkId: chooseFabricNetwork(fabricNetworks, "live", ids.fabric.live) }
      const serves = (list: ReadonlyArray<NetworkSummary>, override: Record<Environment, Option.Option<string>>) => ({
        test: Option.isSome(override.test) || list.some((n) => n.environment === "test"),
        live: Option.isSome(override.live) || list.some((n) => n.environment === "live")
      })
      const evmServes = serves(networks, { test: ids.evmTest, live: ids.evmLive })
      const fabricServes = serves(fabricNetworks, ids.fabric)
      return Networks.of({
        anchorable: (environment, chain) =>
          chain === "evm"
            ? evmServes[environment]
            : chain === "fabric"
            ? fabricServes[environment]
            : evmServes[environment] && fabricServes[environment],
        choose: (environment, chain) =>
          chain === "fabric"
            ? (environment === "test" ? fabricTest : fabricLive)
            : (environment === "test" ? evmTest : evmLive)
      })
    })
  )
}
