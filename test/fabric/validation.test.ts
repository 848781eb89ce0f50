/**
 * What the dev peer refuses or invalidates, as a Fabric peer would: bad and high-S signatures,
 * duplicate transaction ids, MVCC read conflicts; validation codes in filtered blocks.
 */
import { EndorseError, GatewayError, type Contract, type Network, type SubmitError } from "@hyperledger/fabric-gateway"
import { common, gateway as gatewayPb, peer } from "@hyperledger/fabric-protos"
import * as grpc from "@grpc/grpc-js"
import { createHash, verify, X509Certificate } from "node:crypto"
import { Contract as FabricContract, type Context } from "fabric-contract-api"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AnchorContract } from "../../contracts/fabric/index.js"
import type { DevPeer } from "../../src/dev/fabric-peer/index.ts"
import { connectGateway, highSSigner, randomRoot, startPeer, take, wrongKeySigner, type Connection } from "./helpers.ts"

/** Test-only contract: read-modify-write of one key, to provoke MVCC conflicts. */
class CounterContract extends FabricContract {
  constructor() {
    super("counter")
  }
  async increment(ctx: Context): Promise<string> {
    const current = Buffer.from(await ctx.stub.getState("counter")).toString("utf8")
    const next = String(Number(current || "0") + 1)
    await ctx.stub.putState("counter", Buffer.from(next))
    return next
  }
  async get(ctx: Context): Promise<string> {
    return Buffer.from(await ctx.stub.getState("counter")).toString("utf8") || "0"
  }
}

const Code = peer.TxValidationCode

describe("dev peer validation", () => {
  let devPeer: DevPeer
  let connection: Connection
  let network: Network
  let anchor: Contract
  let counter: Contract
  const others: Connection[] = []

  beforeAll(async () => {
    devPeer = await startPeer({ contracts: [AnchorContract, CounterContract], blockIntervalMs: 30 })
    connection = connectGateway(devPeer)
    network = connection.gateway.getNetwork(devPeer.channel)
    anchor = network.getContract(devPeer.chaincode)
    counter = network.getContract(devPeer.chaincode, "counter")
  })
  afterAll(async () => {
    for (const other of others) other.close()
    connection?.close()
    await devPeer?.close()
  })

  const withSigner = (signer: Parameters<typeof connectGateway>[1]) => {
    const other = connectGateway(devPeer, signer)
    others.push(other)
    return other.gateway.getNetwork(devPeer.channel).getContract(devPeer.chaincode)
  }

  it("refuses proposals signed with a key that is not the certificate's", async () => {
    const contract = withSigner(wrongKeySigner())
    const endorse = await contract.submitTransaction("anchor", randomRoot(), "1", "bad").catch((e: unknown) => e)
    expect(endorse).toBeInstanceOf(EndorseError)
    expect((endorse as EndorseError).code).toBe(grpc.status.ABORTED)
    expect((endorse as EndorseError).details[0]!.message).toBe(
      `error validating proposal: access denied: channel [${devPeer.channel}] creator org [${devPeer.mspId}]`
    )
    const evaluate = await contract.evaluateTransaction("lookup", randomRoot()).catch((e: unknown) => e)
    expect(evaluate).toBeInstanceOf(GatewayError)
    expect((evaluate as GatewayError).code).toBe(grpc.status.FAILED_PRECONDITION)
    expect((evaluate as GatewayError).message).toContain("evaluate call to endorser returned error: error validating proposal: access denied")
  })

  it("refuses high-S signatures, although they verify mathematically", async () => {
    const signer = highSSigner(devPeer)
    const highS = await signer(createHash("sha256").update("message").digest())
    expect(verify("sha256", Buffer.from("message"), new X509Certificate(devPeer.clientIdentity.certPem).publicKey, highS)).toBe(true)

    const contract = withSigner(signer)
    const error = await contract.submitTransaction("anchor", randomRoot(), "1", "high-s").catch((e: unknown) => e)
    expect(error).toBeInstanceOf(EndorseError)
    expect((error as EndorseError).details[0]!.message).toContain("access denied")

    // A transaction endorsed with a valid proposal signature but whose envelope is signed high-S:
    // the ordering service refuses it.
    const transaction = await anchor.newProposal("anchor", { arguments: [randomRoot(), "1", "high-s-envelope"] }).endorse()
    const highSGateway = connectGateway(devPeer, highSSigner(devPeer))
    others.push(highSGateway)
    const submit = await highSGateway.gateway.newTransaction(transaction.getBytes()).submit().catch((e: unknown) => e)
    expect(submit).toBeInstanceOf(GatewayError)
    expect((submit as SubmitError).name).toBe("SubmitError")
    expect((submit as SubmitError).code).toBe(grpc.status.ABORTED)
    expect((submit as SubmitError).message).toContain("received unsuccessful response from orderer: FORBIDDEN")
  })

  it("refuses event requests with a bad signature", async () => {
    const other = connectGateway(devPeer, wrongKeySigner())
    others.push(other)
    const events = await other.gateway.getNetwork(devPeer.channel).getChaincodeEvents(devPeer.chaincode, { startBlock: 0n })
    const error = await take(events, 1, 3000).catch((e: unknown) => e)
    expect((error as GatewayError).code).toBe(grpc.status.PERMISSION_DENIED)
  })

  it("refuses block event and commit status requests with a bad signature", async () => {
    const other = connectGateway(devPeer, wrongKeySigner())
    others.push(other)
    const blocks = await other.gateway.getNetwork(devPeer.channel).getBlockEvents({ startBlock: 0n })
    const deliverError = await take(blocks, 1, 3000).catch((e: unknown) => e)
    expect(String(deliverError)).toContain("Unexpected status response: 403") // common.Status.FORBIDDEN

    const submitted = await anchor.submitAsync("anchor", { arguments: [randomRoot(), "1", "acl"] })
    const statusError = await other.gateway.newCommit(submitted.getBytes()).getStatus().catch((e: unknown) => e)
    expect((statusError as GatewayError).code).toBe(grpc.status.PERMISSION_DENIED)
    expect((await submitted.getStatus()).code).toBe(Code.VALID)
  })

  it("anchors a root once even when two anchors of it race: the second is an MVCC conflict", async () => {
    const root = randomRoot()
    const first = await anchor.newProposal("anchor", { arguments: [root, "1", "race-1"] }).endorse()
    const second = await anchor.newProposal("anchor", { arguments: [root, "1", "race-2"] }).endorse()
    const [a, b] = await Promise.all([await first.submit(), await second.submit()].map((commit) => commit.getStatus()))
    expect(a!.code).toBe(Code.VALID)
    expect(b!.code).toBe(Code.MVCC_READ_CONFLICT)
    expect(JSON.parse(Buffer.from(await anchor.evaluateTransaction("lookup", root)).toString()).batchId).toBe("race-1")
  })

  it("rejects a duplicate transaction id at endorsement and invalidates a resubmitted transaction", async () => {
    const proposal = anchor.newProposal("anchor", { arguments: [randomRoot(), "1", "dup"] })
    const proposalBytes = proposal.getBytes()
    const transaction = await proposal.endorse()
    const transactionBytes = transaction.getBytes()
    const commit = await transaction.submit()
    const first = await commit.getStatus()
    expect(first.code).toBe(Code.VALID)

    // Endorsing the same signed proposal again: the endorser's duplicate check.
    const again = await connection.gateway.newProposal(proposalBytes).endorse().catch((e: unknown) => e)
    expect(again).toBeInstanceOf(EndorseError)
    expect((again as EndorseError).details[0]!.message).toMatch(new RegExp(`^duplicate transaction found \\[${first.transactionId}\\]`))

    // Resubmitting the same signed transaction: ordered, then committed invalid (DUPLICATE_TXID).
    const height = devPeer.blockHeight()
    const resubmitted = await connection.gateway.newTransaction(transactionBytes).submit()
    const blocks = await take(await network.getFilteredBlockEvents({ startBlock: BigInt(height) }), 1, 5000,
      (block) => block.getFilteredTransactionsList().some((tx) => tx.getTxid() === first.transactionId))
    const duplicate = blocks[0]!.getFilteredTransactionsList().find((tx) => tx.getTxid() === first.transactionId)!
    expect(duplicate.getTxValidationCode()).toBe(Code.DUPLICATE_TXID)
    expect(blocks[0]!.getNumber()).toBeGreaterThan(Number(first.blockNumber))
    // The commit status of a tx id is its first (valid) commit, as Fabric's tx index reports it.
    const status = await resubmitted.getStatus()
    expect(status.code).toBe(Code.VALID)
    expect(status.blockNumber).toBe(first.blockNumber)
  })

  it("invalidates a transaction whose endorsement signature does not match (ENDORSEMENT_POLICY_FAILURE)", async () => {
    const root = randomRoot()
    const transaction = await anchor.newProposal("anchor", { arguments: [root, "1", "forged"] }).endorse()
    const prepared = gatewayPb.PreparedTransaction.deserializeBinary(transaction.getBytes())
    const envelope = prepared.getEnvelope()!
    const payload = common.Payload.deserializeBinary(envelope.getPayload_asU8())
    const tx = peer.Transaction.deserializeBinary(payload.getData_asU8())
    const action = tx.getActionsList()[0]!
    const actionPayload = peer.ChaincodeActionPayload.deserializeBinary(action.getPayload_asU8())
    const endorsement = actionPayload.getAction()!.getEndorsementsList()[0]!
    const signature = Buffer.from(endorsement.getSignature_asU8())
    signature[signature.length - 1] ^= 0x01
    endorsement.setSignature(signature)
    action.setPayload(actionPayload.serializeBinary())
    payload.setData(tx.serializeBinary())
    envelope.setPayload(payload.serializeBinary())
    envelope.setSignature(new Uint8Array(0))
    const commit = await connection.gateway.newTransaction(prepared.serializeBinary()).submit()
    const status = await commit.getStatus()
    expect(status.code).toBe(Code.ENDORSEMENT_POLICY_FAILURE)
    const lookup = await anchor.evaluateTransaction("lookup", root).catch((e: unknown) => e)
    expect((lookup as GatewayError).details[0]!.message).toContain("is not anchored")
  })

  it("commits the second of two transactions endorsed against the same version as MVCC_READ_CONFLICT", async () => {
    await counter.submitTransaction("increment")
    const base = Number(Buffer.from(await counter.evaluateTransaction("get")).toString())
    const first = await counter.newProposal("increment").endorse()
    const second = await counter.newProposal("increment").endorse()
    const commits = [await first.submit(), await second.submit()]
    const [a, b] = await Promise.all(commits.map((c) => c.getStatus()))
    expect(a!.code).toBe(Code.VALID)
    expect(b!.code).toBe(Code.MVCC_READ_CONFLICT)
    expect(b!.code).toBe(11)
    expect(b!.successful).toBe(false)
    expect(Number(Buffer.from(await counter.evaluateTransaction("get")).toString())).toBe(base + 1)

    // The filtered block of the conflict shows both validation codes.
    const [block] = await take(await network.getFilteredBlockEvents({ startBlock: b!.blockNumber }), 1)
    const codes = new Map(block!.getFilteredTransactionsList().map((tx) => [tx.getTxid(), tx.getTxValidationCode()]))
    expect(codes.get(b!.transactionId)).toBe(Code.MVCC_READ_CONFLICT)
    if (a!.blockNumber === b!.blockNumber) expect(codes.get(a!.transactionId)).toBe(Code.VALID)

    // submitTransaction surfaces the conflict as a CommitError.
    const retried = await counter.submitTransaction("increment")
    expect(Number(Buffer.from(retried).toString())).toBe(base + 2)
  })

  it("reports events of valid transactions only, and no payload in filtered blocks", async () => {
    const root = randomRoot()
    const status = await (await anchor.submitAsync("anchor", { arguments: [root, "3", "filtered"] })).getStatus()
    const [block] = await take(await network.getFilteredBlockEvents({ startBlock: status.blockNumber }), 1)
    const tx = block!.getFilteredTransactionsList().find((t) => t.getTxid() === status.transactionId)!
    expect(tx.getTxValidationCode()).toBe(Code.VALID)
    const [action] = tx.getTransactionActions()!.getChaincodeActionsList()
    expect(action!.getChaincodeEvent()!.getEventName()).toBe("Anchored")
    expect(action!.getChaincodeEvent()!.getPayload_asU8()).toHaveLength(0)
  })
})
