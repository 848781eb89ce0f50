/**
 * The TSA's certificate and key (TSA_CERT_FILE / TSA_KEY_FILE / TSA_CHAIN_FILE): read, checked, and
 * turned into a `TsaSigner`. The same checks run at start (a node refuses to start with a TSA
 * certificate tools would reject) and in `anchord doctor` (docs/doctor.md, docs/timestamping.md).
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as x509 from "@peculiar/x509"
import * as asn1js from "asn1js"
import * as pkijs from "pkijs"
import { OID, PEM_CERT } from "./rfc3161.ts"
import { essAttribute, preEncoded, type TsaSigner } from "./token.ts"

export interface TsaFiles {
  readonly certFile: string
  readonly keyFile: string
  readonly chainFile: string | undefined
}

/** What is wrong with the TSA's files; `fatal`: tools would refuse its tokens (or it cannot sign at all). */
export interface TsaProblem {
  readonly fatal: boolean
  readonly message: string
}

const readPems = (file: string): ReadonlyArray<x509.X509Certificate> =>
  (Fs.readFileSync(file, "utf8").match(PEM_CERT) ?? []).map((pem) => new x509.X509Certificate(pem))

/** The checks of RFC 3161 §2.3 and the ones tools apply, on a parsed certificate and key, at `now`. */
export const checkCertificate = (certificate: x509.X509Certificate, key: Crypto.KeyObject, now: Date): ReadonlyArray<TsaProblem> => {
  const problems: Array<TsaProblem> = []
  const eku = certificate.getExtension(x509.ExtendedKeyUsageExtension)
  if (eku === null) problems.push({ fatal: true, message: "has no extended key usage: a TSA certificate needs id-kp-timeStamping (RFC 3161 §2.3)" })
  else {
    if (!eku.critical) {
      problems.push({ fatal: true, message: "its extended key usage is not critical (RFC 3161 §2.3 requires it; openssl ts -verify refuses the tokens)" })
    }
    if (!eku.usages.includes(OID.timeStamping)) problems.push({ fatal: true, message: "its extended key usage lacks id-kp-timeStamping (1.3.6.1.5.5.7.3.8)" })
    else if (eku.usages.length !== 1) {
      problems.push({ fatal: true, message: "its extended key usage has other purposes than id-kp-timeStamping (RFC 3161 §2.3: only that one)" })
    }
  }
  const ku = certificate.getExtension(x509.KeyUsagesExtension)
  if (ku !== null && (ku.usages & (x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.nonRepudiation)) === 0) {
    problems.push({ fatal: true, message: "its key usage allows neither digitalSignature nor nonRepudiation" })
  }
  if (now < certificate.notBefore) problems.push({ fatal: true, message: `is not valid before ${certificate.notBefore.toISOString()}` })
  if (now > certificate.notAfter) problems.push({ fatal: true, message: `expired on ${certificate.notAfter.toISOString()}` })
  else if (certificate.notAfter.getTime() - now.getTime() < 30 * 86_400_000) {
    problems.push({ fatal: false, message: `expires on ${certificate.notAfter.toISOString()} (in less than 30 days)` })
  }
  const publicKey = new Crypto.X509Certificate(Buffer.from(certificate.rawData)).publicKey
  const derived = Crypto.createPublicKey(key)
  if (!publicKey.export({ format: "der", type: "spki" }).equals(derived.export({ format: "der", type: "spki" }))) {
    problems.push({ fatal: true, message: "does not match TSA_KEY_FILE's key" })
  }
  if (key.asymmetricKeyType === "ec") {
    if (key.asymmetricKeyDetails?.namedCurve !== "prime256v1") {
      problems.push({ fatal: true, message: `its key is on ${key.asymmetricKeyDetails?.namedCurve}: ECDSA P-256 or RSA are supported` })
    }
  } else if (key.asymmetricKeyType === "rsa") {
    if ((key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) problems.push({ fatal: true, message: "its RSA key is shorter than 2048 bits" })
  } else problems.push({ fatal: true, message: `its key type ${key.asymmetricKeyType} is not supported: ECDSA P-256 or RSA` })
  return problems
}

/** The files read and checked: the signer, with the problems found (non-fatal ones only, else a failure). */
export const loadSigner = (files: TsaFiles, now: Date): { readonly signer: TsaSigner; readonly warnings: ReadonlyArray<string> } | {
  readonly problems: ReadonlyArray<string>
} => {
  let certificate: x509.X509Certificate
  let key: Crypto.KeyObject
  let chain: ReadonlyArray<x509.X509Certificate> = []
  try {
    const certs = readPems(files.certFile)
    if (certs.length === 0) return { problems: [`TSA_CERT_FILE ${JSON.stringify(files.certFile)} holds no PEM certificate`] }
    certificate = certs[0]!
  } catch (e) {
    return { problems: [`TSA_CERT_FILE ${JSON.stringify(files.certFile)}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`] }
  }
  try {
    key = Crypto.createPrivateKey(Fs.readFileSync(files.keyFile))
  } catch (e) {
    // Never the content: it is a private key.
    return {
      problems: [
        `TSA_KEY_FILE ${JSON.stringify(files.keyFile)}: cannot read a private key from it (${(e as NodeJS.ErrnoException).code ?? "not a PEM or DER key"})`
      ]
    }
  }
  if (files.chainFile !== undefined) {
    try {
      chain = readPems(files.chainFile)
    } catch (e) {
      return { problems: [`TSA_CHAIN_FILE ${JSON.stringify(files.chainFile)}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`] }
    }
  }
  const problems = checkCertificate(certificate, key, now)
  const fatal = problems.filter((p) => p.fatal).map((p) => `the TSA certificate ${p.message}`)
  if (fatal.length > 0) return { problems: fatal }
  const toPkijs = (c: x509.X509Certificate) => new pkijs.Certificate({ schema: asn1js.fromBER(new Uint8Array(c.rawData)).result })
  const tsaCert = toPkijs(certificate)
  // Self-signed roots stay out: the verifier has them (its -CAfile).
  const issuers = chain.filter((c) => c.subject !== c.issuer).map(toPkijs)
  return {
    signer: {
      key,
      certificate: tsaCert,
      chain: issuers,
      certificates: [tsaCert, ...issuers].map(preEncoded),
      signatureAlgorithm: key.asymmetricKeyType === "ec" ? "ecdsa" : "rsa",
      essAttribute: essAttribute(tsaCert)
    },
    warnings: problems.filter((p) => !p.fatal).map((p) => `the TSA certificate ${p.message}`)
  }
}

/** `anchord doctor`'s line on the TSA (docs/doctor.md): off, or the files' problems (fatal ones stop `anchord start`). */
export const tsaFilesReport = (files: TsaFiles | undefined,
  now: Date): { readonly status: "ok" | "warn" | "fatal"; readonly message: string; readonly fix: string } =>
{
  if (files === undefined) return { status: "ok", message: "off (TSA_CERT_FILE unset): POST /v1/timestamp answers 404", fix: "" }
  const loaded = loadSigner(files, now)
  if ("problems" in loaded) {
    return {
      status: "fatal",
      message: loaded.problems.join("; "),
      fix:
        "issue the TSA certificate with a critical extended key usage id-kp-timeStamping only, key usage digitalSignature (or nonRepudiation), for TSA_KEY_FILE's ECDSA P-256 or RSA key (docs/timestamping.md)"
    }
  }
  if (loaded.warnings.length > 0) return { status: "warn", message: loaded.warnings.join("; "), fix: "renew the TSA certificate before it expires" }
  const subject = new x509.X509Certificate(Fs.readFileSync(files.certFile, "utf8").match(PEM_CERT)![0]).subject
  return { status: "ok", message: `${subject}, ${loaded.signer.signatureAlgorithm === "ecdsa" ? "ECDSA P-256" : "RSA"}, valid`, fix: "" }
}
