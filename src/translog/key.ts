/**
 * The key that signs the node's transparency-log checkpoints (docs/transparency-log.md, "The checkpoint key"):
 * an Ed25519 key whose PKCS#8 PEM LOG_KEY_FILE names; `anchord dev` makes one under
 * `<dataDir>/translog/log.key` (mode 0600) on first start, like the receipt key. Without either, checkpoints
 * are published unsigned and not served.
 *
 * A network's log is named by its origin, `<host of PUBLIC_URL, or localhost:<port>>/log/<networkId>` (C2SP
 * origins have no scheme); each log's notes are signed under its origin as the key name, so each has its own
 * verifier key (`<origin>+<key id>+<key>`), all over the one key.
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Config, ConfigProvider, Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../config.ts"
import { ed25519NoteSigner, type NoteSigner } from "../tlog/note.ts"
import { CheckpointSigner, type CheckpointSigning } from "./LogStore.ts"

/** `anchord dev` sets it: without LOG_KEY_FILE, a dev key under the data directory. */
export const LogDevDefault = Context.Reference<boolean>("anchord/translog/LogDevDefault", { defaultValue: () => false })

const configError = (message: string) => new Config.ConfigError(new ConfigProvider.SourceError({ message }))

/** An Ed25519 private key from a PKCS#8 PEM; the error says what is wrong (never the key). */
export const logKeyFromPem = (pem: string, source: string): Crypto.KeyObject | string => {
  let key: Crypto.KeyObject
  try {
    key = Crypto.createPrivateKey(pem)
  } catch {
    return `${source}: not a PEM private key`
  }
  return key.asymmetricKeyType === "ed25519" ? key : `${source}: the log key must be Ed25519`
}

/** The dev key under `<dataDir>/translog`, made on first use. */
export const devLogKeyFile = (dataDir: string): string => {
  const dir = Path.join(dataDir, "translog")
  const file = Path.join(dir, "log.key")
  if (!Fs.existsSync(file)) {
    Fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
    const { privateKey } = Crypto.generateKeyPairSync("ed25519")
    // wx: two processes starting at once keep the first key.
    try {
      Fs.writeFileSync(file, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600, flag: "wx" })
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e
    }
  }
  return file
}

/** The log's origin: the host (and port) of PUBLIC_URL, else `localhost:<PORT>`, then `/log/<networkId>`. */
export const logOrigin = (config: { readonly baseUrl: Option.Option<string>; readonly port: number }, networkId: string): string =>
  `${Option.match(config.baseUrl, { onNone: () => `localhost:${config.port}`, onSome: (url) => new URL(url).host })}/log/${networkId}`

export interface LogSigning extends CheckpointSigning {
  /** The vkey that verifies the network's checkpoints (`anchord monitor --key`). */
  readonly verifierKey: (networkId: string) => string
}

export class LogKey extends Context.Service<LogKey, { readonly signing: Option.Option<LogSigning> }>()("anchord/translog/LogKey") {
  static readonly layer = Layer.effect(LogKey, Effect.gen(function*() {
    const config = yield* AppConfig
    const configured = yield* Config.option(Config.String("LOG_KEY_FILE"))
    const file = Option.isSome(configured)
      ? configured.value
      : (yield* LogDevDefault)
      ? devLogKeyFile(Path.resolve(config.dataDir))
      : undefined
    if (file === undefined) return { signing: Option.none() }
    const pem = yield* Effect.try({
      try: () => Fs.readFileSync(file, "utf8"),
      catch: () => configError(`LOG_KEY_FILE: cannot read ${file}`)
    })
    const key = logKeyFromPem(pem, "LOG_KEY_FILE")
    if (typeof key === "string") return yield* Effect.fail(configError(key))
    const signers = new Map<string, NoteSigner>()
    const origin = (networkId: string) => logOrigin(config, networkId)
    const signer = (networkId: string) => {
      let s = signers.get(networkId)
      if (s === undefined) signers.set(networkId, s = ed25519NoteSigner(origin(networkId), key))
      return s
    }
    return { signing: Option.some({ origin, signer, verifierKey: (networkId: string) => signer(networkId).verifierKey }) }
  }))
}

/** The LogStore's CheckpointSigner from the log key: published checkpoints carry signed notes when there is one. */
export const CheckpointSignerLayer = Layer.effect(CheckpointSigner, Effect.map(LogKey, (k) => Option.getOrUndefined(k.signing)))
