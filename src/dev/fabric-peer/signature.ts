/**
 * Creator identities and signatures, as Fabric checks them: `msp.SerializedIdentity` holding a PEM
 * X.509 certificate; ECDSA P-256 over SHA-256, DER encoded, low-S required (Fabric's bccsp rejects
 * signatures whose S is above half the curve order).
 */
import { createHash, sign as cryptoSign, verify as cryptoVerify, X509Certificate, type KeyObject } from "node:crypto"
import { msp } from "@hyperledger/fabric-protos"
import { derInteger, derSequence } from "./identity.ts"

/** Order of the P-256 group. */
export const P256_N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n
const P256_HALF_N = P256_N >> 1n

export interface Creator {
  readonly mspId: string
  readonly certPem: string
  readonly certificate: X509Certificate
  /** The serialized identity bytes as sent by the client. */
  readonly bytes: Uint8Array
}

export class IdentityError extends Error {}

export function parseCreator(bytes: Uint8Array): Creator {
  let identity: msp.SerializedIdentity
  try {
    identity = msp.SerializedIdentity.deserializeBinary(bytes)
  } catch {
    throw new IdentityError("could not deserialize a SerializedIdentity")
  }
  const certPem = Buffer.from(identity.getIdBytes_asU8()).toString("utf8")
  let certificate: X509Certificate
  try {
    certificate = new X509Certificate(certPem)
  } catch {
    throw new IdentityError(`could not parse the certificate of the ${identity.getMspid()} identity`)
  }
  return { mspId: identity.getMspid(), certPem, certificate, bytes }
}

export function serializeIdentity(mspId: string, certPem: string): Uint8Array {
  const identity = new msp.SerializedIdentity()
  identity.setMspid(mspId)
  identity.setIdBytes(Buffer.from(certPem, "utf8"))
  return identity.serializeBinary()
}

/** Reads (r, s) from a DER ECDSA-Sig-Value. Throws on malformed input. */
export function decodeEcdsaSignature(signature: Uint8Array): { r: bigint; s: bigint } {
  const bytes = Buffer.from(signature)
  let offset = 0
  const readLength = (): number => {
    const first = bytes[offset++]!
    if (first < 0x80) return first
    const count = first & 0x7f
    if (count === 0 || count > 2) throw new Error("bad DER length")
    let length = 0
    for (let i = 0; i < count; i++) length = length * 256 + bytes[offset++]!
    return length
  }
  const readInteger = (): bigint => {
    if (bytes[offset++] !== 0x02) throw new Error("expected DER INTEGER")
    const length = readLength()
    if (length === 0 || offset + length > bytes.length) throw new Error("bad DER INTEGER")
    const value = BigInt("0x" + bytes.subarray(offset, offset + length).toString("hex"))
    offset += length
    return value
  }
  if (bytes[offset++] !== 0x30) throw new Error("expected DER SEQUENCE")
  const length = readLength()
  if (offset + length !== bytes.length) throw new Error("bad DER SEQUENCE length")
  const r = readInteger()
  const s = readInteger()
  if (offset !== bytes.length) throw new Error("trailing bytes after signature")
  return { r, s }
}

export const encodeEcdsaSignature = (r: bigint, s: bigint): Buffer => derSequence(derInteger(r), derInteger(s))

export const isLowS = (s: bigint): boolean => s <= P256_HALF_N

/** ECDSA P-256 SHA-256 signature in Fabric's canonical low-S form (as fabric-gateway's signers produce). */
export function signLowS(privateKey: KeyObject, message: Uint8Array): Buffer {
  const { r, s } = decodeEcdsaSignature(cryptoSign("sha256", message, privateKey))
  return encodeEcdsaSignature(r, isLowS(s) ? s : P256_N - s)
}

/**
 * Verifies `signature` over `message` by `creator`. Returns null when valid, or the reason it is not
 * (the dev peer logs it; clients only get Fabric's generic "access denied" style errors).
 */
export function verifySignature(creator: Creator, message: Uint8Array, signature: Uint8Array): string | null {
  if (signature.length === 0) return "empty signature"
  let s: bigint
  try {
    s = decodeEcdsaSignature(signature).s
  } catch (error) {
    return `malformed signature: ${(error as Error).message}`
  }
  if (!isLowS(s)) return "invalid S: must be smaller than half the order"
  const key = creator.certificate.publicKey
  if (key.asymmetricKeyType !== "ec" || key.asymmetricKeyDetails?.namedCurve !== "prime256v1") {
    return "unsupported creator key: only ECDSA P-256 is supported by the dev peer"
  }
  return cryptoVerify("sha256", message, key, signature) ? null : "signature verification failed"
}

/** Fabric transaction id: hex(sha256(nonce ‖ serialized creator)). */
export const computeTxId = (nonce: Uint8Array, creator: Uint8Array): string => createHash("sha256").update(nonce).update(creator).digest("hex")
