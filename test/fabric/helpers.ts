/**
 * Test helpers: a dev peer on a free port and real @hyperledger/fabric-gateway clients over gRPC.
 */
import * as grpc from "@grpc/grpc-js"
import { connect, hash, signers, type Gateway, type Signer } from "@hyperledger/fabric-gateway"
import { createHash, createPrivateKey, generateKeyPairSync } from "node:crypto"
import { startDevPeer, type DevPeer, type DevPeerOptions } from "../../src/dev/fabric-peer/index.ts"

export interface Connection {
  readonly gateway: Gateway
  close(): void
}

const deadline = (ms: number) => () => ({ deadline: Date.now() + ms })

/** A gateway connection with the dev peer's client identity, and optionally another signer. */
export function connectGateway(devPeer: DevPeer, signer?: Signer): Connection {
  const client = new grpc.Client(devPeer.address, grpc.credentials.createInsecure())
  const gateway = connect({
    client,
    identity: { mspId: devPeer.mspId, credentials: Buffer.from(devPeer.clientIdentity.certPem) },
    signer: signer ?? signers.newPrivateKeySigner(createPrivateKey(devPeer.clientIdentity.privateKeyPem)),
    hash: hash.sha256,
    evaluateOptions: deadline(5000),
    endorseOptions: deadline(5000),
    submitOptions: deadline(5000),
    commitStatusOptions: deadline(5000)
  })
  return {
    gateway,
    close: () => {
      gateway.close()
      client.close()
    }
  }
}

export async function startPeer(options: DevPeerOptions = {}): Promise<DevPeer> {
  return startDevPeer({ blockIntervalMs: 20, ...options })
}

/** A signer whose key is not the certificate's. */
export function wrongKeySigner(): Signer {
  return signers.newPrivateKeySigner(generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey)
}

const P256_N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n

/** A signer returning the high-S twin (r, n - s) of a valid low-S signature: mathematically valid, refused by Fabric. */
export function highSSigner(devPeer: DevPeer): Signer {
  const lowS = signers.newPrivateKeySigner(createPrivateKey(devPeer.clientIdentity.privateKeyPem))
  return async (digest) => {
    const signature = Buffer.from(await lowS(digest))
    // SEQUENCE { INTEGER r, INTEGER s } with short lengths (P-256 signatures are < 128 bytes).
    const rLength = signature[3]!
    const r = signature.subarray(4, 4 + rLength)
    const s = BigInt("0x" + signature.subarray(6 + rLength).toString("hex"))
    const highS = integer(P256_N - s)
    const rInt = Buffer.concat([Buffer.from([0x02, r.length]), r])
    const body = Buffer.concat([rInt, highS])
    return Buffer.concat([Buffer.from([0x30, body.length]), body])
  }
}

function integer(value: bigint): Buffer {
  let hex = value.toString(16)
  if (hex.length % 2) hex = "0" + hex
  let bytes = Buffer.from(hex, "hex")
  if (bytes[0]! & 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes])
  return Buffer.concat([Buffer.from([0x02, bytes.length]), bytes])
}

/**
 * Fabric's block header hash, written independently of the dev peer: SHA-256 of the DER
 * SEQUENCE { INTEGER number, OCTET STRING previous_hash, OCTET STRING data_hash }.
 */
export function headerHash(number: bigint, previousHash: Uint8Array, dataHash: Uint8Array): Buffer {
  const tlv = (tag: number, content: Buffer) => {
    const length = content.length < 0x80 ? Buffer.from([content.length]) : Buffer.from([0x81, content.length])
    return Buffer.concat([Buffer.from([tag]), length, content])
  }
  let hex = number.toString(16)
  if (hex.length % 2) hex = "0" + hex
  let n = Buffer.from(hex, "hex")
  if (n[0]! & 0x80) n = Buffer.concat([Buffer.from([0]), n])
  const der = tlv(0x30, Buffer.concat([tlv(0x02, n), tlv(0x04, Buffer.from(previousHash)), tlv(0x04, Buffer.from(dataHash))]))
  return createHash("sha256").update(der).digest()
}

export const randomRoot = (): string => "0x" + createHash("sha256").update(String(Math.random()) + process.hrtime.bigint()).digest("hex")

/** Takes up to `count` items from an async iterable, failing after `ms`. */
export async function take<T>(iterable: AsyncIterable<T> & { close(): void }, count: number, ms = 5000,
  accept: (item: T) => boolean = () => true): Promise<T[]>
{
  const items: T[] = []
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    iterable.close()
  }, ms)
  try {
    for await (const item of iterable) {
      if (accept(item)) items.push(item)
      if (items.length >= count) break
    }
  } catch (error) {
    if (!timedOut) throw error
  } finally {
    clearTimeout(timer)
    iterable.close()
  }
  if (items.length < count) throw new Error(`timed out after ${items.length} of ${count} items`)
  return items
}
