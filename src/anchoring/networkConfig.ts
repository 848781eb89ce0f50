/**
 * What EVM_NETWORKS and FABRIC_NETWORKS have in common (docs/configuration-evm.md,
 * docs/configuration-fabric.md): a JSON array of networks, each with an id, an environment and the
 * batching members with the same defaults, parsed with messages that name the field (never a value
 * that may be a secret), refused when an id is listed twice; per-network variables named
 * `<PREFIX>_<NETWORK_ID>` (id upper-cased, non-alphanumerics as `_`).
 */
import { Effect, Schema } from "effect"
import { Environment } from "../api/recordSchemas.ts"

export const PositiveInt = Schema.Number.check(Schema.isInt(), Schema.isGreaterThan(0))
export const NonNegativeInt = Schema.Number.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0))
export const NetworkId = Schema.String.check(Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/))
export const EnvironmentSchema: Schema.Codec<Environment> = Environment

/** The members every network of either chain may give. */
export const commonNetworkFields = {
  networkId: NetworkId,
  environment: Schema.optionalKey(EnvironmentSchema),
  /** A batch is cut at this many records ... */
  batchMaxSize: Schema.optionalKey(PositiveInt),
  /** ... or when the oldest queued record is this old (ms). */
  batchWindowMs: Schema.optionalKey(PositiveInt)
}

export interface CommonNetworkConfig {
  readonly networkId: string
  readonly environment: Environment
  readonly batchMaxSize: number
  readonly batchWindowMs: number
}

/** The defaults of the common members: test environment, batches of at most 1,000 records (capped at 50,000) or 1 s. */
export const commonDefaults = (n: {
  readonly networkId: string
  readonly environment?: Environment | undefined
  readonly batchMaxSize?: number | undefined
  readonly batchWindowMs?: number | undefined
}): CommonNetworkConfig => ({
  networkId: n.networkId,
  environment: n.environment ?? "test",
  batchMaxSize: Math.min(n.batchMaxSize ?? 1000, 50_000),
  batchWindowMs: n.batchWindowMs ?? 1000
})

/** `<PREFIX>_<NETWORK_ID>`: `EVM_PRIVATE_KEY` + `base-sepolia` → `EVM_PRIVATE_KEY_BASE_SEPOLIA`. */
export const perNetworkVariable = (prefix: string, networkId: string) => `${prefix}_${networkId.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`

/**
 * Parses the JSON array of `variable` with `item`'s schema; the networks in order. `fail` builds the
 * chain's configuration error from a message; `redact` cleans a schema error's message of values that
 * must not be echoed.
 */
export const parseNetworkList = <S extends Schema.Top & { readonly DecodingServices: never }, E>(options: {
  readonly variable: string
  readonly item: S
  readonly fail: (message: string) => E
  readonly redact?: (message: string) => string
}) => {
  const decode = Schema.decodeUnknownEffect(Schema.Array(options.item))
  return Effect.fnUntraced(function*(text: string): Effect.fn.Return<ReadonlyArray<S["Type"]>, E> {
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      return yield* Effect.fail(options.fail(`${options.variable} is not valid JSON`))
    }
    const list = yield* decode(json).pipe(
      Effect.mapError((e) => options.fail(`${options.variable}: ${(options.redact ?? String)(String(e.message))}`))
    )
    const seen = new Set<string>()
    for (const n of list as ReadonlyArray<{ readonly networkId: string }>) {
      if (seen.has(n.networkId)) return yield* Effect.fail(options.fail(`${options.variable}: duplicate networkId ${n.networkId}`))
      seen.add(n.networkId)
    }
    return list
  })
}
