/**
 * anchord's Fabric gateway dev peer: a single-organisation, single-channel development peer that
 * serves the Gateway and Deliver gRPC services `@hyperledger/fabric-gateway` uses, runs the anchoring
 * chaincode in-process, and orders, validates and commits blocks itself. A development and test
 * node (what the Hardhat network is to EVM), not a Fabric network. See docs/fabric-devpeer.md.
 */
import * as grpc from "@grpc/grpc-js"
import { gateway, peer } from "@hyperledger/fabric-protos"
import { join } from "node:path"
import type { Contract } from "fabric-contract-api"
import { contracts as anchorContracts } from "../../../contracts/fabric/index.js"
import { Ledger } from "./ledger.ts"
import { createDevIdentity, identityPrivateKey, type DevIdentity } from "./identity.ts"
import type { PeerContext } from "./context.ts"
import { deliverService } from "./deliver.ts"
import { gatewayService } from "./gateway.ts"
import { serializeIdentity } from "./signature.ts"
import { ContractRouter } from "./stub.ts"

export { createDevIdentity, type DevIdentity } from "./identity.ts"
export { blockHeaderHash } from "./blocks.ts"

export interface DevPeerOptions {
  /** Listen host; default 127.0.0.1. */
  readonly host?: string
  /** Listen port; 0 (default) picks a free port. */
  readonly port?: number
  /**
   * Ports to try in turn instead of `port` (0: any free one): the first that binds is kept. Binding is
   * the check: a port found free and taken before the bind (two dev nodes starting at once) is skipped.
   */
  readonly ports?: ReadonlyArray<number>
  /** Channel name; default `anchord`. */
  readonly channel?: string
  /** Chaincode name the contracts are deployed as; default `anchord`. */
  readonly chaincode?: string
  /** The single organisation of the dev network; default `AnchordDevMSP`. */
  readonly mspId?: string
  /** Identities under `<dataDir>/msp`, blocks under `<dataDir>/ledger` (replayed on restart). In memory when absent. */
  readonly dataDir?: string
  /** A block is cut this long after the first pending transaction; default 50 ms. */
  readonly blockIntervalMs?: number
  /** ...or as soon as this many transactions are pending; default 100. */
  readonly maxTxPerBlock?: number
  /** Contract classes to run instead of anchord's anchoring chaincode (tests). */
  readonly contracts?: ReadonlyArray<new() => Contract>
  /** Serve TLS with this server certificate and key (PEM) instead of plaintext. */
  readonly tls?: { readonly certPem: string; readonly keyPem: string }
  readonly log?: (message: string) => void
}

export interface DevPeer {
  /** `host:port` to dial. */
  readonly address: string
  readonly port: number
  readonly channel: string
  readonly chaincode: string
  readonly mspId: string
  /** A client identity of the dev organisation (certificate + private key, file paths with a dataDir). */
  readonly clientIdentity: DevIdentity
  /** The peer's own identity (signs endorsements and blocks). */
  readonly peerIdentity: DevIdentity
  /** Number of committed blocks (block 0 is the genesis config block). */
  blockHeight(): number
  /** Cuts a block from pending transactions now instead of waiting for the timer. */
  cutBlock(): void
  close(): Promise<void>
}

const CHANNEL_NAME = /^[a-z][a-z0-9.-]*$/

export async function startDevPeer(options: DevPeerOptions = {}): Promise<DevPeer> {
  const host = options.host ?? "127.0.0.1"
  const channel = options.channel ?? "anchord"
  const chaincode = options.chaincode ?? "anchord"
  const mspId = options.mspId ?? "AnchordDevMSP"
  if (!CHANNEL_NAME.test(channel)) throw new Error(`invalid channel name ${JSON.stringify(channel)}: expected [a-z][a-z0-9.-]*`)
  const log = options.log ?? (() => undefined)
  const mspDir = options.dataDir === undefined ? undefined : join(options.dataDir, "msp")
  const peerIdentity = createDevIdentity(mspId, { role: "peer", ...(mspDir ? { dir: join(mspDir, "peer") } : {}) })
  const clientIdentity = createDevIdentity(mspId, { role: "client", ...(mspDir ? { dir: join(mspDir, "client") } : {}) })
  const signer = { identity: serializeIdentity(mspId, peerIdentity.certPem), key: identityPrivateKey(peerIdentity) }

  const ledger = new Ledger({
    channel,
    mspId,
    signer,
    ...(options.dataDir === undefined ? {} : { blockFile: join(options.dataDir, "ledger", `${channel}.blocks`) }),
    blockIntervalMs: options.blockIntervalMs ?? 50,
    maxTxPerBlock: options.maxTxPerBlock ?? 100,
    log
  })
  const router = new ContractRouter(options.contracts ?? anchorContracts)

  let address = ""
  const ctx: PeerContext = { ledger, router, channel, chaincode, mspId, address: () => address, signer, log }
  const server = new grpc.Server()
  server.addService(gateway.GatewayService, gatewayService(ctx))
  server.addService(peer.DeliverService, deliverService(ctx))
  const credentials = options.tls
    ? grpc.ServerCredentials.createSsl(null, [{ cert_chain: Buffer.from(options.tls.certPem), private_key: Buffer.from(options.tls.keyPem) }], false)
    : grpc.ServerCredentials.createInsecure()
  const bind = (wanted: number) =>
    new Promise<number>((resolve, reject) =>
      server.bindAsync(`${host}:${wanted}`, credentials, (error, boundPort) => (error ? reject(error) : resolve(boundPort)))
    )
  const candidates = options.ports ?? [options.port ?? 0]
  let port = 0
  for (const [i, wanted] of candidates.entries()) {
    try {
      port = await bind(wanted)
      break
    } catch (e) {
      if (i === candidates.length - 1) {
        ledger.close()
        throw e
      }
      log(`dev peer: ${host}:${wanted} cannot be bound (${(e as Error).message.split("\n")[0]}), trying ${candidates[i + 1] || "any free port"}`)
    }
  }
  address = `${host.includes(":") ? `[${host}]` : host}:${port}`
  log(`dev peer listening on ${address}, channel ${channel}, chaincode ${chaincode}, MSP ${mspId}, height ${ledger.height()}`)

  let closing: Promise<void> | undefined
  return {
    address,
    port,
    channel,
    chaincode,
    mspId,
    clientIdentity,
    peerIdentity,
    blockHeight: () => ledger.height(),
    cutBlock: () => ledger.cut(),
    close: () => (closing ??= new Promise<void>((resolve) => {
      ledger.close()
      // Let in-flight unary replies (e.g. CommitStatus of the last block) go out, then drop streams.
      const force = setTimeout(() => server.forceShutdown(), 250)
      server.tryShutdown(() => {
        clearTimeout(force)
        resolve()
      })
      force.unref()
      setTimeout(resolve, 300).unref()
    }))
  }
}
