/**
 * Development identities: self-signed X.509 P-256 certificates built with a minimal DER encoder
 * (node:crypto can sign but not issue certificates). The certificates parse with
 * `crypto.X509Certificate` and with the X.509 parsers Fabric's chaincode shim uses.
 */
import { createPrivateKey, generateKeyPairSync, randomBytes, sign, X509Certificate } from "node:crypto"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { isIP } from "node:net"
import { join } from "node:path"

// --- minimal DER encoder -------------------------------------------------------------------------

function derLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length])
  const bytes: number[] = []
  for (let n = length; n > 0; n = Math.floor(n / 256)) bytes.unshift(n & 0xff)
  return Buffer.from([0x80 | bytes.length, ...bytes])
}

export function der(tag: number, ...content: Uint8Array[]): Buffer {
  const body = Buffer.concat(content)
  return Buffer.concat([Buffer.from([tag]), derLength(body.length), body])
}

export const derSequence = (...items: Uint8Array[]): Buffer => der(0x30, ...items)
export const derOctetString = (bytes: Uint8Array): Buffer => der(0x04, bytes)

/** DER INTEGER from a non-negative bigint (minimal two's complement). */
export function derInteger(value: bigint): Buffer {
  let hex = value.toString(16)
  if (hex.length % 2) hex = "0" + hex
  let bytes = Buffer.from(hex, "hex")
  if (bytes[0]! & 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes])
  return der(0x02, bytes)
}

function derOid(oid: string): Buffer {
  const parts = oid.split(".").map(Number)
  const bytes: number[] = [parts[0]! * 40 + parts[1]!]
  for (const part of parts.slice(2)) {
    const chunk: number[] = [part & 0x7f]
    for (let n = part >>> 7; n > 0; n >>>= 7) chunk.unshift(0x80 | (n & 0x7f))
    bytes.push(...chunk)
  }
  return der(0x06, Buffer.from(bytes))
}

function derTime(date: Date): Buffer {
  const iso = date.toISOString().replace(/[-:T]/g, "").slice(0, 14) + "Z" // YYYYMMDDHHMMSSZ
  return date.getUTCFullYear() < 2050 ? der(0x17, Buffer.from(iso.slice(2))) : der(0x18, Buffer.from(iso))
}

function derName(attributes: Array<[oid: string, value: string]>): Buffer {
  return derSequence(...attributes.map(([oid, value]) => der(0x31, derSequence(derOid(oid), der(0x0c, Buffer.from(value))))))
}

const OID_CN = "2.5.4.3"
const OID_O = "2.5.4.10"
const OID_OU = "2.5.4.11"
const OID_ECDSA_SHA256 = "1.2.840.10045.4.3.2"

// --- certificates --------------------------------------------------------------------------------

export interface DevIdentity {
  readonly mspId: string
  readonly certPem: string
  readonly privateKeyPem: string
  /** Set when the identity was written to (or read from) a directory. */
  readonly certPath?: string
  readonly keyPath?: string
}

export interface CreateDevIdentityOptions {
  /** Directory to write `cert.pem` and `key.pem` to; an identity already there is reused. */
  readonly dir?: string
  readonly commonName?: string
  /** Organisational unit, e.g. `client` or `peer` (Fabric NodeOU names). */
  readonly role?: string
  readonly validDays?: number
  /** DNS names / IP addresses for a subjectAltName extension (TLS server certificates). */
  readonly hosts?: ReadonlyArray<string>
}

function subjectAltName(hosts: ReadonlyArray<string>): Buffer {
  const names = hosts.map((host) => {
    if (isIP(host) === 4) return der(0x87, Buffer.from(host.split(".").map(Number)))
    if (isIP(host) === 6) throw new Error("IPv6 subjectAltName entries are not supported by the dev identity encoder")
    return der(0x82, Buffer.from(host, "ascii"))
  })
  return derSequence(derOid("2.5.29.17"), derOctetString(derSequence(...names)))
}

/** Creates a self-signed ECDSA P-256 certificate for a dev identity of `mspId`. */
export function createDevIdentity(mspId: string, options: CreateDevIdentityOptions = {}): DevIdentity {
  if (options.dir !== undefined) {
    const certPath = join(options.dir, "cert.pem")
    const keyPath = join(options.dir, "key.pem")
    if (existsSync(certPath) && existsSync(keyPath)) {
      return { mspId, certPem: readFileSync(certPath, "utf8"), privateKeyPem: readFileSync(keyPath, "utf8"), certPath, keyPath }
    }
    const identity = createDevIdentity(mspId, { ...options, dir: undefined })
    mkdirSync(options.dir, { recursive: true })
    writeFileSync(certPath, identity.certPem)
    writeFileSync(keyPath, identity.privateKeyPem, { mode: 0o600 })
    return { ...identity, certPath, keyPath }
  }

  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" })
  const role = options.role ?? "client"
  const name = derName([
    [OID_O, mspId],
    [OID_OU, role],
    [OID_CN, options.commonName ?? `${role}.${mspId.toLowerCase()}.anchord.dev`]
  ])
  const notBefore = new Date(Date.now() - 60_000)
  const notAfter = new Date(notBefore.getTime() + (options.validDays ?? 3650) * 86_400_000)
  const algorithm = derSequence(derOid(OID_ECDSA_SHA256))
  const serial = BigInt("0x" + randomBytes(16).toString("hex")) >> 1n
  const tbs = derSequence(
    der(0xa0, derInteger(2n)), // version v3
    derInteger(serial),
    algorithm,
    name,
    derSequence(derTime(notBefore), derTime(notAfter)),
    name,
    publicKey.export({ type: "spki", format: "der" }),
    ...(options.hosts?.length ? [der(0xa3, derSequence(subjectAltName(options.hosts)))] : [])
  )
  const signature = sign("sha256", tbs, privateKey) // DER ECDSA-Sig-Value
  const certDer = derSequence(tbs, algorithm, der(0x03, Buffer.from([0]), signature))
  const certPem = `-----BEGIN CERTIFICATE-----\n${certDer.toString("base64").replace(/(.{64})/g, "$1\n").trimEnd()}\n-----END CERTIFICATE-----\n`
  new X509Certificate(certPem) // self-check: throws if the encoding is wrong
  return { mspId, certPem, privateKeyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString() }
}

/** The node:crypto private key of an identity. */
export const identityPrivateKey = (identity: DevIdentity) => createPrivateKey(identity.privateKeyPem)
