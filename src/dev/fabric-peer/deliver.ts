/**
 * The `protos.Deliver` service: Deliver, DeliverFiltered and DeliverWithPrivateData. Every request
 * is answered with its blocks and then a status (a bare stream end crashes the client).
 */
import type * as grpc from "@grpc/grpc-js"
import { common, orderer, peer } from "@hyperledger/fabric-protos"
import { filteredBlock, HeaderTypes, type StoredBlock } from "./blocks.ts"
import type { PeerContext } from "./context.ts"
import { failStream } from "./errors.ts"
import { parseCreator, verifySignature, type Creator } from "./signature.ts"

type DeliverKind = "block" | "filtered" | "private"

function deliverResponse(ctx: PeerContext, kind: DeliverKind, stored: StoredBlock): peer.DeliverResponse {
  const response = new peer.DeliverResponse()
  if (kind === "block") response.setBlock(stored.block)
  else if (kind === "filtered") response.setFilteredBlock(filteredBlock(ctx.channel, stored))
  else {
    const withPrivateData = new peer.BlockAndPrivateData()
    withPrivateData.setBlock(stored.block)
    response.setBlockAndPrivateData(withPrivateData)
  }
  return response
}

function statusResponse(status: common.StatusMap[keyof common.StatusMap]): peer.DeliverResponse {
  const response = new peer.DeliverResponse()
  response.setStatus(status)
  return response
}

/** One Deliver request: the blocks [start, stop] (waiting for future ones), then a status. */
function deliverOne(
  ctx: PeerContext,
  kind: DeliverKind,
  call: grpc.ServerDuplexStream<common.Envelope, peer.DeliverResponse>,
  envelope: common.Envelope
): Promise<void> {
  const Status = common.Status
  const range = (): { start: number; stop: number; failIfNotReady: boolean } | common.StatusMap[keyof common.StatusMap] => {
    let payload: common.Payload, channelHeader: common.ChannelHeader, creator: Creator
    try {
      payload = common.Payload.deserializeBinary(envelope.getPayload_asU8())
      channelHeader = common.ChannelHeader.deserializeBinary(payload.getHeader()!.getChannelHeader_asU8())
      creator = parseCreator(common.SignatureHeader.deserializeBinary(payload.getHeader()!.getSignatureHeader_asU8()).getCreator_asU8())
    } catch {
      return Status.BAD_REQUEST
    }
    if (channelHeader.getType() !== HeaderTypes.DELIVER_SEEK_INFO) return Status.BAD_REQUEST
    if (channelHeader.getChannelId() !== ctx.channel) return Status.NOT_FOUND
    const reason = creator.mspId !== ctx.mspId ? "unknown MSP" : verifySignature(creator, envelope.getPayload_asU8(), envelope.getSignature_asU8())
    if (reason !== null) {
      ctx.log(`deliver request denied: ${reason}`)
      return Status.FORBIDDEN
    }
    let seek: orderer.SeekInfo
    try {
      seek = orderer.SeekInfo.deserializeBinary(payload.getData_asU8())
    } catch {
      return Status.BAD_REQUEST
    }
    const height = ctx.ledger.height()
    const position = (p: orderer.SeekPosition | undefined, isStart: boolean): number | null => {
      switch (p?.getTypeCase()) {
        case orderer.SeekPosition.TypeCase.OLDEST:
          return 0
        case orderer.SeekPosition.TypeCase.NEWEST:
          return height - 1
        case orderer.SeekPosition.TypeCase.SPECIFIED:
          return p.getSpecified()!.getNumber()
        case orderer.SeekPosition.TypeCase.NEXT_COMMIT:
          return isStart ? height : null
        default:
          return null
      }
    }
    const start = position(seek.getStart(), true)
    const stop = position(seek.getStop(), false)
    if (start === null || stop === null || start > stop) return Status.BAD_REQUEST
    return { start, stop, failIfNotReady: seek.getBehavior() === orderer.SeekInfo.SeekBehavior.FAIL_IF_NOT_READY }
  }

  const r = range()
  if (typeof r === "number") {
    call.write(statusResponse(r))
    return Promise.resolve()
  }
  if (r.failIfNotReady && r.start >= ctx.ledger.height()) {
    call.write(statusResponse(Status.NOT_FOUND))
    return Promise.resolve()
  }
  return new Promise((resolve) => {
    let next = r.start
    const finish = () => {
      unsubscribe()
      resolve()
    }
    const pump = () => {
      while (next <= r.stop && next < ctx.ledger.height()) {
        if (call.cancelled) return finish()
        call.write(deliverResponse(ctx, kind, ctx.ledger.block(next++)!))
      }
      if (next > r.stop) {
        call.write(statusResponse(Status.SUCCESS))
        finish()
      }
    }
    const unsubscribe = ctx.ledger.onBlock(pump)
    call.on("cancelled", finish)
    pump()
  })
}

export function deliverService(ctx: PeerContext): grpc.UntypedServiceImplementation {
  const handler = (kind: DeliverKind): grpc.handleBidiStreamingCall<common.Envelope, peer.DeliverResponse> => (call) => {
    // Requests on one stream are served in order, like Fabric's deliver loop.
    let queue = Promise.resolve()
    call.on("data", (envelope: common.Envelope) => {
      queue = queue.then(() => deliverOne(ctx, kind, call, envelope)).catch((error: unknown) => {
        failStream(call, error)
      })
    })
    call.on("end", () => {
      void queue.then(() => {
        if (!call.cancelled) call.end()
      })
    })
    call.on("error", () => undefined)
  }
  return { deliver: handler("block"), deliverFiltered: handler("filtered"), deliverWithPrivateData: handler("private") }
}
