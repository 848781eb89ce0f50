/**
 * RFC 3161 time-stamp requests and responses (with RFC 5816's ESSCertIDv2), built with the kept ASN.1 /
 * CMS libraries (pkijs + asn1js): no hand-written DER. Pure functions: parsing a request, and a
 * response (a token, or a refusal with its PKIFailureInfo), given a `TsaSigner` (./keys.ts).
 *
 * The signature is made with node:crypto over the DER of the signed attributes (synchronously: pkijs'
 * own `SignedData.sign` goes through WebCrypto, a promise per token). Per token only the TLVs that
 * change are encoded, into a layout asn1js encoded once per shape (`issue`; docs/timestamping.md,
 * "How a token is built"); `issueFully` is the reference build it must equal.
 */
import * as Crypto from "node:crypto"
import * as asn1js from "asn1js"
import * as pkijs from "pkijs"

export const OID = {
  sha1: "1.3.14.3.2.26",
  sha256: "2.16.840.1.101.3.4.2.1",
  sha384: "2.16.840.1.101.3.4.2.2",
  sha512: "2.16.840.1.101.3.4.2.3",
  signedData: "1.2.840.113549.1.7.2",
  tstInfo: "1.2.840.113549.1.9.16.1.4",
  contentType: "1.2.840.113549.1.9.3",
  messageDigest: "1.2.840.113549.1.9.4",
  signingCertificateV2: "1.2.840.113549.1.9.16.2.47",
  ecdsaWithSha256: "1.2.840.10045.4.3.2",
  sha256WithRsa: "1.2.840.113549.1.1.11",
  timeStamping: "1.3.6.1.5.5.7.3.8"
} as const

export type ImprintAlgorithm = "sha256" | "sha384" | "sha512"

const IMPRINT: ReadonlyMap<string, { readonly name: ImprintAlgorithm; readonly length: number }> = new Map([
  [OID.sha256, { name: "sha256", length: 32 }],
  [OID.sha384, { name: "sha384", length: 48 }],
  [OID.sha512, { name: "sha512", length: 64 }]
])

/** PKIFailureInfo bits (RFC 3161 §2.4.2) the TSA answers. */
export const FailureInfo = {
  badAlg: 0,
  badRequest: 2,
  badDataFormat: 5,
  unacceptedPolicy: 15,
  unacceptedExtension: 16,
  systemFailure: 25
} as const
export type Failure = keyof typeof FailureInfo

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

/** The TSA's key and certificates, with what every token repeats prepared once (./keys.ts builds it). */
export interface TsaSigner {
  readonly key: Crypto.KeyObject
  readonly certificate: pkijs.Certificate
  /** The TSA certificate's issuers, up to (not including) the root, sent with certReq. */
  readonly chain: ReadonlyArray<pkijs.Certificate>
  readonly signatureAlgorithm: "ecdsa" | "rsa"
  /** The DER of the signing-certificate-v2 attribute (RFC 5816), the same in every token. */
  readonly essAttribute: Uint8Array
  /** The certificates sent with certReq (the TSA's first), each encoding its stored DER (see `preEncoded`). */
  readonly certificates: ReadonlyArray<pkijs.Certificate>
}

/**
 * The certificate, encoding as its DER as read: pkijs re-encodes a certificate from its fields on every
 * `toSchema` (~1 ms), for bytes that never change.
 */
export const preEncoded = (certificate: pkijs.Certificate): pkijs.Certificate => {
  const der = new Uint8Array(certificate.toSchema().toBER())
  return Object.create(certificate, { toSchema: { value: () => encoded(der) } })
}

/**
 * An element of an asn1js structure that encodes as the given DER: how asn1js' constructed values write
 * their elements (`toBER(sizeOnly, writer)`), as `asn1js.RawData` does not inside a SEQUENCE.
 */
const encoded = (der: Uint8Array): asn1js.Sequence =>
  ({
    toBER: (_sizeOnly?: boolean, writer?: { write: (buf: ArrayBuffer) => void }) => {
      const buffer = der.slice().buffer
      if (writer === undefined) return buffer
      writer.write(buffer)
      return new ArrayBuffer(0)
    }
  }) as unknown as asn1js.Sequence

/** The signing-certificate-v2 attribute: ESSCertIDv2 with SHA-256 (the default, so no algorithm) and issuerSerial. */
export const essAttribute = (certificate: pkijs.Certificate): Uint8Array => {
  const certHash = Crypto.hash("sha256", Buffer.from(certificate.toSchema().toBER()), "buffer")
  const issuerSerial = new pkijs.IssuerSerial({
    issuer: new pkijs.GeneralNames({ names: [new pkijs.GeneralName({ type: 4, value: certificate.issuer })] }),
    serialNumber: certificate.serialNumber
  })
  const essCertIdV2 = new asn1js.Sequence({
    value: [new asn1js.OctetString({ valueHex: certHash }), issuerSerial.toSchema()]
  })
  const signingCertificateV2 = new asn1js.Sequence({ value: [new asn1js.Sequence({ value: [essCertIdV2] })] })
  return new Uint8Array(new pkijs.Attribute({ type: OID.signingCertificateV2, values: [signingCertificateV2] }).toSchema().toBER())
}

const attribute = (type: string, value: asn1js.AsnType) => new Uint8Array(new pkijs.Attribute({ type, values: [value] }).toSchema().toBER())

/** DER orders a SET OF by the encodings of its elements. */
const derOrder = (a: Uint8Array, b: Uint8Array) => {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!
  return a.length - b.length
}

const statusInfo = (status: number, failure?: Failure, text?: string) =>
  new pkijs.PKIStatusInfo({
    status,
    ...(text === undefined ? {} : { statusStrings: [new asn1js.Utf8String({ value: text })] }),
    ...(failure === undefined ? {} : { failInfo: failInfoBits(FailureInfo[failure]) })
  })

/** A named bit list with one bit set, DER (trailing zero bits dropped, RFC 3161 §2.4.2's bit numbering). */
const failInfoBits = (bit: number) => {
  const bytes = new Uint8Array(Math.floor(bit / 8) + 1)
  bytes[Math.floor(bit / 8)] = 0x80 >> (bit % 8)
  return new asn1js.BitString({ valueHex: bytes, unusedBits: 7 - (bit % 8) })
}

/** A refusal: status rejection (2) with its PKIFailureInfo and a text saying why. */
export const refusal = (failure: Failure, text: string): Uint8Array =>
  new Uint8Array(new pkijs.TimeStampResp({ status: statusInfo(2, failure, text) }).toSchema().toBER())

export interface Issued {
  /** The TimeStampResp, DER: what the client receives. */
  readonly response: Uint8Array
  /** The TimeStampToken (the ContentInfo), DER: what is stored and served again. */
  readonly token: Uint8Array
  /** The TSTInfo, DER (the signed content). */
  readonly tstInfo: Uint8Array
}

const toDer = (value: { toBER: () => ArrayBuffer }) => new Uint8Array(value.toBER())

/** An explicitly tagged [n] context element (CMS' `[0] EXPLICIT`). */
const tagged = (n: number, value: ReadonlyArray<asn1js.AsnType>) =>
  new asn1js.Constructed({ idBlock: { tagClass: 3, tagNumber: n }, value: value as Array<asn1js.AsnType> })

/**
 * What every token of a signer repeats, encoded once with the libraries (each piece ~0.1-1 ms through
 * pkijs' objects): per token only the TSTInfo, the signed attributes, the signature and the containers
 * around them are encoded.
 */
export interface Template {
  readonly policy: string
  readonly accuracyMillis: number
  readonly accuracy: Uint8Array
  readonly version3: Uint8Array
  readonly version1: Uint8Array
  readonly digestAlgorithms: Uint8Array
  readonly certificates: Uint8Array
  readonly sid: Uint8Array
  readonly digestAlgorithm: Uint8Array
  readonly signatureAlgorithm: Uint8Array
  readonly contentTypeAttr: Uint8Array
  readonly granted: Uint8Array
  readonly policyOid: Uint8Array
  readonly tstInfoOid: Uint8Array
  readonly signedDataOid: Uint8Array
  readonly messageDigestOid: Uint8Array
  /** The signed attributes' SET (what is signed), with where the message digest sits in it. */
  readonly signedAttributes: Layout
  /** Token layouts by shape (see `issue`), filled as shapes are met. */
  readonly layouts: Map<string, Layout>
}

export const template = (signer: TsaSigner, policy: string, accuracyMillis: number): Template => {
  const accuracy = accuracyMillis >= 1000
    ? new pkijs.Accuracy({ seconds: Math.floor(accuracyMillis / 1000), ...(accuracyMillis % 1000 === 0 ? {} : { millis: accuracyMillis % 1000 }) })
    : new pkijs.Accuracy({ millis: accuracyMillis })
  const t: Omit<Template, "signedAttributes" | "layouts"> = {
    policy,
    accuracyMillis,
    accuracy: toDer(accuracy.toSchema()),
    version3: toDer(new asn1js.Integer({ value: 3 })),
    version1: toDer(new asn1js.Integer({ value: 1 })),
    digestAlgorithms: toDer(new asn1js.Set({ value: [new pkijs.AlgorithmIdentifier({ algorithmId: OID.sha256 }).toSchema()] })),
    certificates: toDer(new asn1js.Constructed({
      idBlock: { tagClass: 3, tagNumber: 0 },
      value: signer.certificates.map((c) => c.toSchema()) as Array<asn1js.AsnType>
    })),
    sid: toDer(new pkijs.IssuerAndSerialNumber({ issuer: signer.certificate.issuer, serialNumber: signer.certificate.serialNumber }).toSchema()),
    digestAlgorithm: toDer(new pkijs.AlgorithmIdentifier({ algorithmId: OID.sha256 }).toSchema()),
    signatureAlgorithm: toDer((signer.signatureAlgorithm === "ecdsa"
      ? new pkijs.AlgorithmIdentifier({ algorithmId: OID.ecdsaWithSha256 })
      : new pkijs.AlgorithmIdentifier({ algorithmId: OID.sha256WithRsa, algorithmParams: new asn1js.Null() })).toSchema()),
    contentTypeAttr: attribute(OID.contentType, new asn1js.ObjectIdentifier({ value: OID.tstInfo })),
    granted: toDer(statusInfo(0).toSchema()),
    policyOid: toDer(new asn1js.ObjectIdentifier({ value: policy })),
    tstInfoOid: toDer(new asn1js.ObjectIdentifier({ value: OID.tstInfo })),
    signedDataOid: toDer(new asn1js.ObjectIdentifier({ value: OID.signedData })),
    messageDigestOid: toDer(new asn1js.ObjectIdentifier({ value: OID.messageDigest }))
  }
  const withoutLayouts = { ...t, signedAttributes: { der: new Uint8Array(0), at: {} }, layouts: new Map() } as Template
  return {
    ...withoutLayouts,
    signedAttributes: layoutOf({ digest: digestTlv(new Uint8Array(0)) }, (p) => setOf(signedAttributes(signer, withoutLayouts, p.digest)))
  }
}

/** The parts of a token that differ from token to token, each a complete TLV encoded by asn1js. */
interface Parts {
  readonly imprint: Uint8Array
  readonly serial: Uint8Array
  readonly genTime: Uint8Array
  readonly nonce: Uint8Array | undefined
}

/** The TSTInfo (RFC 3161 §2.4.2), DER. */
const tstInfoOf = (t: Template, parts: Parts) =>
  toDer(new asn1js.Sequence({
    value: [
      encoded(t.version1),
      encoded(t.policyOid),
      encoded(parts.imprint),
      encoded(parts.serial),
      encoded(parts.genTime),
      encoded(t.accuracy),
      ...(parts.nonce === undefined ? [] : [encoded(parts.nonce)])
    ]
  }))

/** The signed attributes in DER order (the signature is over their DER SET, which verifiers re-encode). */
const signedAttributes = (signer: TsaSigner, t: Template, digest: Uint8Array) =>
  [
    t.contentTypeAttr,
    toDer(new asn1js.Sequence({ value: [encoded(t.messageDigestOid), new asn1js.Set({ value: [encoded(digest)] })] })),
    signer.essAttribute
  ].sort(derOrder)

const setOf = (attrs: ReadonlyArray<Uint8Array>) => toDer(new asn1js.Set({ value: attrs.map(encoded) }))

/** The TimeStampToken (ContentInfo) and the TimeStampResp around it, DER. */
const responseOf = (t: Template, certReq: boolean, tstInfo: Uint8Array, attrs: ReadonlyArray<Uint8Array>, signature: Uint8Array) => {
  const signerInfo = new asn1js.Sequence({
    value: [
      encoded(t.version1),
      encoded(t.sid),
      encoded(t.digestAlgorithm),
      new asn1js.Constructed({ idBlock: { tagClass: 3, tagNumber: 0 }, value: attrs.map(encoded) }),
      encoded(t.signatureAlgorithm),
      encoded(signature)
    ]
  })
  const signedData = new asn1js.Sequence({
    value: [
      encoded(t.version3),
      encoded(t.digestAlgorithms),
      new asn1js.Sequence({
        value: [encoded(t.tstInfoOid), tagged(0, [new asn1js.OctetString({ valueHex: tstInfo })])]
      }),
      ...(certReq ? [encoded(t.certificates)] : []),
      new asn1js.Set({ value: [signerInfo] })
    ]
  })
  const token = toDer(new asn1js.Sequence({ value: [encoded(t.signedDataOid), tagged(0, [signedData])] }))
  const response = toDer(new asn1js.Sequence({ value: [encoded(t.granted), encoded(token)] }))
  return { token, response }
}

const digestTlv = (tstInfo: Uint8Array) => toDer(new asn1js.OctetString({ valueHex: Crypto.hash("sha256", tstInfo, "buffer") }))

/** The varying parts of a stamp, each encoded by asn1js (a serial that fits a double is encoded from it: ~10× quicker than from a bigint, the same DER). */
const partsOf = (request: StampRequest, stamp: { readonly serial: bigint; readonly genTime: Date }): Parts => ({
  imprint: request.messageImprintDer,
  serial: toDer(
    stamp.serial <= BigInt(Number.MAX_SAFE_INTEGER) ? new asn1js.Integer({ value: Number(stamp.serial) }) : asn1js.Integer.fromBigInt(stamp.serial)
  ),
  genTime: toDer(new asn1js.GeneralizedTime({ valueDate: stamp.genTime })),
  nonce: request.nonceDer
})

/**
 * The reference build: every container encoded by asn1js for this token (~300 µs). `issue` gives the
 * same bytes from a layout (below); tests compare the two.
 */
export const issueFully = (
  signer: TsaSigner,
  t: Template,
  request: StampRequest,
  stamp: { readonly serial: bigint; readonly genTime: Date },
  /** How the signed attributes' DER is signed (tests: ECDSA signatures differ each time; they reuse one). */
  sign: (data: Uint8Array) => Uint8Array = (data) => Crypto.sign("sha256", data, signer.key)
): Issued => {
  const tstInfo = tstInfoOf(t, partsOf(request, stamp))
  const attrs = signedAttributes(signer, t, digestTlv(tstInfo))
  const signature = sign(setOf(attrs))
  const { response, token } = responseOf(t, request.certReq, tstInfo, attrs, toDer(new asn1js.OctetString({ valueHex: signature })))
  return { response, token, tstInfo }
}

/**
 * Layouts: a token's DER depends on its varying parts only through their lengths. For each combination
 * of lengths (the shape: imprint algorithm, serial and nonce sizes, genTime's precision, certReq, the
 * signature's length) the whole encoding is made once by asn1js, and where each varying TLV sits in it is
 * found by encoding it again with that TLV's bytes inverted (the only bytes that change). A token is then
 * the layout's bytes with its own TLVs (each encoded by asn1js) written over them: the same DER as the
 * reference build, without encoding the containers again (~250 µs of the ~300).
 */
interface Layout {
  readonly der: Uint8Array
  /** Where each named TLV starts in `der`. */
  readonly at: Readonly<Record<string, number>>
  /** A response layout: the length of the token, its last element. */
  readonly tokenLength?: number
}

/** Layouts kept per signer's template; past this many shapes (odd nonces), tokens are built fully. */
const MAX_LAYOUTS = 128

const invert = (bytes: Uint8Array) => bytes.map((b) => b ^ 0xff)

/** Where `variant` differs from `base`: exactly `length` bytes from the returned offset, else a defect. */
const where = (base: Uint8Array, variant: Uint8Array, length: number) => {
  let first = -1
  let last = -1
  for (let i = 0; i < base.length; i++) {
    if (base[i] !== variant[i]) {
      if (first === -1) first = i
      last = i
    }
  }
  if (variant.length !== base.length || first === -1 || last - first + 1 !== length) throw new Error("TSA token layout: a part moved the encoding")
  return first
}

const layoutOf = <K extends string>(parts: Record<K, Uint8Array>, build: (parts: Record<K, Uint8Array>) => Uint8Array): Layout => {
  const der = build(parts)
  const at: Record<string, number> = {}
  for (const name of Object.keys(parts) as Array<K>) at[name] = where(der, build({ ...parts, [name]: invert(parts[name]) }), parts[name].length)
  return { der, at }
}

const cached = (layouts: Map<string, Layout>, key: string, make: () => Layout): Layout | undefined => {
  const found = layouts.get(key)
  if (found !== undefined) return found
  if (layouts.size >= MAX_LAYOUTS) return undefined
  const made = make()
  layouts.set(key, made)
  return made
}

/**
 * A granted response: the TSTInfo (RFC 3161 §2.4.2), signed in a CMS SignedData (RFC 5652 §5) with the
 * signed attributes content-type, message-digest and signing-certificate-v2 (RFC 5816), ECDSA or RSA
 * with SHA-256.
 */
export const issue = (signer: TsaSigner, t: Template, request: StampRequest, stamp: { readonly serial: bigint; readonly genTime: Date }): Issued => {
  const parts = partsOf(request, stamp)
  const shape = `${parts.imprint.length}.${parts.serial.length}.${parts.genTime.length}.${parts.nonce?.length ?? "-"}`
  const tstLayout = cached(t.layouts, shape, () => {
    const { nonce, ...fixed } = parts
    return nonce === undefined
      ? layoutOf(fixed, (p) => tstInfoOf(t, { ...p, nonce: undefined }))
      : layoutOf({ ...fixed, nonce }, (p) => tstInfoOf(t, p))
  })
  if (tstLayout === undefined) return issueFully(signer, t, request, stamp)
  const tstInfo = tstLayout.der.slice()
  tstInfo.set(parts.imprint, tstLayout.at.imprint)
  tstInfo.set(parts.serial, tstLayout.at.serial)
  tstInfo.set(parts.genTime, tstLayout.at.genTime)
  if (parts.nonce !== undefined) tstInfo.set(parts.nonce, tstLayout.at.nonce!)

  const digest = digestTlv(tstInfo)
  const attrsLayout = t.signedAttributes
  const signedSet = attrsLayout.der.slice()
  signedSet.set(digest, attrsLayout.at.digest)
  const signature = toDer(new asn1js.OctetString({ valueHex: Crypto.sign("sha256", signedSet, signer.key) }))

  const responseLayout = cached(t.layouts, `${shape}/${request.certReq ? 1 : 0}.${signature.length}`, () => ({
    ...layoutOf({ tstInfo, digest, signature }, (p) => responseOf(t, request.certReq, p.tstInfo, signedAttributes(signer, t, p.digest), p.signature).response),
    tokenLength: responseOf(t, request.certReq, tstInfo, signedAttributes(signer, t, digest), signature).token.length
  }))
  if (responseLayout === undefined) return issueFully(signer, t, request, stamp)
  const response = responseLayout.der.slice()
  response.set(tstInfo, responseLayout.at.tstInfo)
  response.set(digest, responseLayout.at.digest)
  response.set(signature, responseLayout.at.signature)
  // The token is the response's last element: its DER ends the response.
  return { response, token: response.slice(response.length - responseLayout.tokenLength!), tstInfo }
}
