/**
 * RFC 3161 time-stamp requests and responses (with RFC 5816's ESSCertIDv2), built with the kept ASN.1 /
 * CMS libraries (pkijs + asn1js): no hand-written DER. Pure functions: parsing a request, and a
 * response (a token, or a refusal with its PKIFailureInfo), given a `TsaSigner` (./keys.ts).
 *
 * The signature is made with node:crypto over the DER of the signed attributes (synchronously: pkijs'
 * own `SignedData.sign` goes through WebCrypto, a promise per token), then placed in pkijs' SignerInfo.
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
  readonly certReq: boolean
  /** The MessageImprint as received, DER (copied into the TSTInfo). */
  readonly messageImprintDer: Uint8Array
}

export type ParsedRequest =
  | { readonly _tag: "Stamp"; readonly request: StampRequest }
  | { readonly _tag: "Refused"; readonly failure: Failure; readonly text: string }

const refused = (failure: Failure, text: string): ParsedRequest => ({ _tag: "Refused", failure, text })

/** A DER TimeStampReq, checked: what to stamp, or why not (as a PKIFailureInfo). */
export const parseRequest = (der: Uint8Array, policy: string): ParsedRequest => {
  if (der.length === 0) return refused("badDataFormat", "empty request: expected a DER TimeStampReq")
  const asn1 = asn1js.fromBER(der)
  if (asn1.offset === -1) return refused("badDataFormat", "the request is not DER")
  if (asn1.offset !== der.length) return refused("badDataFormat", "bytes after the TimeStampReq")
  let request: pkijs.TimeStampReq
  try {
    request = new pkijs.TimeStampReq({ schema: asn1.result })
  } catch {
    return refused("badDataFormat", "the request is not a TimeStampReq")
  }
  if (request.version !== 1) return refused("badRequest", `version ${request.version}: only version 1 is supported`)
  const oid = request.messageImprint.hashAlgorithm.algorithmId
  const imprint = new Uint8Array(request.messageImprint.hashedMessage.valueBlock.valueHexView)
  const algorithm = IMPRINT.get(oid)
  if (algorithm === undefined) {
    return refused("badAlg", oid === OID.sha1 ? "SHA-1 is refused: use SHA-256, SHA-384 or SHA-512" : `hash algorithm ${oid} is not supported: use SHA-256, SHA-384 or SHA-512`)
  }
  if (imprint.length !== algorithm.length) {
    return refused("badDataFormat", `a ${algorithm.name} imprint is ${algorithm.length} bytes, not ${imprint.length}`)
  }
  if (request.reqPolicy !== undefined && request.reqPolicy !== policy) {
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
const encoded = (der: Uint8Array): asn1js.Sequence => ({
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

const attribute = (type: string, value: asn1js.AsnType) =>
  new Uint8Array(new pkijs.Attribute({ type, values: [value] }).toSchema().toBER())

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
}

export const template = (signer: TsaSigner, policy: string, accuracyMillis: number): Template => {
  const accuracy = accuracyMillis >= 1000
    ? new pkijs.Accuracy({ seconds: Math.floor(accuracyMillis / 1000), ...(accuracyMillis % 1000 === 0 ? {} : { millis: accuracyMillis % 1000 }) })
    : new pkijs.Accuracy({ millis: accuracyMillis })
  return {
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
}

/**
 * A granted response: the TSTInfo (RFC 3161 §2.4.2), signed in a CMS SignedData (RFC 5652 §5) with the
 * signed attributes content-type, message-digest and signing-certificate-v2 (RFC 5816), ECDSA or RSA
 * with SHA-256.
 */
export const issue = (signer: TsaSigner, t: Template, request: StampRequest, stamp: { readonly serial: bigint; readonly genTime: Date }): Issued => {
  const tstInfo = toDer(new asn1js.Sequence({
    value: [
      encoded(t.version1),
      encoded(t.policyOid),
      encoded(request.messageImprintDer),
      asn1js.Integer.fromBigInt(stamp.serial),
      new asn1js.GeneralizedTime({ valueDate: stamp.genTime }),
      encoded(t.accuracy),
      ...(request.nonce === undefined ? [] : [request.nonce])
    ]
  }))
  // The signed attributes in DER order: the signature is over their DER SET, which verifiers re-encode.
  const attrs = [
    t.contentTypeAttr,
    toDer(new asn1js.Sequence({
      value: [encoded(t.messageDigestOid), new asn1js.Set({ value: [new asn1js.OctetString({ valueHex: Crypto.hash("sha256", tstInfo, "buffer") })] })]
    })),
    signer.essAttribute
  ].sort(derOrder)
  const signature = Crypto.sign("sha256", toDer(new asn1js.Set({ value: attrs.map(encoded) })), signer.key)
  const signerInfo = new asn1js.Sequence({
    value: [
      encoded(t.version1),
      encoded(t.sid),
      encoded(t.digestAlgorithm),
      new asn1js.Constructed({ idBlock: { tagClass: 3, tagNumber: 0 }, value: attrs.map(encoded) }),
      encoded(t.signatureAlgorithm),
      new asn1js.OctetString({ valueHex: signature })
    ]
  })
  const signedData = new asn1js.Sequence({
    value: [
      encoded(t.version3),
      encoded(t.digestAlgorithms),
      new asn1js.Sequence({
        value: [encoded(t.tstInfoOid), tagged(0, [new asn1js.OctetString({ valueHex: tstInfo })])]
      }),
      ...(request.certReq ? [encoded(t.certificates)] : []),
      new asn1js.Set({ value: [signerInfo] })
    ]
  })
  const token = toDer(new asn1js.Sequence({ value: [encoded(t.signedDataOid), tagged(0, [signedData])] }))
  const response = toDer(new asn1js.Sequence({ value: [encoded(t.granted), encoded(token)] }))
  return { response, token, tstInfo }
}
