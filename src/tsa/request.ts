/**
 * RFC 3161 time-stamp requests, read with the kept ASN.1 libraries (asn1js, and pkijs' TimeStampReq
 * schema for anything but the plain shape): what to stamp, or the PKIFailureInfo that refuses it.
 * Pure functions; ./token.ts issues the token.
 */
import * as asn1js from "asn1js"
import * as pkijs from "pkijs"
import { type Failure, type ImprintAlgorithm, IMPRINT, OID, toDer } from "./rfc3161.ts"

/** A request the TSA will stamp. */
export interface StampRequest {
  readonly algorithm: ImprintAlgorithm
  readonly imprint: Uint8Array
  readonly nonce: asn1js.Integer | undefined
  /** The nonce's DER as the token repeats it (asn1js' encoding of `nonce`). */
  readonly nonceDer: Uint8Array | undefined
  readonly certReq: boolean
  /** The MessageImprint as received, DER (copied into the TSTInfo). */
  readonly messageImprintDer: Uint8Array
}

export type ParsedRequest =
  | { readonly _tag: "Stamp"; readonly request: StampRequest }
  | { readonly _tag: "Refused"; readonly failure: Failure; readonly text: string }

const refused = (failure: Failure, text: string): ParsedRequest => ({ _tag: "Refused", failure, text })

/**
 * The MessageImprints the quick reading accepts, as DER up to the hash value: SEQUENCE, AlgorithmIdentifier
 * (with or without NULL parameters), OCTET STRING header; encoded once by pkijs. An imprint whose bytes
 * start with one of these and hold exactly the hash after it is DER and is what pkijs would re-encode.
 */
const IMPRINT_PREFIXES: ReadonlyArray<{ readonly prefix: Uint8Array; readonly name: ImprintAlgorithm; readonly length: number }> = [...IMPRINT]
  .flatMap(([oid, { name, length }]) =>
    [undefined, new asn1js.Null()].map((algorithmParams) => {
      const der = new Uint8Array(new pkijs.MessageImprint({
        hashAlgorithm: new pkijs.AlgorithmIdentifier({ algorithmId: oid, ...(algorithmParams ? { algorithmParams } : {}) }),
        hashedMessage: new asn1js.OctetString({ valueHex: new Uint8Array(length) })
      }).toSchema().toBER())
      return { prefix: der.subarray(0, der.length - length), name, length }
    })
  )

const startsWith = (bytes: Uint8Array, prefix: Uint8Array) => {
  if (bytes.length < prefix.length) return false
  for (let i = 0; i < prefix.length; i++) if (bytes[i] !== prefix[i]) return false
  return true
}

/** The bytes an element was decoded from (asn1js keeps a view of the input). */
const rawOf = (element: asn1js.AsnType) => (element as asn1js.BaseBlock).valueBeforeDecodeView

/**
 * The request read from asn1js' tree without pkijs' schema comparison and re-encoding (~100 µs of the
 * ~160 a request cost): only the common, plainly valid shape — version 1, a DER imprint of a supported
 * hash, then optionally the configured policy, a nonce, certReq, nothing else. Anything else (undefined)
 * goes through pkijs, which decides the refusal: both readings give the same request where both apply.
 */
export const quickRequest = (root: asn1js.AsnType, policy: string): StampRequest | undefined => {
  if (!(root instanceof asn1js.Sequence)) return undefined
  const elements = root.valueBlock.value
  const version = elements[0]
  if (!(version instanceof asn1js.Integer) || version.valueBlock.valueHexView.length !== 1 || version.valueBlock.valueHexView[0] !== 1) return undefined
  const imprintElement = elements[1]
  if (!(imprintElement instanceof asn1js.Sequence)) return undefined
  const messageImprintDer = rawOf(imprintElement)
  const known = IMPRINT_PREFIXES.find((p) => p.prefix.length + p.length === messageImprintDer.length && startsWith(messageImprintDer, p.prefix))
  if (known === undefined) return undefined
  let i = 2
  const next = elements[i]
  if (next instanceof asn1js.ObjectIdentifier) {
    if (next.getValue() !== asRead(policy)) return undefined
    i++
  }
  let nonce: asn1js.Integer | undefined
  if (elements[i] instanceof asn1js.Integer) nonce = elements[i++] as asn1js.Integer
  let certReq = false
  if (elements[i] instanceof asn1js.Boolean) certReq = (elements[i++] as asn1js.Boolean).valueBlock.value
  if (i !== elements.length) return undefined
  return {
    algorithm: known.name,
    imprint: messageImprintDer.slice(known.prefix.length),
    nonce,
    nonceDer: nonce === undefined ? undefined : toDer(nonce),
    certReq,
    messageImprintDer: messageImprintDer.slice()
  }
}

/** A DER TimeStampReq, checked: what to stamp, or why not (as a PKIFailureInfo). */
export const parseRequest = (der: Uint8Array, policy: string): ParsedRequest => {
  if (der.length === 0) return refused("badDataFormat", "empty request: expected a DER TimeStampReq")
  // asn1js throws (rather than reporting offset -1) on some malformed primitives, e.g. a UniversalString,
  // BMPString or GeneralizedTime whose length does not fit its type; and reading a decoded tree's values
  // can throw as well. Whatever the bytes, the answer is a refusal, never an exception.
  try {
    const asn1 = asn1js.fromBER(der)
    if (asn1.offset === -1) return refused("badDataFormat", "the request is not DER")
    if (asn1.offset !== der.length) return refused("badDataFormat", "bytes after the TimeStampReq")
    const quick = quickRequest(asn1.result, policy)
    if (quick !== undefined) return { _tag: "Stamp", request: quick }
    return parseWithPkijs(asn1.result, policy)
  } catch {
    return refused("badDataFormat", "the request is not DER")
  }
}

const readings = new Map<string, string>()
/**
 * An OID as asn1js reads it back, which is how a request's reqPolicy reads: asn1js writes an arc past
 * 2^53 in hex ("2.25.{…}"), so a UUID OID (the default policy) never equals its own decimal text.
 */
const asRead = (oid: string) => {
  let read = readings.get(oid)
  if (read === undefined) {
    read = (asn1js.fromBER(new asn1js.ObjectIdentifier({ value: oid }).toBER()).result as asn1js.ObjectIdentifier).getValue()
    readings.set(oid, read)
  }
  return read
}

/** The reference reading (pkijs' TimeStampReq schema): every request the quick one does not take. */
export const parseWithPkijs = (root: asn1js.AsnType, policy: string): ParsedRequest => {
  let request: pkijs.TimeStampReq
  try {
    request = new pkijs.TimeStampReq({ schema: root })
  } catch {
    return refused("badDataFormat", "the request is not a TimeStampReq")
  }
  if (request.version !== 1) return refused("badRequest", `version ${request.version}: only version 1 is supported`)
  const oid = request.messageImprint.hashAlgorithm.algorithmId
  const imprint = new Uint8Array(request.messageImprint.hashedMessage.valueBlock.valueHexView)
  const algorithm = IMPRINT.get(oid)
  if (algorithm === undefined) {
    return refused("badAlg",
      oid === OID.sha1 ? "SHA-1 is refused: use SHA-256, SHA-384 or SHA-512" : `hash algorithm ${oid} is not supported: use SHA-256, SHA-384 or SHA-512`)
  }
  if (imprint.length !== algorithm.length) {
    return refused("badDataFormat", `a ${algorithm.name} imprint is ${algorithm.length} bytes, not ${imprint.length}`)
  }
  if (request.reqPolicy !== undefined && request.reqPolicy !== asRead(policy)) {
    return refused("unacceptedPolicy", `policy ${request.reqPolicy} is not offered: this TSA issues under ${policy}`)
  }
  if (request.extensions !== undefined && request.extensions.length > 0) {
    return refused("unacceptedExtension", "request extensions are not supported")
  }
  return {
    _tag: "Stamp",
    request: {
      algorithm: algorithm.name,
      imprint,
      nonce: request.nonce,
      nonceDer: request.nonce === undefined ? undefined : toDer(request.nonce),
      certReq: request.certReq === true,
      messageImprintDer: toDer(request.messageImprint.toSchema())
    }
  }
}
