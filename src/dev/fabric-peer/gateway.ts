/**
 * The `gateway.Gateway` service (Fabric's internal/pkg/gateway): Evaluate, Endorse, Submit
 * (with the ordering service's broadcast checks), CommitStatus and ChaincodeEvents.
 */
import * as grpc from "@grpc/grpc-js"
import { common, gateway, orderer, peer } from "@hyperledger/fabric-protos"
import { chaincodeEvent, HeaderTypes } from "./blocks.ts"
import { detail, type PeerContext } from "./context.ts"
import { checkTarget, payloadWithoutTransient, processProposal, unpackProposal } from "./endorser.ts"
import { fail, failStream, unary } from "./errors.ts"
import { parseCreator, verifySignature } from "./signature.ts"

export function gatewayService(ctx: PeerContext): grpc.UntypedServiceImplementation {
  const evaluate = unary<gateway.EvaluateRequest, gateway.EvaluateResponse>(async (request) => {
    const signed = request.getProposedTransaction()
    const proposal = unpackProposal(signed)
    checkTarget(ctx, proposal, "evaluate")
    const outcome = await processProposal(ctx, signed!, proposal)
    if (outcome.kind === "rejected") {
      fail(grpc.status.FAILED_PRECONDITION, `evaluate call to endorser returned error: ${outcome.message}`, [detail(ctx, outcome.message)])
    }
    if (outcome.kind === "chaincode") {
      fail(grpc.status.UNKNOWN, `evaluate call to endorser returned error: ${outcome.message}`, [detail(ctx, outcome.message)])
    }
    const { result } = outcome
    const response = new peer.Response()
    response.setStatus(result.status)
    response.setMessage(result.message)
    response.setPayload(result.payload)
    const evaluateResponse = new gateway.EvaluateResponse()
    evaluateResponse.setResult(response)
    return evaluateResponse
  })

  const endorse = unary<gateway.EndorseRequest, gateway.EndorseResponse>(async (request) => {
    const signed = request.getProposedTransaction()
    if (!signed || signed.getProposalBytes_asU8().length === 0) fail(grpc.status.INVALID_ARGUMENT, "the proposed transaction must contain a signed proposal")
    const proposal = unpackProposal(signed)
    checkTarget(ctx, proposal, "endorse")
    const outcome = await processProposal(ctx, signed!, proposal)
    if (outcome.kind !== "ok") {
      fail(grpc.status.ABORTED, "failed to endorse transaction, see attached details for more info", [detail(ctx, outcome.message)])
    }
    const ok = outcome
    // protoutil / gateway prepareTransaction: an unsigned envelope the client signs.
    const endorsedAction = new peer.ChaincodeEndorsedAction()
    endorsedAction.setProposalResponsePayload(ok.responsePayload)
    endorsedAction.setEndorsementsList([ok.endorsement])
    const actionPayload = new peer.ChaincodeActionPayload()
    actionPayload.setChaincodeProposalPayload(payloadWithoutTransient(proposal).serializeBinary())
    actionPayload.setAction(endorsedAction)
    const transactionAction = new peer.TransactionAction()
    transactionAction.setHeader(proposal.header.getSignatureHeader_asU8())
    transactionAction.setPayload(actionPayload.serializeBinary())
    const transaction = new peer.Transaction()
    transaction.setActionsList([transactionAction])
    const payload = new common.Payload()
    payload.setHeader(proposal.header)
    payload.setData(transaction.serializeBinary())
    const envelope = new common.Envelope()
    envelope.setPayload(payload.serializeBinary())
    const response = new gateway.EndorseResponse()
    response.setPreparedTransaction(envelope)
    return response
  })

  const submit = unary<gateway.SubmitRequest, gateway.SubmitResponse>(async (request) => {
    const envelope = request.getPreparedTransaction()
    if (!envelope) return fail(grpc.status.INVALID_ARGUMENT, "a prepared transaction is required")
    if (envelope.getSignature_asU8().length === 0) fail(grpc.status.INVALID_ARGUMENT, "prepared transaction must be signed")
    if (request.getChannelId() !== ctx.channel) fail(grpc.status.FAILED_PRECONDITION, `channel ${request.getChannelId()} not found`)
    // The ordering service's broadcast filters: well-formed, right channel, creator signature.
    const ordererStatus = broadcastCheck(ctx, envelope)
    if (ordererStatus !== null) {
      const message = `received unsuccessful response from orderer: ${ordererStatus}`
      fail(grpc.status.ABORTED, message, [detail(ctx, `rpc error: code = Aborted desc = ${message}`)])
    }
    ctx.ledger.enqueue(envelope.serializeBinary())
    return new gateway.SubmitResponse()
  })

  const commitStatus = unary<gateway.SignedCommitStatusRequest, gateway.CommitStatusResponse>(async (signed, call) => {
    if (signed.getRequest_asU8().length === 0) fail(grpc.status.INVALID_ARGUMENT, "a commit status request is required")
    let request: gateway.CommitStatusRequest
    try {
      request = gateway.CommitStatusRequest.deserializeBinary(signed.getRequest_asU8())
    } catch (error) {
      return fail(grpc.status.INVALID_ARGUMENT, `invalid status request: ${(error as Error).message}`)
    }
    checkAcl(ctx, request.getChannelId(), request.getIdentity_asU8(), signed.getRequest_asU8(), signed.getSignature_asU8())
    const controller = new AbortController()
    call.on("cancelled", () => controller.abort(new Error("cancelled")))
    const status = await ctx.ledger.waitForTx(request.getTransactionId(), controller.signal).catch(() =>
      fail(grpc.status.CANCELLED, "commit status request cancelled")
    )
    const response = new gateway.CommitStatusResponse()
    response.setResult(status.code)
    response.setBlockNumber(status.blockNumber)
    return response
  })

  const chaincodeEvents: grpc.handleServerStreamingCall<gateway.SignedChaincodeEventsRequest, gateway.ChaincodeEventsResponse> = (call) => {
    try {
      const signed = call.request
      if (signed.getRequest_asU8().length === 0) fail(grpc.status.INVALID_ARGUMENT, "a chaincode events request is required")
      let request: gateway.ChaincodeEventsRequest
      try {
        request = gateway.ChaincodeEventsRequest.deserializeBinary(signed.getRequest_asU8())
      } catch (error) {
        return fail(grpc.status.INVALID_ARGUMENT, `invalid chaincode events request: ${(error as Error).message}`)
      }
      checkAcl(ctx, request.getChannelId(), request.getIdentity_asU8(), signed.getRequest_asU8(), signed.getSignature_asU8())
      const chaincodeId = request.getChaincodeId()
      const afterTxId = request.getAfterTransactionId()
      let next = chaincodeEventsStartBlock(ctx, request)
      let passedAfterTx = afterTxId === ""
      const pump = () => {
        while (next < ctx.ledger.height() && !call.cancelled) {
          const stored = ctx.ledger.block(next++)!
          const events: peer.ChaincodeEvent[] = []
          for (const tx of stored.txs) {
            if (!tx.event) continue
            if (!passedAfterTx) {
              passedAfterTx = tx.event.txId === afterTxId
              continue
            }
            if (tx.event.chaincodeId === chaincodeId) events.push(chaincodeEvent(tx.event))
          }
          if (events.length === 0) continue
          const response = new gateway.ChaincodeEventsResponse()
          response.setBlockNumber(stored.number)
          response.setEventsList(events)
          call.write(response)
        }
      }
      const unsubscribe = ctx.ledger.onBlock(pump)
      call.on("cancelled", unsubscribe)
      pump()
    } catch (error) {
      failStream(call, error)
    }
  }

  return { evaluate, endorse, submit, commitStatus, chaincodeEvents }
}

function chaincodeEventsStartBlock(ctx: PeerContext, request: gateway.ChaincodeEventsRequest): number {
  const after = request.getAfterTransactionId()
  const known = after ? ctx.ledger.txStatus(after) : undefined
  if (known) return known.blockNumber
  const position = request.getStartPosition()
  switch (position?.getTypeCase() ?? orderer.SeekPosition.TypeCase.TYPE_NOT_SET) {
    case orderer.SeekPosition.TypeCase.TYPE_NOT_SET:
    case orderer.SeekPosition.TypeCase.NEXT_COMMIT:
      return ctx.ledger.height()
    case orderer.SeekPosition.TypeCase.SPECIFIED:
      return position!.getSpecified()!.getNumber()
    default:
      return fail(grpc.status.INVALID_ARGUMENT, `invalid start position type: ${position!.getTypeCase()}`)
  }
}

/** Gateway ACL check on a signed request (CommitStatus, ChaincodeEvents). */
function checkAcl(ctx: PeerContext, channel: string, identity: Uint8Array, data: Uint8Array, signature: Uint8Array): void {
  let reason: string | null
  try {
    const creator = parseCreator(identity)
    reason = creator.mspId !== ctx.mspId ? `unknown MSP ${creator.mspId}` : verifySignature(creator, data, signature)
  } catch (error) {
    reason = (error as Error).message
  }
  if (reason !== null) {
    ctx.log(`request on channel ${channel} denied: ${reason}`)
    fail(grpc.status.PERMISSION_DENIED,
      `failed evaluating policy on signed data during check policy on channel [${channel}] with policy [/Channel/Application/Writers]: [access denied]`)
  }
  if (channel !== ctx.channel) fail(grpc.status.NOT_FOUND, `channel ${channel} not found`)
}

/** Returns null if the orderer accepts the envelope, or the common.Status name it would answer. */
function broadcastCheck(ctx: PeerContext, envelope: common.Envelope): string | null {
  try {
    const payload = common.Payload.deserializeBinary(envelope.getPayload_asU8())
    const header = payload.getHeader()
    if (!header) return "BAD_REQUEST"
    const channelHeader = common.ChannelHeader.deserializeBinary(header.getChannelHeader_asU8())
    if (channelHeader.getChannelId() !== ctx.channel) return "NOT_FOUND"
    if (channelHeader.getType() !== HeaderTypes.ENDORSER_TRANSACTION) return "BAD_REQUEST"
    const creator = parseCreator(common.SignatureHeader.deserializeBinary(header.getSignatureHeader_asU8()).getCreator_asU8())
    if (creator.mspId !== ctx.mspId) return "FORBIDDEN"
    const reason = verifySignature(creator, envelope.getPayload_asU8(), envelope.getSignature_asU8())
    if (reason !== null) ctx.log(`broadcast of ${channelHeader.getTxId()} refused: ${reason}`)
    return reason === null ? null : "FORBIDDEN"
  } catch {
    return "BAD_REQUEST"
  }
}
