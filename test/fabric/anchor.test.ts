/**
 * The anchoring chaincode on the dev peer, through the real @hyperledger/fabric-gateway client over
 * gRPC: submit/commit, lookup, duplicate roots, chaincode events with checkpoints, block hash chain,
 * and persistence across restarts.
 */
import { checkpointers, EndorseError, GatewayError, type ChaincodeEvent, type Contract, type Network } from "@hyperledger/fabric-gateway"
import { common, peer } from "@hyperledger/fabric-protos"
import * as grpc from "@grpc/grpc-js"
import { createHash, X509Certificate } from "node:crypto"
import { appendFileSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connect, hash, signers } from "@hyperledger/fabric-gateway"
import { createPrivateKey } from "node:crypto"
import { createDevIdentity, type DevPeer } from "../../src/dev/fabric-peer/index.ts"
import { connectGateway, headerHash, randomRoot, startPeer, take, type Connection } from "./helpers.ts"

const decode = (bytes: Uint8Array) => JSON.parse(Buffer.from(bytes).toString("utf8"))

describe("anchor chaincode on the Fabric dev peer", () => {
  let devPeer: DevPeer
  let connection: Connection
  let network: Network
  let contract: Contract

  beforeAll(async () => {
    devPeer = await startPeer()
    connection = connectGateway(devPeer)
    network = connection.gateway.getNetwork(devPeer.channel)
    contract = network.getContract(devPeer.chaincode)
  })
  afterAll(async () => {
    connection?.close()
    await devPeer?.close()
  })

  it("issues real X.509 dev certificates", () => {
    const certificate = new X509Certificate(devPeer.clientIdentity.certPem)
    expect(certificate.subject).toContain(`O=${devPeer.mspId}`)
    expect(certificate.verify(certificate.publicKey)).toBe(true)
  })

  it("anchors a root: committed VALID in a block, and lookup returns it with the tx timestamp", async () => {
    const root = randomRoot()
    const before = Date.now()
    const submitted = await contract.submitAsync("anchor", { arguments: [root, "7", "batch-a"] })
    const status = await submitted.getStatus()
    expect(status.successful).toBe(true)
    expect(status.code).toBe(peer.TxValidationCode.VALID)
    expect(status.blockNumber).toBeGreaterThanOrEqual(1n)
    const txId = submitted.getTransactionId()
    expect(txId).toMatch(/^[0-9a-f]{64}$/)

    const record = decode(await contract.evaluateTransaction("lookup", root))
    expect(record).toEqual({ root, leafCount: 7, batchId: "batch-a", txId, timestamp: record.timestamp, submitter: devPeer.mspId })
    expect(record.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    const time = Date.parse(record.timestamp)
    expect(time).toBeGreaterThanOrEqual(before - 1000)
    expect(time).toBeLessThanOrEqual(Date.now())
    expect(decode(submitted.getResult())).toEqual(record)
  })

  it("refuses to anchor the same root twice with an EndorseError carrying Fabric's details", async () => {
    const root = randomRoot()
    await contract.submitTransaction("anchor", root, "1", "batch-b")
    const error = await contract.submitTransaction("anchor", root.toUpperCase().replace("0X", "0x"), "1", "batch-c").catch((e: unknown) => e)
    expect(error).toBeInstanceOf(EndorseError)
    const endorseError = error as EndorseError
    expect(endorseError.code).toBe(grpc.status.ABORTED)
    expect(endorseError.message).toContain("failed to endorse transaction, see attached details for more info")
    expect(endorseError.details).toHaveLength(1)
    expect(endorseError.details[0]).toMatchObject({ address: devPeer.address, mspId: devPeer.mspId })
    expect(endorseError.details[0]!.message).toMatch(/^chaincode response 500, root 0x[0-9a-f]{64} is already anchored \(batch batch-b, tx [0-9a-f]{64}\)$/)
  })

  it("rejects malformed arguments and unknown roots", async () => {
    const bad = await contract.submitTransaction("anchor", "0x1234", "1", "b").catch((e: unknown) => e)
    expect((bad as EndorseError).details[0]!.message).toContain("invalid root")
    const zero = await contract.submitTransaction("anchor", randomRoot(), "0", "b").catch((e: unknown) => e)
    expect((zero as EndorseError).details[0]!.message).toContain("invalid leafCount")
    const short = await contract.submitTransaction("anchor", randomRoot(), "1").catch((e: unknown) => e)
    expect((short as EndorseError).details[0]!.message).toContain("Expected 3 parameters, but 2 have been supplied")
    const missing = await contract.evaluateTransaction("lookup", randomRoot()).catch((e: unknown) => e)
    // Evaluate: the gateway reports a chaincode error response as UNKNOWN.
    expect(missing).toBeInstanceOf(GatewayError)
    expect((missing as GatewayError).code).toBe(grpc.status.UNKNOWN)
    expect((missing as GatewayError).message).toMatch(
      /^2 UNKNOWN: evaluate call to endorser returned error: chaincode response 500, root 0x[0-9a-f]{64} is not anchored$/
    )
    expect((missing as GatewayError).details[0]!.message).toMatch(/^chaincode response 500, root 0x[0-9a-f]{64} is not anchored$/)
    const unknown = await contract.evaluateTransaction("nope").catch((e: unknown) => e)
    expect((unknown as GatewayError).details[0]!.message).toContain("You've asked to invoke a function that does not exist: nope")
  })

  it("delivers Anchored chaincode events, from a start block and resuming after a checkpoint", async () => {
    const roots = [randomRoot(), randomRoot(), randomRoot()]
    const commits = []
    for (const [i, root] of roots.entries()) {
      const submitted = await contract.submitAsync("anchor", { arguments: [root, String(i + 1), `events-${i}`] })
      commits.push(await submitted.getStatus())
    }
    const firstBlock = commits[0]!.blockNumber
    const ours = (event: ChaincodeEvent) => roots.includes(JSON.parse(Buffer.from(event.payload).toString()).root)

    const events = await take(await network.getChaincodeEvents(devPeer.chaincode, { startBlock: firstBlock }), 3, 5000, ours)
    expect(events.map((e) => e.transactionId)).toEqual(commits.map((c) => c.transactionId))
    expect(events.map((e) => e.blockNumber)).toEqual(commits.map((c) => c.blockNumber))
    for (const [i, event] of events.entries()) {
      expect(event.eventName).toBe("Anchored")
      expect(event.chaincodeName).toBe(devPeer.chaincode)
      const payload = JSON.parse(Buffer.from(event.payload).toString())
      expect(payload).toEqual({
        root: roots[i],
        leafCount: i + 1,
        batchId: `events-${i}`,
        txId: event.transactionId,
        timestamp: payload.timestamp,
        submitter: devPeer.mspId
      })
      expect(decode(await contract.evaluateTransaction("lookup", roots[i]!))).toEqual(payload)
    }

    // Resume after the first event: the checkpointer stores block number + tx id.
    const checkpointer = checkpointers.inMemory()
    await checkpointer.checkpointChaincodeEvent(events[0]!)
    const resumed = await take(await network.getChaincodeEvents(devPeer.chaincode, { checkpoint: checkpointer }), 2, 5000, ours)
    expect(resumed.map((e) => e.transactionId)).toEqual(commits.slice(1).map((c) => c.transactionId))

    // Live events: a stream opened without a start block sees only later commits.
    const live = await network.getChaincodeEvents(devPeer.chaincode)
    const next = randomRoot()
    const pending = take(live, 1, 5000)
    await contract.submitTransaction("anchor", next, "9", "live")
    const [liveEvent] = await pending
    expect(JSON.parse(Buffer.from(liveEvent!.payload).toString()).root).toBe(next)
  })

  it("delivers blocks whose header hash chain and data hashes verify", async () => {
    await contract.submitTransaction("anchor", randomRoot(), "2", "blocks")
    const height = devPeer.blockHeight()
    const blocks = await take(await network.getBlockEvents({ startBlock: 0n }), height, 5000)
    expect(blocks.map((b) => b.getHeader()!.getNumber())).toEqual([...Array(height).keys()])

    let previous: common.BlockHeader | undefined
    for (const block of blocks) {
      const header = block.getHeader()!
      const data = block.getData()!.getDataList_asU8()
      expect(Buffer.from(header.getDataHash_asU8())).toEqual(createHash("sha256").update(Buffer.concat(data)).digest())
      if (previous) {
        const expected = headerHash(BigInt(previous.getNumber()), previous.getPreviousHash_asU8(), previous.getDataHash_asU8())
        expect(Buffer.from(header.getPreviousHash_asU8())).toEqual(expected)
      } else {
        expect(header.getPreviousHash_asU8()).toHaveLength(0)
      }
      const metadata = block.getMetadata()!.getMetadataList_asU8()
      expect(metadata).toHaveLength(5)
      expect(metadata[common.BlockMetadataIndex.TRANSACTIONS_FILTER]).toHaveLength(data.length)
      const signatures = common.Metadata.deserializeBinary(metadata[common.BlockMetadataIndex.SIGNATURES]!)
      expect(signatures.getSignaturesList()).toHaveLength(1)
      previous = header
    }

    // Block 0 is the channel's config block; the others carry endorser transactions.
    const txType = (block: common.Block, i = 0) => {
      const payload = common.Payload.deserializeBinary(common.Envelope.deserializeBinary(block.getData()!.getDataList_asU8()[i]!).getPayload_asU8())
      return common.ChannelHeader.deserializeBinary(payload.getHeader()!.getChannelHeader_asU8())
    }
    expect(txType(blocks[0]!).getType()).toBe(common.HeaderType.CONFIG)
    const last = txType(blocks.at(-1)!)
    expect(last.getType()).toBe(common.HeaderType.ENDORSER_TRANSACTION)
    expect(last.getChannelId()).toBe(devPeer.channel)
  })

  it("serves block-and-private-data events too", async () => {
    const [first] = await take(await network.getBlockAndPrivateDataEvents({ startBlock: 1n }), 1, 5000)
    expect(first!.getBlock()!.getHeader()!.getNumber()).toBe(1)
  })
})

describe("dev peer persistence", () => {
  it("keeps blocks, state and identities across restarts", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "anchord-devpeer-"))
    try {
      const root = randomRoot()
      const first = await startPeer({ dataDir })
      let connection = connectGateway(first)
      const submitted = await connection.gateway.getNetwork(first.channel).getContract(first.chaincode).submitAsync("anchor", {
        arguments: [root, "4", "persist"]
      })
      const status = await submitted.getStatus()
      const height = first.blockHeight()
      const certPem = first.clientIdentity.certPem
      connection.close()
      await first.close()

      // A block append cut short by a crash is dropped on restart.
      appendFileSync(join(dataDir, "ledger", `${first.channel}.blocks`), "CgIIAR")
      const second = await startPeer({ dataDir })
      try {
        expect(second.clientIdentity.certPem).toBe(certPem)
        expect(second.clientIdentity.certPath).toBe(join(dataDir, "msp", "client", "cert.pem"))
        expect(second.blockHeight()).toBe(height)
        connection = connectGateway(second)
        const network = connection.gateway.getNetwork(second.channel)
        const contract = network.getContract(second.chaincode)
        expect(decode(await contract.evaluateTransaction("lookup", root)).txId).toBe(submitted.getTransactionId())
        const again = await contract.submitTransaction("anchor", root, "4", "persist").catch((e: unknown) => e)
        expect(again).toBeInstanceOf(EndorseError)
        const [event] = await take(await network.getChaincodeEvents(second.chaincode, { startBlock: status.blockNumber }), 1)
        expect(event!.transactionId).toBe(submitted.getTransactionId())
        // The chain continues from the replayed blocks.
        await contract.submitTransaction("anchor", randomRoot(), "1", "after-restart")
        const blocks = await take(await network.getBlockEvents({ startBlock: BigInt(height - 1) }), 2)
        const [a, b] = blocks.map((block) => block.getHeader()!)
        expect(Buffer.from(b!.getPreviousHash_asU8())).toEqual(headerHash(BigInt(a!.getNumber()), a!.getPreviousHash_asU8(), a!.getDataHash_asU8()))
        connection.close()
      } finally {
        await second.close()
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe("dev peer over TLS", () => {
  it("serves the gateway with a TLS server certificate", async () => {
    const tlsIdentity = createDevIdentity("AnchordDevMSP", { role: "tls", commonName: "localhost", hosts: ["localhost", "127.0.0.1"] })
    expect(new X509Certificate(tlsIdentity.certPem).subjectAltName).toBe("DNS:localhost, IP Address:127.0.0.1")
    const devPeer = await startPeer({ tls: { certPem: tlsIdentity.certPem, keyPem: tlsIdentity.privateKeyPem } })
    // Dial the IP, verify the certificate for the host alias (what a real network config calls hostAlias).
    const client = new grpc.Client(devPeer.address, grpc.credentials.createSsl(Buffer.from(tlsIdentity.certPem)), {
      "grpc.ssl_target_name_override": "localhost"
    })
    const gateway = connect({
      client,
      identity: { mspId: devPeer.mspId, credentials: Buffer.from(devPeer.clientIdentity.certPem) },
      signer: signers.newPrivateKeySigner(createPrivateKey(devPeer.clientIdentity.privateKeyPem)),
      hash: hash.sha256,
      evaluateOptions: () => ({ deadline: Date.now() + 5000 }),
      endorseOptions: () => ({ deadline: Date.now() + 5000 }),
      submitOptions: () => ({ deadline: Date.now() + 5000 }),
      commitStatusOptions: () => ({ deadline: Date.now() + 5000 })
    })
    try {
      const contract = gateway.getNetwork(devPeer.channel).getContract(devPeer.chaincode)
      const root = randomRoot()
      await contract.submitTransaction("anchor", root, "1", "tls")
      expect(decode(await contract.evaluateTransaction("lookup", root)).batchId).toBe("tls")
    } finally {
      gateway.close()
      client.close()
      await devPeer.close()
    }
  })
})
