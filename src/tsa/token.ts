/**
 * RFC 3161 time-stamp responses (with RFC 5816's ESSCertIDv2), built with the kept ASN.1 / CMS
 * libraries (pkijs + asn1js): no hand-written DER. Pure functions: a response (a token, or a refusal
 * with its PKIFailureInfo) for a request read by ./request.ts, given a `TsaSigner` (./keys.ts).
 *
 * The signature is made with node:crypto over the DER of the signed attributes (synchronously: pkijs'
 * own `SignedData.sign` goes through WebCrypto, a promise per token). Per token only the TLVs that
 * change are encoded, into a layout asn1js encoded once per shape (`issue`, ./layout.ts;
 * docs/timestamping.md, "How a token is built"); `issueFully` is the reference build it must equal.
 */
import * as Crypto from "node:crypto"
import * as asn1js from "asn1js"
import * as pkijs from "pkijs"
import { cached, type Layout, layoutOf } from "./layout.ts"
import type { StampRequest } from "./request.ts"
import { type Failure, FailureInfo, OID, toDer } from "./rfc3161.ts"

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
