/**
 * Cross-check of the chaincode under the REAL fabric-shim (its contract router and ChaincodeStub,
 * with a fake peer handler) against anchord's dev peer stub and router, on the same proposals:
 * same status, message, payload, writes and event payload.
 *
 * fabric-shim is not a dependency of anchord itself; install the chaincode's own dependencies first:
 *   cd contracts/fabric && npm install --no-audit --no-fund && cd ../..
 *   npx node contracts/fabric/scripts/shim-crosscheck.mts
 */
import { createPrivateKey } from "node:crypto"
import { createRequire } from "node:module"
import { createDevIdentity } from "../../../src/dev/fabric-peer/identity.ts"
import { parseCreator } from "../../../src/dev/fabric-peer/signature.ts"
import { ContractRouter } from "../../../src/dev/fabric-peer/stub.ts"

const chaincodeRequire = createRequire(new URL("../package.json", import.meta.url))
const appRequire = createRequire(new URL("../../../package.json", import.meta.url))
const { ChaincodeStub } = chaincodeRequire("fabric-shim")
const ChaincodeFromContract = chaincodeRequire("fabric-shim/lib/contract-spi/chaincodefromcontract")
const { JSONSerializer } = chaincodeRequire("fabric-contract-api")
const shimProtos = chaincodeRequire("@hyperledger/fabric-protos") // the 0.2.x copy fabric-shim uses
const { AnchorContract } = chaincodeRequire("./index.js")
const grpc = appRequire("@grpc/grpc-js")
const { connect, hash, signers } = appRequire("@hyperledger/fabric-gateway")
const protos = appRequire("@hyperledger/fabric-protos")

const identity = createDevIdentity("Org1MSP")
const client = new grpc.Client("127.0.0.1:1", grpc.credentials.createInsecure()) // never dialled
const gateway = connect({
  client,
  identity: { mspId: identity.mspId, credentials: Buffer.from(identity.certPem) },
  signer: signers.newPrivateKeySigner(createPrivateKey(identity.privateKeyPem)),
  hash: hash.sha256
})
const contract = gateway.getNetwork("ch").getContract("cc")

interface Outcome {
  status: number
  message: string
  payload: string
  writes: string
  event: string
}

async function viaShim(signedBytes: Uint8Array, txId: string, args: string[], state: Map<string, Buffer>): Promise<Outcome> {
  const input = new shimProtos.peer.ChaincodeInput()
  input.setArgsList(args.map((arg) => Buffer.from(arg)))
  const writes: string[] = []
  const handler = {
    handleGetState: async (_collection: string, key: string) => state.get(key) ?? Buffer.alloc(0),
    handlePutState: async (_collection: string, key: string, value: Buffer) => void writes.push(`${key}=${Buffer.from(value)}`)
  }
  const stub = new ChaincodeStub(handler, "ch", txId, input, shimProtos.peer.SignedProposal.deserializeBinary(signedBytes))
  const serializers = { transaction: "jsonSerializer", serializers: { jsonSerializer: JSONSerializer } }
  const response = await new ChaincodeFromContract([AnchorContract], serializers, {}, "", "").Invoke(stub)
  return {
    status: response.status,
    message: response.message ?? "",
    payload: Buffer.from(response.payload ?? []).toString(),
    writes: response.status < 400 ? writes.join(",") : "",
    event: response.status < 400 && stub.chaincodeEvent ? `${stub.chaincodeEvent.getEventName()}:${Buffer.from(stub.chaincodeEvent.getPayload_asU8())}` : ""
  }
}

async function viaDevPeer(signedBytes: Uint8Array, args: string[], state: Map<string, Buffer>): Promise<Outcome> {
  const signed = protos.peer.SignedProposal.deserializeBinary(signedBytes)
  const header = protos.common.Header.deserializeBinary(protos.peer.Proposal.deserializeBinary(signed.getProposalBytes_asU8()).getHeader_asU8())
  const channelHeader = protos.common.ChannelHeader.deserializeBinary(header.getChannelHeader_asU8())
  const signatureHeader = protos.common.SignatureHeader.deserializeBinary(header.getSignatureHeader_asU8())
  const result = await new ContractRouter([AnchorContract]).invoke(
    {
      channelId: "ch",
      chaincodeId: "cc",
      txId: channelHeader.getTxId(),
      timestamp: { seconds: channelHeader.getTimestamp().getSeconds(), nanos: channelHeader.getTimestamp().getNanos() },
      creator: parseCreator(signatureHeader.getCreator_asU8()),
      args: args.map((arg) => Buffer.from(arg)),
      transient: new Map()
    },
    { get: (_namespace: string, key: string) => (state.has(key) ? { value: state.get(key)!, version: { blockNum: 1, txNum: 0 } } : undefined) }
  )
  return {
    status: result.status,
    message: result.message,
    payload: Buffer.from(result.payload).toString(),
    writes: result.writes.map((write) => `${write.key}=${Buffer.from(write.value)}`).join(","),
    event: result.event ? `${result.event.eventName}:${Buffer.from(result.event.payload)}` : ""
  }
}

const root = "0x" + "AB".repeat(32)
const stored = new Map([[`anchor:${root.toLowerCase()}`, Buffer.from(JSON.stringify({ root: root.toLowerCase(), batchId: "b0", txId: "t0" }))]])
const cases: Array<[string, string[], Map<string, Buffer>]> = [
  ["anchor", [root, "3", "b1"], new Map()],
  ["anchor", [root, "3", "b1"], stored],
  ["anchor", [root, "3"], new Map()],
  ["anchor", ["0x12", "3", "b1"], new Map()],
  ["lookup", [root], stored],
  ["lookup", [root], new Map()],
  ["AnchorContract:lookup", [root], stored],
  ["nope", [], new Map()],
  ["Other:lookup", [root], new Map()]
]
let failures = 0
for (const [fn, args, state] of cases) {
  const proposal = contract.newProposal(fn, { arguments: args })
  const signedBytes = protos.gateway.ProposedTransaction.deserializeBinary(proposal.getBytes()).getProposal()!.serializeBinary()
  const shim = await viaShim(signedBytes, proposal.getTransactionId(), [fn, ...args], state)
  const dev = await viaDevPeer(signedBytes, [fn, ...args], state)
  const same = JSON.stringify(shim) === JSON.stringify(dev)
  if (!same) failures++
  console.log(`${same ? "same" : "DIFFERENT"}  ${fn}(${args.length} args) -> ${shim.status} ${shim.message || shim.payload.slice(0, 60)}`)
  if (!same) console.log("  shim:", shim, "\n  dev: ", dev)
}
gateway.close()
client.close()
process.exitCode = failures === 0 ? 0 : 1
