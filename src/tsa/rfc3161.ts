/**
 * What RFC 3161 requests and tokens share: the object identifiers, the imprint hashes the TSA accepts, the
 * PKIFailureInfo bits it answers with, and DER out of asn1js / pkijs values.
 */
/** The certificates of a PEM text, each with its BEGIN/END lines (use with `String.match`: the regex is global). */
export const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g

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

/** The imprint hashes the TSA stamps, by OID, with their lengths in bytes. */
export const IMPRINT: ReadonlyMap<string, { readonly name: ImprintAlgorithm; readonly length: number }> = new Map([
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

export const toDer = (value: { toBER: () => ArrayBuffer }) => new Uint8Array(value.toBER())
