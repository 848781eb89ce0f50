/**
 * C2SP signed-note (c2sp.org/signed-note): a text ending in a newline, a blank line, and one or more lines
 * `— <key name> <base64(key id || signature)>`. Ed25519 keys (signature type 0x01), whose key id is the first
 * four bytes of SHA-256(name || "\n" || 0x01 || public key) and whose verifier key (vkey) is
 * `<name>+<hex key id>+<base64(0x01 || public key)>`. The rules are those of Go's golang.org/x/mod/sumdb/note,
 * parsing strictly: base64 must be canonical, hex lowercase, and anything else refuses the whole note.
 * Ed25519 is node:crypto's.
 */
import * as Crypto from "node:crypto"
import * as Result from "effect/Result"
import { MalformedInput, NoteNotVerified } from "./errors.ts"

const ALG_ED25519 = 0x01
/** Go's note.Open refuses more; the spec asks to accept at least 16. */
const MAX_SIGNATURES = 100
const SIG_PREFIX = "\u2014 "

export interface NoteSigner {
  readonly name: string
  readonly keyId: number
  /** The vkey that verifies this signer's notes. */
  readonly verifierKey: string
  readonly sign: (message: Uint8Array) => Uint8Array
}

export interface NoteVerifier {
  readonly name: string
  readonly keyId: number
  readonly verify: (message: Uint8Array, signature: Uint8Array) => boolean
}

/** One signature line of a note; `signature` is its base64 as written (key id included). */
export interface NoteSignature {
  readonly name: string
  readonly keyId: number
  readonly signature: string
}

export interface Note {
  /** The signed text, its final newline included. */
  readonly text: string
  /** Signatures by the given verifiers, each checked. */
  readonly signatures: ReadonlyArray<NoteSignature>
  /** Signatures by keys not given (witnesses, a rotated key): kept, not checked. */
  readonly unverified: ReadonlyArray<NoteSignature>
}

const utf8 = new TextEncoder()
/** A lone surrogate: a string JavaScript holds but UTF-8 cannot carry. */
const LONE_SURROGATE = /\p{Cs}/u
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

/** Key names: non-empty, no Unicode white space (Go's unicode.IsSpace), no "+". */
export const isValidKeyName = (name: string): boolean => name !== "" && !/[\p{White_Space}+]/u.test(name) && !LONE_SURROGATE.test(name)

/** Standard base64 that decodes and re-encodes to itself (no stray characters, padding or bits). */
export const decodeBase64 = (s: string): Uint8Array | undefined => {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) return undefined
  const bytes = Buffer.from(s, "base64")
  return bytes.toString("base64") === s ? new Uint8Array(bytes) : undefined
}

export const encodeBase64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString("base64")

/** The C2SP key id: the first four bytes, big-endian, of SHA-256(name || "\n" || type || public key). */
const keyIdOf = (name: string, typedKey: Uint8Array): number => {
  const digest = Crypto.createHash("sha256").update(name).update("\n").update(typedKey).digest()
  return digest.readUInt32BE(0)
}

const hex8 = (keyId: number) => keyId.toString(16).padStart(8, "0")

const rawEd25519Public = (key: Crypto.KeyObject): Uint8Array => new Uint8Array(Buffer.from(key.export({ format: "jwk" }).x!, "base64url"))

const publicFromRaw = (raw: Uint8Array): Crypto.KeyObject =>
  Crypto.createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(raw).toString("base64url") }, format: "jwk" })

// PKCS#8 wrapping of a 32-byte Ed25519 seed (RFC 8410).
const PKCS8_ED25519 = Buffer.from("302e020100300506032b657004220420", "hex")
const privateFromSeed = (seed: Uint8Array): Crypto.KeyObject =>
  Crypto.createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seed]), format: "der", type: "pkcs8" })

/** The vkey of an Ed25519 public key (32 raw bytes) under `name`. */
export const ed25519VerifierKey = (name: string, publicKey: Uint8Array): string => {
  if (!isValidKeyName(name)) throw new TypeError(`invalid note key name ${JSON.stringify(name)}`)
  if (publicKey.length !== 32) throw new TypeError(`an Ed25519 public key is 32 bytes, got ${publicKey.length}`)
  const typed = new Uint8Array([ALG_ED25519, ...publicKey])
  return `${name}+${hex8(keyIdOf(name, typed))}+${encodeBase64(typed)}`
}

/** A signer for `name` with an Ed25519 private key (e.g. read from a PKCS#8 PEM file). */
export const ed25519NoteSigner = (name: string, privateKey: Crypto.KeyObject): NoteSigner => {
  if (privateKey.type !== "private" || privateKey.asymmetricKeyType !== "ed25519") throw new TypeError("a note signer needs an Ed25519 private key")
  const publicKey = rawEd25519Public(Crypto.createPublicKey(privateKey))
  return {
    name,
    keyId: keyIdOf(name, new Uint8Array([ALG_ED25519, ...publicKey])),
    verifierKey: ed25519VerifierKey(name, publicKey),
    sign: (message) => new Uint8Array(Crypto.sign(null, message, privateKey))
  }
}

const malformedKey = (format: "verifier key" | "signer key", detail: string) => Result.fail(new MalformedInput({ format, detail }))

/** Splits `<name>+<hex id>+<base64 key>` (the key's base64 may itself contain "+"). */
const splitKey = (s: string): { name: string; id: string; key64: string } | undefined => {
  const a = s.indexOf("+")
  const b = a < 0 ? -1 : s.indexOf("+", a + 1)
  return b < 0 ? undefined : { name: s.slice(0, a), id: s.slice(a + 1, b), key64: s.slice(b + 1) }
}

/** A verifier from its vkey `<name>+<hex key id>+<base64(0x01 || Ed25519 public key)>`. */
export const parseVerifierKey = (vkey: string): Result.Result<NoteVerifier, MalformedInput> => {
  const parts = splitKey(vkey)
  if (parts === undefined || !isValidKeyName(parts.name) || !/^[0-9a-f]{8}$/.test(parts.id)) {
    return malformedKey("verifier key", "not <name>+<8 hex digits>+<base64 key>")
  }
  const typed = decodeBase64(parts.key64)
  if (typed === undefined || typed.length === 0) return malformedKey("verifier key", "the key is not base64")
  if (typed[0] !== ALG_ED25519 || typed.length !== 33) return malformedKey("verifier key", "not an Ed25519 key (type 0x01, 32 bytes)")
  const keyId = Number.parseInt(parts.id, 16)
  if (keyId !== keyIdOf(parts.name, typed)) return malformedKey("verifier key", "the key id does not match the name and key")
  const key = publicFromRaw(typed.subarray(1))
  return Result.succeed({ name: parts.name, keyId, verify: (message, signature) => Crypto.verify(null, message, key, signature) })
}

/**
 * A signer from Go's private key text `PRIVATE+KEY+<name>+<hex key id>+<base64(0x01 || Ed25519 seed)>`
 * (golang.org/x/mod/sumdb/note's GenerateKey and NewSigner).
 */
export const parseSignerKey = (skey: string): Result.Result<NoteSigner, MalformedInput> => {
  const parts = skey.startsWith("PRIVATE+KEY+") ? splitKey(skey.slice("PRIVATE+KEY+".length)) : undefined
  if (parts === undefined || !isValidKeyName(parts.name) || !/^[0-9a-f]{8}$/.test(parts.id)) {
    return malformedKey("signer key", "not PRIVATE+KEY+<name>+<8 hex digits>+<base64 key>")
  }
  const typed = decodeBase64(parts.key64)
  if (typed === undefined || typed[0] !== ALG_ED25519 || typed.length !== 33) return malformedKey("signer key", "not an Ed25519 seed (type 0x01, 32 bytes)")
  const signer = ed25519NoteSigner(parts.name, privateFromSeed(typed.subarray(1)))
  if (signer.keyId !== Number.parseInt(parts.id, 16)) return malformedKey("signer key", "the key id does not match the name and key")
  return Result.succeed(signer)
}

/** No ASCII control character but newline, and no lone surrogate (so the text is valid UTF-8). */
const isNoteText = (s: string) => !/[\u0000-\u0009\u000b-\u001f]/.test(s) && !LONE_SURROGATE.test(s)

/**
 * The signed note of `text` (which must end in a newline) by each signer, in order.
 * @throws TypeError on a text no note can carry or a signer with an invalid name.
 */
export const signNote = (text: string, signers: ReadonlyArray<NoteSigner>): string => {
  if (!text.endsWith("\n") || !isNoteText(text)) throw new TypeError("a note's text ends in a newline and has no other control character")
  if (signers.length === 0) throw new TypeError("a note needs at least one signature")
  const message = utf8.encode(text)
  const lines = signers.map((s) => {
    if (!isValidKeyName(s.name)) throw new TypeError(`invalid note key name ${JSON.stringify(s.name)}`)
    const id = Buffer.alloc(4)
    id.writeUInt32BE(s.keyId)
    return `${SIG_PREFIX}${s.name} ${encodeBase64(new Uint8Array([...id, ...s.sign(message)]))}\n`
  })
  return `${text}\n${lines.join("")}`
}

const malformed = (detail: string) => Result.fail(new MalformedInput({ format: "note", detail }))
const notVerified = (reason: NoteNotVerified["reason"], detail: string) => Result.fail(new NoteNotVerified({ reason, detail }))

/**
 * Parses a signed note and checks its signatures by `verifiers` (Go's note.Open): signatures by other keys are
 * returned unchecked, a known key's bad signature refuses the note, and so does a note no known key signed.
 */
export const openNote = (
  message: string | Uint8Array,
  verifiers: ReadonlyArray<NoteVerifier>
): Result.Result<Note, MalformedInput | NoteNotVerified> => {
  let msg: string
  if (typeof message === "string") {
    msg = message
  } else {
    try {
      msg = strictUtf8.decode(message)
    } catch {
      return malformed("not valid UTF-8")
    }
  }
  if (!isNoteText(msg)) return malformed("a control character other than newline, or not valid UTF-8")
  const split = msg.lastIndexOf("\n\n")
  if (split < 0) return malformed("no blank line before the signatures")
  const text = msg.slice(0, split + 1)
  const sigText = msg.slice(split + 2)
  if (sigText === "" || !sigText.endsWith("\n")) return malformed("the signature lines do not end in a newline")
  const lines = sigText.slice(0, -1).split("\n")
  if (lines.length > MAX_SIGNATURES) return malformed(`more than ${MAX_SIGNATURES} signatures`)
  const textBytes = utf8.encode(text)
  const signatures: Array<NoteSignature> = []
  const unverified: Array<NoteSignature> = []
  const seen = new Set<string>()
  for (const line of lines) {
    if (!line.startsWith(SIG_PREFIX)) return malformed("a signature line does not start with an em dash and a space")
    const body = line.slice(SIG_PREFIX.length)
    const space = body.indexOf(" ")
    const name = space < 0 ? body : body.slice(0, space)
    const b64 = space < 0 ? "" : body.slice(space + 1)
    const sig = decodeBase64(b64)
    if (!isValidKeyName(name) || sig === undefined || sig.length < 5) return malformed("a signature line is not <name> <base64 signature>")
    const keyId = Buffer.from(sig.subarray(0, 4)).readUInt32BE(0)
    const entry = { name, keyId, signature: b64 }
    const known = verifiers.filter((v) => v.name === name && v.keyId === keyId)
    if (known.length > 1) return notVerified("ambiguous-key", `two verifiers for ${name}+${hex8(keyId)}`)
    if (seen.has(known.length === 0 ? line : `${name}+${keyId}`)) continue
    seen.add(known.length === 0 ? line : `${name}+${keyId}`)
    if (known.length === 0) {
      unverified.push(entry)
      continue
    }
    if (!known[0]!.verify(textBytes, sig.subarray(4))) return notVerified("invalid-signature", `invalid signature for key ${name}+${hex8(keyId)}`)
    signatures.push(entry)
  }
  if (signatures.length === 0) return notVerified("unverified", "no signature by a known key")
  return Result.succeed({ text, signatures, unverified })
}
