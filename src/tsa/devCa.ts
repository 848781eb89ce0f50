/**
 * `npm start` (`anchord dev`): a dev TSA root CA and a TSA certificate under the data directory, made
 * once and reused, so `openssl ts -verify -CAfile <dataDir>/tsa/ca.pem` works against the dev node
 * (docs/timestamping.md). Never for production: the root's key sits next to it.
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as x509 from "@peculiar/x509"
import type { TsaFiles } from "./keys.ts"

export interface DevTsaFiles extends TsaFiles {
  /** The dev root CA certificate: what verifiers are given (`-CAfile`). */
  readonly caFile: string
}

const subtle = Crypto.webcrypto.subtle
type KeyPair = Crypto.webcrypto.CryptoKeyPair
const EC = { name: "ECDSA", namedCurve: "P-256" } as const
const RSA = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256", publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 2048 } as const

const pem = (label: string, der: ArrayBuffer) =>
  `-----BEGIN ${label}-----\n${Buffer.from(der).toString("base64").match(/.{1,64}/g)!.join("\n")}\n-----END ${label}-----\n`

/**
 * A root CA (10 years) and a TSA certificate it signs (5 years; critical EKU id-kp-timeStamping, key usage
 * digitalSignature + nonRepudiation), with keys of `kind`. Written with mode 0600 for the keys.
 */
export const createTsaCertificates = async (dir: string, kind: "ecdsa" | "rsa" = "ecdsa", now = new Date()): Promise<DevTsaFiles> => {
  const algorithm = kind === "ecdsa" ? EC : RSA
  const signing = kind === "ecdsa" ? { name: "ECDSA", hash: "SHA-256" } : RSA
  const crypto = Crypto.webcrypto as never
  const caKeys = await subtle.generateKey(algorithm, true, ["sign", "verify"]) as KeyPair
  const tsaKeys = await subtle.generateKey(algorithm, true, ["sign", "verify"]) as KeyPair
  const year = 365 * 86_400_000
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    name: "CN=anchord dev TSA root (not for production)",
    keys: caKeys,
    notBefore: new Date(now.getTime() - 3_600_000),
    notAfter: new Date(now.getTime() + 10 * year),
    signingAlgorithm: signing,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey, false, crypto)
    ]
  }, crypto)
  const tsa = await x509.X509CertificateGenerator.create({
    subject: "CN=anchord dev TSA",
    issuer: ca.subject,
    publicKey: tsaKeys.publicKey,
    signingKey: caKeys.privateKey,
    notBefore: new Date(now.getTime() - 3_600_000),
    notAfter: new Date(now.getTime() + 5 * year),
    signingAlgorithm: signing,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.nonRepudiation, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.timeStamping], true),
      await x509.SubjectKeyIdentifierExtension.create(tsaKeys.publicKey, false, crypto),
      await x509.AuthorityKeyIdentifierExtension.create(caKeys.publicKey, false, crypto)
    ]
  }, crypto)
  Fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
  const files: DevTsaFiles = {
    caFile: Path.join(dir, "ca.pem"),
    certFile: Path.join(dir, "tsa.pem"),
    keyFile: Path.join(dir, "tsa.key"),
    chainFile: undefined
  }
  Fs.writeFileSync(Path.join(dir, "ca.key"), pem("PRIVATE KEY", await subtle.exportKey("pkcs8", caKeys.privateKey)), { mode: 0o600 })
  Fs.writeFileSync(files.keyFile, pem("PRIVATE KEY", await subtle.exportKey("pkcs8", tsaKeys.privateKey)), { mode: 0o600 })
  Fs.writeFileSync(files.caFile, ca.toString("pem") + "\n")
  // Written last: its presence says the set is complete.
  Fs.writeFileSync(files.certFile, tsa.toString("pem") + "\n")
  return files
}

/** The dev TSA files under `<dataDir>/tsa`, created on first use. */
export const devTsaFiles = async (dataDir: string): Promise<DevTsaFiles> => {
  const dir = Path.resolve(dataDir, "tsa")
  const existing: DevTsaFiles = { caFile: Path.join(dir, "ca.pem"), certFile: Path.join(dir, "tsa.pem"), keyFile: Path.join(dir, "tsa.key"),
    chainFile: undefined }
  if (Fs.existsSync(existing.certFile) && Fs.existsSync(existing.keyFile) && Fs.existsSync(existing.caFile)) return existing
  return createTsaCertificates(dir)
}
