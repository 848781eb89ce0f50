/**
 * Which network a new record is anchored on. The chain issues replace the defaults with configured
 * networks; until then records wait in QUEUED under the network id they were given here.
 */
import { Config, Context, Effect, Layer } from "effect"
import type { Environment } from "../auth/apiKeys.ts"

export interface NetworkChoice {
  /** The primary network (for hybrid records: the EVM one). */
  readonly networkId: string
}

export class Networks extends Context.Service<Networks, {
  readonly choose: (environment: Environment, chain: "evm" | "fabric" | "hybrid") => NetworkChoice
}>()("anchord/batching/Networks") {
  static readonly layer = Layer.effect(
    Networks,
    Effect.gen(function*() {
      const ids = yield* Config.all({
        evmTest: Config.String("EVM_TEST_NETWORK_ID").pipe(Config.withDefault("hardhat-local")),
        evmLive: Config.String("EVM_LIVE_NETWORK_ID").pipe(Config.withDefault("evm-live")),
        fabricTest: Config.String("FABRIC_TEST_NETWORK_ID").pipe(Config.withDefault("fabric-dev")),
        fabricLive: Config.String("FABRIC_LIVE_NETWORK_ID").pipe(Config.withDefault("fabric-byo"))
      })
      return Networks.of({
        choose: (environment, chain) => ({
          networkId: chain === "fabric"
            ? (environment === "test" ? ids.fabricTest : ids.fabricLive)
            : (environment === "test" ? ids.evmTest : ids.evmLive)
        })
      })
    })
  )
}
