/**
 * Fabric checks of one anchor, through a gateway peer with the auditor's own identity (any member
 * of the channel: certificate + key of its MSP): the chaincode's `lookup(root)`, then the block the
 * bundle names, fetched with Deliver: the transaction is in it, with validation code VALID, and the
 * block's header hash is the stated one.
 *
 * The Fabric client libraries are imported lazily: EVM-only verification never loads them.
 */
import { createHash, createPrivateKey } from "node:crypto"
import { readFileSync } from "node:fs"
// Sub-module imports (not the "effect" barrel): `anchord verify` must start fast (scripts/bench-verify.ts).
import * as Effect from "effect/Effect"
import type { BundleAnchor } from "./input.ts"
import type { Check } from "./report.ts"

export interface FabricOptions {
  /** host:port of a gateway peer. */
  readonly endpoint?: string | undefined
  readonly mspId?: string | undefined
  /** PEM files of the auditor's identity. */
  readonly certPath?: string | undefined
  readonly keyPath?: string | undefined
  /** PEM of the TLS root CA; plaintext gRPC without it. */
  readonly tlsCertPath?: string | undefined
  /** TLS server name to expect, when it differs from the endpoint's host. */
  readonly hostAlias?: string | undefined
  /** Override the bundle's channel / chaincode (for bundles that lack them). */
  readonly channel?: string | undefined
  readonly chaincode?: string | undefined
  readonly timeoutMs?: number | undefined
}

/** Fabric's block header hash: SHA-256 of DER SEQUENCE { INTEGER number, OCTET STRING previous_hash, OCTET STRING data_hash }. */
export const fabricBlockHash = (number: bigint, previousHash: Uint8Array, dataHash: Uint8Array): string => {
  const len = (n: number) => n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff])
  const tlv = (tag: number, content: Buffer) => Buffer.concat([Buffer.from([tag]), len(content.length), content])
  let hex = number.toString(16)
  if (hex.length % 2) hex = "0" + hex
  let n = Buffer.from(hex, "hex")
  if (n.length === 0) n = Buffer.from([0])
  if (n[0]! & 0x80) n = Buffer.concat([Buffer.from([0]), n])
  const der = tlv(0x30, Buffer.concat([tlv(0x02, n), tlv(0x04, Buffer.from(previousHash)), tlv(0x04, Buffer.from(dataHash))]))
  return createHash("sha256").update(der).digest("hex")
}

const UNREACHABLE_CODES = new Set([4, /* DEADLINE_EXCEEDED */ 14, /* UNAVAILABLE */ 1 /* CANCELLED */])

/**
 * @param logRoot for a COSE receipt (./receipt.ts): the RFC 9162 root the receipt signs, which the chaincode's
 * record of the batch must hold as `logRoot` (check `fabric.log-root`).
 */
export const checkFabricAnchor = Effect.fn("verify.fabricAnchor")(function*(anchor: BundleAnchor, options: FabricOptions, logRoot?: string) {
  const net = anchor.networkId
  const checks: Array<Check> = []
  const add = (id: string, status: Check["status"], message: string) => checks.push({ id: `fabric.${id}`, networkId: net, status, message })
  const channel = options.channel ?? anchor.channel ?? undefined
  const chaincode = options.chaincode ?? anchor.chaincode ?? undefined
  const missing = [
    options.endpoint ? undefined : "--fabric-endpoint",
    options.mspId ? undefined : "--fabric-msp-id",
    options.certPath ? undefined : "--fabric-cert",
    options.keyPath ? undefined : "--fabric-key"
  ].filter((x) => x !== undefined)
  if (missing.length > 0) {
    add("gateway", "error", `no Fabric gateway identity given (${missing.join(", ")}): the anchor cannot be checked`)
    return checks
  }
  if (!channel || !chaincode) {
    add("gateway", "error", "the anchor names no channel/chaincode (give --fabric-channel and --fabric-chaincode)")
    return checks
  }
  const timeoutMs = options.timeoutMs ?? 10_000

  return yield* Effect.tryPromise({
    try: async () => {
      const grpc = await import("@grpc/grpc-js")
      const { connect, hash, signers, GatewayError } = await import("@hyperledger/fabric-gateway")
      const { common, peer } = await import("@hyperledger/fabric-protos")
      const credentials = options.tlsCertPath
        ? grpc.credentials.createSsl(readFileSync(options.tlsCertPath))
        : grpc.credentials.createInsecure()
      const client = new grpc.Client(options.endpoint!, credentials, options.hostAlias ? { "grpc.ssl_target_name_override": options.hostAlias } : {})
      const deadline = () => ({ deadline: Date.now() + timeoutMs })
      const gateway = connect({
        client,
        identity: { mspId: options.mspId!, credentials: readFileSync(options.certPath!) },
        signer: signers.newPrivateKeySigner(createPrivateKey(readFileSync(options.keyPath!))),
        hash: hash.sha256,
        evaluateOptions: deadline,
        endorseOptions: deadline,
        submitOptions: deadline,
        commitStatusOptions: deadline
      })
      const isUnreachable = (e: unknown) => typeof e === "object" && e !== null && UNREACHABLE_CODES.has((e as { code?: number }).code ?? -1)
      const detail = (e: unknown) => {
        const details = (e as { details?: Array<{ message?: string }> }).details
        return details?.[0]?.message ?? (e instanceof Error ? e.message : String(e))
      }
      try {
        const network = gateway.getNetwork(channel)
        const contract = network.getContract(chaincode)
        const root = anchor.merkleRoot.toLowerCase()
        // 1. The chaincode's own record of the root.
        let stored: { root?: string; leafCount?: number; batchId?: string; txId?: string; timestamp?: string; submitter?: string; logRoot?: string } | undefined
        try {
          stored = JSON.parse(Buffer.from(await contract.evaluateTransaction("lookup", root)).toString("utf8"))
        } catch (e) {
          if (isUnreachable(e)) add("chaincode-lookup", "error", `gateway ${options.endpoint} unreachable: ${detail(e)}`)
          else if (e instanceof GatewayError && /is not anchored/.test(detail(e))) {
            add("chaincode-lookup", "fail", `root ${root} is not anchored on channel ${channel}, chaincode ${chaincode}`)
          } else add("chaincode-lookup", e instanceof GatewayError ? "fail" : "error", `lookup(root) on ${channel}/${chaincode} failed: ${detail(e)}`)
        }
        if (stored !== undefined) {
          const problems: Array<string> = []
          if (stored.txId !== anchor.txHash) problems.push(`anchored by tx ${stored.txId}, not the stated ${anchor.txHash}`)
          if (String(stored.batchId) !== String(anchor.batchId)) problems.push(`batch ${stored.batchId}, not the stated ${anchor.batchId}`)
          if (anchor.leafCount !== undefined && stored.leafCount !== anchor.leafCount) {
            problems.push(`${stored.leafCount} leaves, not the stated ${anchor.leafCount}`)
          }
          if (anchor.mspId && stored.submitter !== anchor.mspId) problems.push(`submitted by ${stored.submitter}, not the stated ${anchor.mspId}`)
          if (anchor.anchoredAt && stored.timestamp !== undefined && Date.parse(stored.timestamp) !== Date.parse(anchor.anchoredAt)) {
            problems.push(`at ${stored.timestamp}, not the stated ${anchor.anchoredAt}`)
          }
          if (problems.length > 0) add("chaincode-lookup", "fail", `lookup(root): ${problems.join("; ")}`)
          else {add("chaincode-lookup", "pass",
              `lookup(root) on ${channel}/${chaincode}: batch ${stored.batchId}, tx ${stored.txId}, ${stored.timestamp}, by ${stored.submitter}`)}
          if (logRoot !== undefined) {
            const ok = stored.logRoot?.toLowerCase() === logRoot.toLowerCase()
            add("log-root", ok ? "pass" : "fail", ok
              ? `the ledger's record of the batch holds logRoot ${logRoot} (anchored by tx ${stored.txId})`
              : stored.logRoot === undefined
              ? "the ledger's record of the batch holds no logRoot: it was anchored without an RFC 9162 root"
              : `the ledger's record of the batch holds logRoot ${stored.logRoot}, not the receipt's root ${logRoot}`)
          }
        }

        // 2. The stated block holds the transaction, VALID, and has the stated hash.
        if (anchor.blockNumber === null || anchor.blockNumber === undefined) {
          add("block", "fail", "the anchor states no block number")
          return checks
        }
        const events = await network.getBlockEvents({ startBlock: BigInt(anchor.blockNumber) })
        let block: InstanceType<typeof common.Block> | undefined
        let timedOut = false
        const timer = setTimeout(() => {
          timedOut = true
          events.close()
        }, timeoutMs)
        try {
          for await (const b of events) {
            block = b
            break
          }
        } catch (e) {
          if (!timedOut) {
            add("block", isUnreachable(e) ? "error" : "fail", `block ${anchor.blockNumber} could not be read: ${detail(e)}`)
            return checks
          }
        } finally {
          clearTimeout(timer)
          events.close()
        }
        if (block === undefined) {
          add("block", "error", `block ${anchor.blockNumber} was not delivered within ${timeoutMs} ms (beyond the ledger height?)`)
          return checks
        }
        const header = block.getHeader()!
        const number = BigInt(header.getNumber())
        const blockHash = fabricBlockHash(number, header.getPreviousHash_asU8(), header.getDataHash_asU8())
        const dataList = block.getData()!.getDataList_asU8()
        const filter = block.getMetadata()!.getMetadataList_asU8()[common.BlockMetadataIndex.TRANSACTIONS_FILTER] ?? new Uint8Array()
        let found: { index: number; channel: string } | undefined
        for (let i = 0; i < dataList.length; i++) {
          const payload = common.Payload.deserializeBinary(common.Envelope.deserializeBinary(dataList[i]!).getPayload_asU8())
          const ch = common.ChannelHeader.deserializeBinary(payload.getHeader()!.getChannelHeader_asU8())
          if (ch.getTxId() === anchor.txHash) {
            found = { index: i, channel: ch.getChannelId() }
            break
          }
        }
        const codeNames = Object.fromEntries(Object.entries(peer.TxValidationCode).map(([k, v]) => [v, k]))
        const problems: Array<string> = []
        if (number !== BigInt(anchor.blockNumber)) problems.push(`the peer delivered block ${number} for ${anchor.blockNumber}`)
        const statedHash = anchor.blockHash?.replace(/^0x/, "").toLowerCase()
        if (statedHash && statedHash !== blockHash) problems.push(`block ${number} has hash ${blockHash}, not the stated ${statedHash}`)
        if (found === undefined) problems.push(`transaction ${anchor.txHash} is not in block ${number}`)
        else {
          const code = filter[found.index]
          if (found.channel !== channel) problems.push(`transaction is on channel ${found.channel}, not ${channel}`)
          if (code !== peer.TxValidationCode.VALID) problems.push(`transaction validation code is ${codeNames[code ?? -1] ?? code}, not VALID`)
        }
        if (problems.length > 0) add("block", "fail", problems.join("; "))
        else add("block", "pass", `transaction ${anchor.txHash} is VALID in block ${number} (hash ${blockHash})${statedHash ? "" : "; no block hash stated"}`)
        return checks
      } finally {
        gateway.close()
        client.close()
      }
    },
    catch: (e) => e
  }).pipe(Effect.catch((e) => {
    add("gateway", "error", `could not use the Fabric gateway: ${e instanceof Error ? e.message : String(e)}`)
    return Effect.succeed(checks)
  }))
})
