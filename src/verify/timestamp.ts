/**
 * `anchord verify --tsr` (docs/timestamping.md, docs/verifying.md): an RFC 3161 token checked like
 * `openssl ts -verify` does (CMS signature, the signer's chain to the given CA, the ESSCertIDv2 binding, a
 * critical id-kp-timeStamping EKU, the message imprint against the data file), with the kept libraries (pkijs +
 * asn1js), plus what the record hash of its anchor must be (src/tsa/Tsa.ts: the imprint for SHA-256,
 * SHA-256 of the TSTInfo otherwise). Loaded by src/verify/command.ts only when `--tsr` is given: pkijs
 * is heavy and a bundle-only verify must start fast.
 */
import * as Crypto from "node:crypto"
import * as asn1js from "asn1js"
import * as pkijs from "pkijs"
import { OID, PEM_CERT } from "../tsa/rfc3161.ts"
import type { Check } from "./report.ts"

const ALGORITHMS: Record<string, "sha256" | "sha384" | "sha512"> = {
  [OID.sha256]: "sha256",
  [OID.sha384]: "sha384",
  [OID.sha512]: "sha512"
}
const EKU = "2.5.29.37"
const SIGNING_CERTIFICATE_V1 = "1.2.840.113549.1.9.16.2.12"

/** What the token says, for the report and the anchor check. */
export interface TokenFacts {
  readonly serial: string
  readonly genTime: string
  readonly policy: string
  readonly hashAlgorithm: string
  readonly messageImprint: string
  /** The hash of the token's record (undefined: an imprint algorithm anchord does not issue). */
  readonly recordHash: string | undefined
}

export interface TokenResult {
  readonly checks: ReadonlyArray<Check>
  /** Undefined when the file is not a token at all. */
  readonly facts: TokenFacts | undefined
}

export class TokenInputError extends Error {
  readonly _tag = "TokenInputError"
}

/** The PEM certificates of a CA file. @throws TokenInputError */
export const readCaPems = (pem: string, name: string): Array<pkijs.Certificate> => {
  const pems = pem.match(PEM_CERT) ?? []
  if (pems.length === 0) throw new TokenInputError(`--ca ${name}: no PEM certificate in it`)
  return pems.map((p) => {
    const der = Buffer.from(p.replace(/-----[A-Z ]+-----|\s/g, ""), "base64")
    return pkijs.Certificate.fromBER(der)
  })
}

/** The token (a CMS ContentInfo) from a TimeStampResp (.tsr) or a bare token (`openssl ts -token_out`). */
const tokenOf = (der: Uint8Array): { token: pkijs.ContentInfo } | { refused: string } | { notToken: string } => {
  let asn1: ReturnType<typeof asn1js.fromBER>
  try {
    asn1 = asn1js.fromBER(der) // throws on some malformed primitives (a bad-length BMPString, GeneralizedTime, ...)
  } catch {
    return { notToken: "not a DER TimeStampResp or time-stamp token" }
  }
  if (asn1.offset === -1 || asn1.offset !== der.length) return { notToken: "not a DER TimeStampResp or time-stamp token" }
  try {
    const response = new pkijs.TimeStampResp({ schema: asn1.result })
    // PKIStatus granted (0) or grantedWithMods (1) carry a token.
    if (response.status.status > 1 || response.timeStampToken === undefined) {
      const why = response.status.statusStrings?.map((s) => s.valueBlock.value).join("; ") ?? ""
      return { refused: `the reply is a refusal (PKIStatus ${response.status.status})${why === "" ? "" : `: ${why}`}, not a token` }
    }
    return { token: response.timeStampToken }
  } catch {
    try {
      return { token: new pkijs.ContentInfo({ schema: asn1.result }) }
    } catch {
      return { notToken: "not a DER TimeStampResp or time-stamp token" }
    }
  }
}

const message = (e: unknown) =>
  e instanceof Error ? e.message : typeof e === "object" && e !== null && "message" in e ? String((e as { message: unknown }).message) : String(e)

/**
 * The token's checks, one per line: `tsa.format`, `tsa.signature`, `tsa.chain`, `tsa.ess`, `tsa.eku`, `tsa.imprint`.
 * The imprint is checked here with node:crypto (its own line, naming both hashes); pkijs checks the
 * CMS signature (message digest of the TSTInfo, signature over the signed attributes) and the chain at
 * genTime.
 */
export const checkToken = async (tsr: Uint8Array, data: Uint8Array, trusted: ReadonlyArray<pkijs.Certificate>): Promise<TokenResult> => {
  const checks: Array<Check> = []
  const got = tokenOf(tsr)
  if ("notToken" in got || "refused" in got) {
    checks.push({ id: "tsa.format", status: "fail", message: "notToken" in got ? got.notToken : got.refused })
    return { checks, facts: undefined }
  }
  let signed: pkijs.SignedData
  let tstInfoDer: Uint8Array
  let tstInfo: pkijs.TSTInfo
  try {
    if (got.token.contentType !== OID.signedData) throw new Error(`content type ${got.token.contentType}, not SignedData`)
    signed = new pkijs.SignedData({ schema: got.token.content })
    if (signed.encapContentInfo.eContentType !== OID.tstInfo) throw new Error(`encapsulated content ${signed.encapContentInfo.eContentType}, not TSTInfo`)
    const eContent = signed.encapContentInfo.eContent
    if (eContent === undefined) throw new Error("no TSTInfo in it")
    tstInfoDer = new Uint8Array(eContent.getValue())
    tstInfo = pkijs.TSTInfo.fromBER(tstInfoDer)
  } catch (e) {
    checks.push({ id: "tsa.format", status: "fail", message: `not a time-stamp token: ${message(e)}` })
    return { checks, facts: undefined }
  }
  const serial = BigInt("0x" + (Buffer.from(tstInfo.serialNumber.valueBlock.valueHexView).toString("hex") || "0")).toString()
  const oid = tstInfo.messageImprint.hashAlgorithm.algorithmId
  const algorithm = ALGORITHMS[oid]
  const imprint = Buffer.from(tstInfo.messageImprint.hashedMessage.valueBlock.valueHexView).toString("hex")
  const facts: TokenFacts = {
    serial,
    genTime: tstInfo.genTime.toISOString(),
    policy: oidText(tstInfo.policy),
    hashAlgorithm: algorithm ?? oid,
    messageImprint: imprint,
    recordHash: algorithm === undefined ? undefined : algorithm === "sha256" ? imprint : Crypto.hash("sha256", tstInfoDer, "hex")
  }
  checks.push({
    id: "tsa.format",
    status: "pass",
    message: `time-stamp token serial ${serial}, genTime ${facts.genTime}, policy ${facts.policy}, ${signed.certificates?.length ?? 0} certificate(s)`
  })

  // pkijs' SignedData.verify hashes the data against the imprint itself when the content is a TSTInfo;
  // the imprint has its own line below, so the signature is checked as that of plain signed content.
  // The content-type signed attribute (part of what is signed) still says TSTInfo.
  signed.encapContentInfo.eContentType = "1.2.840.113549.1.7.1"
  let signer: pkijs.Certificate | undefined
  try {
    const r = await signed.verify({ signer: 0, checkChain: false, extendedMode: true, checkDate: tstInfo.genTime })
    signer = r.signerCertificate ?? undefined
    if (signer === undefined) throw new Error("Unable to find signer certificate")
    checks.push(r.signatureVerified === true
      ? { id: "tsa.signature", status: "pass", message: `the CMS signature over the TSTInfo verifies with the key of ${subjectOf(signer)}` }
      : { id: "tsa.signature", status: "fail",
        message: `the CMS signature does not verify with the key of ${subjectOf(signer)}: the token was changed or not signed by it` })
  } catch (e) {
    const m = message(e)
    checks.push({
      id: "tsa.signature",
      status: "fail",
      message: /No certificates attached|Unable to find signer/.test(m)
        ? `${m}: the token carries no signer certificate (ask for it: openssl ts -query -cert)`
        : m.includes("digest doesn't match")
        ? "the TSTInfo does not match the message-digest the TSA signed: the token was changed"
        : `the CMS signature cannot be verified: ${m}`
    })
  }

  if (signer === undefined) checks.push({ id: "tsa.chain", status: "skip", message: "no signer certificate" })
  else {
    try {
      // The chain as of genTime: the certificate must have been valid when the token was made.
      const r = await signed.verify({ signer: 0, checkChain: true, trustedCerts: [...trusted], extendedMode: true, checkDate: tstInfo.genTime })
      const path = (r.certificatePath ?? []).map(subjectOf).join(" <- ")
      checks.push({ id: "tsa.chain", status: "pass", message: `${subjectOf(signer)} chains to the given CA at genTime${path === "" ? "" : ` (${path})`}` })
    } catch (e) {
      checks.push({ id: "tsa.chain", status: "fail", message: `${subjectOf(signer)} does not chain to the given CA: ${message(e)}` })
    }
    checks.push(essCheck(signed.signerInfos[0]!, signer))
    const eku = signer.extensions?.find((x) => x.extnID === EKU)
    const purposes = eku?.parsedValue instanceof pkijs.ExtKeyUsage ? eku.parsedValue.keyPurposes : []
    checks.push(eku === undefined
      ? { id: "tsa.eku", status: "fail", message: "the signer certificate has no extended key usage (RFC 3161 §2.3: a critical id-kp-timeStamping)" }
      : !eku.critical
      ? { id: "tsa.eku", status: "fail", message: "the signer certificate's extended key usage is not critical (RFC 3161 §2.3)" }
      : purposes.length !== 1 || purposes[0] !== OID.timeStamping
      ? { id: "tsa.eku", status: "fail",
        message: `the signer certificate's extended key usage is ${purposes.join(", ")}, not id-kp-timeStamping only (RFC 3161 §2.3)` }
      : { id: "tsa.eku", status: "pass", message: "the signer certificate's extended key usage is critical and id-kp-timeStamping only" })
  }

  if (algorithm === undefined) {
    checks.push({ id: "tsa.imprint", status: "fail", message: `the token's imprint algorithm ${oid} is not SHA-256, SHA-384 or SHA-512` })
  } else {
    const computed = Crypto.hash(algorithm, data, "hex")
    checks.push(computed === imprint
      ? { id: "tsa.imprint", status: "pass", message: `${algorithm}(data) = ${computed}, the token's message imprint` }
      : { id: "tsa.imprint", status: "fail",
        message: `${algorithm}(data) = ${computed}, but the token's imprint is ${imprint}: the data is not what was time-stamped` })
  }
  return { checks, facts }
}

/**
 * asn1js writes an OID arc past 2^53 (a UUID OID's, 2.25.<128 bits>) as `{hex}`, one byte per 7-bit
 * group of its encoding: folded back to its decimal value here.
 */
const oidText = (oid: string) =>
  oid.replace(/\{([0-9a-f]+)\}/gi, (_, hex: string) => (hex.match(/../g) ?? []).reduce((v, byte) => v * 128n + BigInt(parseInt(byte, 16)), 0n).toString())

/**
 * RFC 5816 / RFC 2634: the signed signing-certificate(-v2) attribute names the signer certificate by its
 * hash, so a certificate with the same key (a reissued one, another CA's) cannot stand in for it.
 */
const essCheck = (signerInfo: pkijs.SignerInfo, signer: pkijs.Certificate): Check => {
  const attrs = signerInfo.signedAttrs?.attributes ?? []
  const v2 = attrs.find((a) => a.type === OID.signingCertificateV2)
  const v1 = attrs.find((a) => a.type === SIGNING_CERTIFICATE_V1)
  const attr = v2 ?? v1
  if (attr === undefined) {
    return { id: "tsa.ess", status: "fail", message: "no signing-certificate(-v2) attribute (RFC 3161 §2.4.2, RFC 5816): the signer certificate is not bound" }
  }
  try {
    // SigningCertificate(V2) ::= SEQUENCE { certs SEQUENCE OF ESSCertID(v2), … }; the first names the signer.
    const first = (attr.values[0] as asn1js.Sequence).valueBlock.value[0] as asn1js.Sequence
    const id = first.valueBlock.value[0] as asn1js.Sequence
    const parts = id.valueBlock.value
    // ESSCertIDv2 ::= SEQUENCE { hashAlgorithm DEFAULT sha256, certHash, issuerSerial OPTIONAL }; ESSCertID: SHA-1.
    let algorithm = v2 === undefined ? "sha1" : "sha256"
    let hashAt = 0
    if (v2 !== undefined && parts[0] instanceof asn1js.Sequence) {
      const oid = new pkijs.AlgorithmIdentifier({ schema: parts[0] }).algorithmId
      algorithm = ALGORITHMS[oid] ?? oid
      hashAt = 1
    }
    const stated = Buffer.from((parts[hashAt] as asn1js.OctetString).valueBlock.valueHexView).toString("hex")
    const actual = Crypto.hash(algorithm, new Uint8Array(signer.toSchema().toBER()), "hex")
    return stated === actual
      ? { id: "tsa.ess", status: "pass",
        message: `the signed ${v2 === undefined ? "ESSCertID" : "ESSCertIDv2"} names the signer certificate (${algorithm} ${actual.slice(0, 16)}…)` }
      : { id: "tsa.ess", status: "fail",
        message: `the signed ${v2 === undefined ? "ESSCertID" : "ESSCertIDv2"} names another certificate (${algorithm} ${
          stated.slice(0, 16)
        }…), not the signer's (${actual.slice(0, 16)}…)` }
  } catch (e) {
    return { id: "tsa.ess", status: "fail", message: `the signing-certificate attribute cannot be read: ${message(e)}` }
  }
}

const subjectOf = (c: pkijs.Certificate) =>
  c.subject.typesAndValues.map((tv) => `${tv.type === "2.5.4.3" ? "CN" : tv.type === "2.5.4.10" ? "O" : tv.type}=${tv.value.valueBlock.value}`).join(", ")

/** The anchor's record hash against the token's (docs/timestamping.md, "Every token is anchored"). */
export const recordHashCheck = (facts: TokenFacts, bundleHash: string): Check => {
  const how = facts.hashAlgorithm === "sha256" ? "the token's SHA-256 imprint" : "SHA-256 of the token's TSTInfo"
  if (facts.recordHash === undefined) return { id: "tsa.record-hash", status: "fail", message: "no record hash for this imprint algorithm" }
  return bundleHash.toLowerCase() === facts.recordHash
    ? { id: "tsa.record-hash", status: "pass", message: `the bundle's record hash ${facts.recordHash} is ${how}` }
    : { id: "tsa.record-hash", status: "fail",
      message: `the bundle's record hash is ${bundleHash}, not ${how} (${facts.recordHash}): the bundle anchors another record` }
}

/**
 * The proof bundle in what `GET /v1/timestamp/{serial}` answers (`{success, data: {proof, status, …}}`
 * or its `data`), or undefined when the JSON is not that response (then it is read as a bundle).
 * @throws TokenInputError when it is that response without a proof yet.
 */
export const proofOfTimestampView = (json: unknown): unknown => {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)
  const view = isObject(json) && json.success === true && isObject(json.data) ? json.data : json
  if (!isObject(view) || typeof view.token !== "string" || !("proof" in view)) return undefined
  if (view.proof === null) {
    throw new TokenInputError(`token ${String(view.serial)}'s record is not anchored yet (status ${String(view.status)}): fetch it again once ANCHORED`)
  }
  return view.proof
}
