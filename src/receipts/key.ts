/**
 * The node's receipt key (docs/proof-format.md, "COSE Receipts"): an ECDSA P-256 key (ES256) that signs
 * COSE Receipts. RECEIPT_KEY_FILE names its PKCS#8 PEM; `anchord dev` makes one under
 * `<dataDir>/receipts/receipt.key` (mode 0600) on first start, like the dev TSA key. Without either,
 * receipts are off (the endpoints answer 404 saying so). Its public key is served at
 * /.well-known/scitt-keys (COSE_KeySet) and /.well-known/anchord-receipt-key.pem.
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Config, Context, Effect, Layer, Option } from "effect"
import { AppConfig, configError } from "../config.ts"
import { type CborValue, encode } from "./cbor.ts"
import { ALG_ES256 } from "./receipt.ts"

export interface ReceiptSigner {
  /** SHA-256 of the public key's SPKI DER: the receipts' `kid`. */
  readonly kid: Uint8Array
  readonly publicKeyPem: string
  readonly publicKeySpki: Uint8Array
  /** ES256, IEEE P1363 (r || s, 64 bytes) as COSE wants it. */
  readonly sign: (data: Uint8Array) => Uint8Array
}

/** `anchord dev` sets it: without RECEIPT_KEY_FILE, a dev key under the data directory. */
export const ReceiptDevDefault = Context.Reference<boolean>("anchord/receipts/ReceiptDevDefault", { defaultValue: () => false })

/** A signer over a PKCS#8 PEM P-256 key; the error says what is wrong (never the key). */
export const signerFromPem = (pem: string, source: string): ReceiptSigner | string => {
  let key: Crypto.KeyObject
  try {
    key = Crypto.createPrivateKey(pem)
  } catch {
    return `${source}: not a PEM private key`
  }
  if (key.asymmetricKeyType !== "ec" || key.asymmetricKeyDetails?.namedCurve !== "prime256v1") {
    return `${source}: the receipt key must be ECDSA P-256 (ES256)`
  }
  const spki = new Uint8Array(Crypto.createPublicKey(key).export({ type: "spki", format: "der" }))
  return {
    kid: new Uint8Array(Crypto.hash("sha256", spki, "buffer")),
    publicKeyPem: Crypto.createPublicKey(key).export({ type: "spki", format: "pem" }).toString(),
    publicKeySpki: spki,
    sign: (data) => new Uint8Array(Crypto.sign("sha256", data, { key, dsaEncoding: "ieee-p1363" }))
  }
}

/** The dev key under `<dataDir>/receipts`, made on first use. */
export const devReceiptKeyFile = (dataDir: string): string => {
  const dir = Path.join(dataDir, "receipts")
  const file = Path.join(dir, "receipt.key")
  if (!Fs.existsSync(file)) {
    Fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
    const { privateKey } = Crypto.generateKeyPairSync("ec", { namedCurve: "P-256" })
    // wx: two processes starting at once keep the first key.
    try {
      Fs.writeFileSync(file, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600, flag: "wx" })
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e
    }
  }
  return file
}

/** COSE_Key (RFC 9052 §7) of the public key: kty EC2, crv P-256, x, y, kid, alg ES256. */
export const coseKey = (s: ReceiptSigner): Map<CborValue, CborValue> => {
  const jwk = Crypto.createPublicKey({ key: Buffer.from(s.publicKeySpki), format: "der", type: "spki" }).export({ format: "jwk" })
  return new Map<CborValue, CborValue>([
    [1, 2],
    [2, s.kid],
    [3, ALG_ES256],
    [-1, 1],
    [-2, new Uint8Array(Buffer.from(jwk.x!, "base64url"))],
    [-3, new Uint8Array(Buffer.from(jwk.y!, "base64url"))]
  ])
}

/** /.well-known/scitt-keys: a COSE_KeySet of the one receipt key. */
export const coseKeySet = (s: ReceiptSigner): Uint8Array => encode([coseKey(s)])

export class ReceiptKey extends Context.Service<ReceiptKey, { readonly signer: Option.Option<ReceiptSigner> }>()("anchord/receipts/ReceiptKey") {
  static readonly layer = Layer.effect(ReceiptKey, Effect.gen(function*() {
    const configured = yield* Config.option(Config.String("RECEIPT_KEY_FILE"))
    const file = Option.isSome(configured)
      ? configured.value
      : (yield* ReceiptDevDefault)
      ? devReceiptKeyFile(Path.resolve((yield* AppConfig).dataDir))
      : undefined
    if (file === undefined) return { signer: Option.none() }
    const pem = yield* Effect.try({
      try: () => Fs.readFileSync(file, "utf8"),
      catch: () => configError(`RECEIPT_KEY_FILE: cannot read ${file}`)
    })
    const signer = signerFromPem(pem, "RECEIPT_KEY_FILE")
    if (typeof signer === "string") return yield* Effect.fail(configError(signer))
    return { signer: Option.some(signer) }
  }))
}
