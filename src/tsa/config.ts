/**
 * The TSA's configuration (docs/timestamping.md). Off unless TSA_CERT_FILE and TSA_KEY_FILE are set,
 * or under `anchord dev`, which makes a dev root CA and TSA certificate in the data directory.
 */
import * as Path from "node:path"
import { Config, Context, Effect, Layer, Option, type Redacted } from "effect"
import { AppConfig, configError, secretConfig } from "../config.ts"
import { quoted } from "../excerpt.ts"
import { devTsaFiles } from "./devCa.ts"
import type { TsaFiles } from "./keys.ts"

/**
 * The default policy (TSA_POLICY_OID): a UUID-based OID (ITU-T X.667, arc 2.25), which needs no
 * registration. An operator with its own arc (an enterprise number) sets theirs.
 */
export const DEFAULT_POLICY_OID = "2.25.254261995566862221233085334779423650513"

export interface TsaSettings {
  /** None: the TSA is off (its endpoints answer 404 NOT_FOUND saying so). */
  readonly files: Option.Option<TsaFiles>
  /** The dev root CA of `anchord dev` (printed in the banner); none in production. */
  readonly devCaFile: Option.Option<string>
  readonly policy: string
  /** The accuracy stated in every token (TSA_ACCURACY_MS): how far genTime may be from UTC. */
  readonly accuracyMillis: number
  /** TSA_PUBLIC: requests without a key are served, limited per client address. */
  readonly public: boolean
  /** TSA_PUBLIC_API_KEY: the key whose account the anonymous tokens are recorded (and counted) under. */
  readonly publicApiKey: Option.Option<Redacted.Redacted<string>>
}

/** `anchord dev` sets it: without TSA_CERT_FILE, a dev CA and TSA certificate under the data directory. */
export const TsaDevDefault = Context.Reference<boolean>("anchord/tsa/TsaDevDefault", { defaultValue: () => false })

const OID_TEXT = /^[0-2](\.(0|[1-9][0-9]*))+$/

export const tsaConfig = Config.all({
  cert: Config.option(Config.String("TSA_CERT_FILE")),
  key: Config.option(Config.String("TSA_KEY_FILE")),
  chain: Config.option(Config.String("TSA_CHAIN_FILE")),
  policy: Config.String("TSA_POLICY_OID").pipe(Config.withDefault(DEFAULT_POLICY_OID)),
  accuracyMillis: Config.Int("TSA_ACCURACY_MS").pipe(Config.withDefault(1000)),
  public: Config.Boolean("TSA_PUBLIC").pipe(Config.withDefault(false)),
  publicApiKey: secretConfig("TSA_PUBLIC_API_KEY")
}).pipe(Config.mapEffect((c) => {
  if (Option.isSome(c.cert) !== Option.isSome(c.key)) {
    return Effect.fail(configError("TSA_CERT_FILE and TSA_KEY_FILE go together: set both (the TSA certificate and its key) or neither (no TSA)"))
  }
  if (!OID_TEXT.test(c.policy)) return Effect.fail(configError(`TSA_POLICY_OID: ${quoted(c.policy)} is not an OID (dotted decimal, e.g. 1.3.6.1.4.1.99999.1)`))
  if (!(c.accuracyMillis >= 1 && c.accuracyMillis <= 60_000)) return Effect.fail(configError("TSA_ACCURACY_MS: from 1 to 60000"))
  if (c.public && Option.isNone(c.publicApiKey)) {
    return Effect.fail(configError("TSA_PUBLIC=true needs TSA_PUBLIC_API_KEY: the API key whose account anonymous tokens are recorded and counted under"))
  }
  return Effect.succeed(c)
}))

export class TsaConfig extends Context.Service<TsaConfig, TsaSettings>()("anchord/tsa/TsaConfig") {
  static readonly layer = Layer.effect(TsaConfig, Effect.gen(function*() {
    const c = yield* tsaConfig
    const base = { policy: c.policy, accuracyMillis: c.accuracyMillis, public: c.public, publicApiKey: c.publicApiKey }
    if (Option.isSome(c.cert) && Option.isSome(c.key)) {
      return { ...base, files: Option.some({ certFile: c.cert.value, keyFile: c.key.value, chainFile: Option.getOrUndefined(c.chain) }),
        devCaFile: Option.none() }
    }
    if (!(yield* TsaDevDefault)) return { ...base, files: Option.none(), devCaFile: Option.none() }
    const dataDir = (yield* AppConfig).dataDir
    const dev = yield* Effect.promise(() => devTsaFiles(Path.resolve(dataDir)))
    return { ...base, files: Option.some(dev), devCaFile: Option.some(dev.caFile) }
  }))
}
