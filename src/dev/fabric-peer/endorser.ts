/**
 * The endorser side of the dev peer (Fabric's core/endorser ProcessProposal): proposal unpacking
 * and validation (signature, tx id, duplicate tx id), in-process simulation, and the signed
 * proposal response payload (read/write set, chaincode event, response).
 */
import * as grpc from "@grpc/grpc-js"
import { common, ledger as ledgerPb, peer } from "@hyperledger/fabric-protos"
import { chaincodeEvent, HeaderTypes, sha256, type EventEntry, type ReadEntry, type WriteEntry } from "./blocks.ts"
import type { PeerContext } from "./context.ts"
import { fail } from "./errors.ts"
import { computeTxId, parseCreator, signLowS, verifySignature, type Creator } from "./signature.ts"
import type { SimulationResult } from "./stub.ts"

export interface Proposal {
  readonly header: common.Header
  readonly channelHeader: common.ChannelHeader
  readonly signatureHeader: common.SignatureHeader
  readonly payload: peer.ChaincodeProposalPayload
  readonly chaincodeName: string
  readonly args: Uint8Array[]
}

export function unpackProposal(signed: peer.SignedProposal | undefined): Proposal {
  if (!signed || signed.getProposalBytes_asU8().length === 0) fail(grpc.status.INVALID_ARGUMENT, "the proposed transaction must contain a signed proposal")
  try {
    const proposal = peer.Proposal.deserializeBinary(signed!.getProposalBytes_asU8())
    const header = common.Header.deserializeBinary(proposal.getHeader_asU8())
    const channelHeader = common.ChannelHeader.deserializeBinary(header.getChannelHeader_asU8())
    const signatureHeader = common.SignatureHeader.deserializeBinary(header.getSignatureHeader_asU8())
    const payload = peer.ChaincodeProposalPayload.deserializeBinary(proposal.getPayload_asU8())
    const spec = peer.ChaincodeInvocationSpec.deserializeBinary(payload.getInput_asU8()).getChaincodeSpec()
    const chaincodeName = spec?.getChaincodeId()?.getName() ?? ""
    if (channelHeader.getChannelId() === "") throw new Error("no channel id provided")
    if (chaincodeName === "") throw new Error(`no chaincode name is provided, channel id [${channelHeader.getChannelId()}]`)
    return { header, channelHeader, signatureHeader, payload, chaincodeName, args: spec!.getInput()?.getArgsList_asU8() ?? [] }
  } catch (error) {
    return fail(grpc.status.INVALID_ARGUMENT, `failed to unpack transaction proposal: ${(error as Error).message}`)
  }
}

export type EndorserOutcome =
  | { readonly kind: "ok"; readonly proposal: Proposal; readonly result: SimulationResult; readonly responsePayload: Uint8Array;
    readonly endorsement: peer.Endorsement }
  /** Error from the endorser's checks (Fabric: ProcessProposal returns an error: FailedPrecondition, no retry). */
  | { readonly kind: "rejected"; readonly message: string }
  /** Chaincode error response (status >= 400, with payload): Fabric's gateway reports it as UNKNOWN. */
  | { readonly kind: "chaincode"; readonly message: string }

function txRwSet(namespace: string, reads: ReadEntry[], writes: WriteEntry[]): Uint8Array {
  const set = new ledgerPb.rwset.TxReadWriteSet()
  set.setDataModel(ledgerPb.rwset.TxReadWriteSet.DataModel.KV)
  if (reads.length > 0 || writes.length > 0) {
    const kv = new ledgerPb.rwset.kvrwset.KVRWSet()
    const byKey = <T extends { key: string }>(a: T, b: T) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)
    kv.setReadsList(
      [...reads].sort(byKey).map((read) => {
        const kvRead = new ledgerPb.rwset.kvrwset.KVRead()
        kvRead.setKey(read.key)
        if (read.version) {
          const version = new ledgerPb.rwset.kvrwset.Version()
          version.setBlockNum(read.version.blockNum)
          version.setTxNum(read.version.txNum)
          kvRead.setVersion(version)
        }
        return kvRead
      })
    )
    kv.setWritesList(
      [...writes].sort(byKey).map((write) => {
        const kvWrite = new ledgerPb.rwset.kvrwset.KVWrite()
        kvWrite.setKey(write.key)
        kvWrite.setIsDelete(write.isDelete)
        kvWrite.setValue(write.value)
        return kvWrite
      })
    )
    const ns = new ledgerPb.rwset.NsReadWriteSet()
    ns.setNamespace(namespace)
    ns.setRwset(kv.serializeBinary())
    set.setNsRwsetList([ns])
  }
  return set.serializeBinary()
}

function eventBytes(event: EventEntry | null): Uint8Array {
  return event ? chaincodeEvent(event).serializeBinary() : new Uint8Array(0)
}

/** The endorser's ProcessProposal: validation, duplicate check, simulation, signed response. */
export async function processProposal(ctx: PeerContext, signed: peer.SignedProposal, proposal: Proposal): Promise<EndorserOutcome> {
  const { channelHeader, signatureHeader, header } = proposal
  const channel = channelHeader.getChannelId()
  if (channelHeader.getType() !== HeaderTypes.ENDORSER_TRANSACTION) {
    return { kind: "rejected", message: `error validating proposal: invalid header type ${channelHeader.getType()}` }
  }
  let creator: Creator | undefined
  try {
    creator = parseCreator(signatureHeader.getCreator_asU8())
  } catch (error) {
    ctx.log(`proposal rejected: ${(error as Error).message}`)
  }
  const reason = !creator
    ? "malformed creator"
    : creator.mspId !== ctx.mspId
    ? `unknown MSP ${creator.mspId}`
    : verifySignature(creator, signed.getProposalBytes_asU8(), signed.getSignature_asU8())
  if (reason !== null || !creator) {
    ctx.log(`proposal ${channelHeader.getTxId()} rejected: ${reason}`)
    return { kind: "rejected", message: `error validating proposal: access denied: channel [${channel}] creator org [${creator?.mspId ?? ""}]` }
  }
  const expectedTxId = computeTxId(signatureHeader.getNonce_asU8(), signatureHeader.getCreator_asU8())
  if (channelHeader.getTxId() !== expectedTxId) {
    return { kind: "rejected", message: `error validating proposal: invalid txid. got [${channelHeader.getTxId()}], expected [${expectedTxId}]` }
  }
  if (ctx.ledger.txStatus(expectedTxId)) {
    return {
      kind: "rejected",
      message: `duplicate transaction found [${expectedTxId}]. Creator [${Buffer.from(signatureHeader.getCreator_asU8()).toString("hex")}]`
    }
  }

  const timestamp = channelHeader.getTimestamp()
  const transient = new Map<string, Uint8Array>()
  proposal.payload.getTransientmapMap().forEach((value: Uint8Array | string, key: string) => transient.set(key, Buffer.from(value as Uint8Array)))
  const result = await ctx.router.invoke(
    {
      channelId: channel,
      chaincodeId: proposal.chaincodeName,
      txId: expectedTxId,
      timestamp: { seconds: timestamp?.getSeconds() ?? 0, nanos: timestamp?.getNanos() ?? 0 },
      creator,
      args: proposal.args,
      transient
    },
    ctx.ledger
  )
  if (result.status >= 400) {
    // fabric-shim 2.5.8 answers a failed transaction function with a COMPLETED message carrying a
    // 500 response; the endorser returns it with a payload and the gateway words it like this.
    return { kind: "chaincode", message: `chaincode response ${result.status}, ${result.message}` }
  }

  const response = new peer.Response()
  response.setStatus(result.status)
  response.setMessage(result.message)
  response.setPayload(result.payload)
  const chaincodeId = new peer.ChaincodeID()
  chaincodeId.setName(proposal.chaincodeName)
  chaincodeId.setVersion("1.0")
  const action = new peer.ChaincodeAction()
  action.setResults(txRwSet(proposal.chaincodeName, result.reads, result.writes))
  action.setEvents(eventBytes(result.event))
  action.setResponse(response)
  action.setChaincodeId(chaincodeId)
  const responsePayload = new peer.ProposalResponsePayload()
  responsePayload.setProposalHash(sha256(header.getChannelHeader_asU8(), header.getSignatureHeader_asU8(), payloadWithoutTransient(proposal).serializeBinary()))
  responsePayload.setExtension$(action.serializeBinary())
  const responsePayloadBytes = responsePayload.serializeBinary()
  const endorsement = new peer.Endorsement()
  endorsement.setEndorser(ctx.signer.identity)
  endorsement.setSignature(signLowS(ctx.signer.key, Buffer.concat([responsePayloadBytes, ctx.signer.identity])))
  return { kind: "ok", proposal, result, responsePayload: responsePayloadBytes, endorsement }
}

export function payloadWithoutTransient(proposal: Proposal): peer.ChaincodeProposalPayload {
  const payload = new peer.ChaincodeProposalPayload()
  payload.setInput(proposal.payload.getInput_asU8())
  return payload
}

/** The gateway's own routing: the dev peer hosts one channel and one chaincode. */
export function checkTarget(ctx: PeerContext, proposal: Proposal, verb: "evaluate" | "endorse"): void {
  const channel = proposal.channelHeader.getChannelId()
  if (channel !== ctx.channel || proposal.chaincodeName !== ctx.chaincode) {
    fail(grpc.status.FAILED_PRECONDITION, `no peers available to ${verb} chaincode ${proposal.chaincodeName} in channel ${channel}`)
  }
}
