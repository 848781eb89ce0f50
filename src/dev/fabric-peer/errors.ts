/**
 * gRPC errors shaped like Fabric's gateway: status code, message, and `grpc-status-details-bin`
 * carrying google.rpc.Status{details: [Any(gateway.ErrorDetail{address, msp_id, message})]},
 * which @hyperledger/fabric-gateway decodes into `err.details`.
 */
import * as grpc from "@grpc/grpc-js"
import { gateway, google } from "@hyperledger/fabric-protos"
import { Any } from "./pb.ts"

export interface Detail {
  readonly address: string
  readonly mspId: string
  readonly message: string
}

/** A gRPC error with `grpc-status-details-bin` = google.rpc.Status{details: [Any(gateway.ErrorDetail)]}. */
export function rpcError(code: grpc.status, message: string, details: Detail[] = []): Partial<grpc.StatusObject> {
  const metadata = new grpc.Metadata()
  if (details.length > 0) {
    const status = new google.rpc.Status()
    status.setCode(code)
    status.setMessage(message)
    status.setDetailsList(
      details.map((detail) => {
        const errorDetail = new gateway.ErrorDetail()
        errorDetail.setAddress(detail.address)
        errorDetail.setMspId(detail.mspId)
        errorDetail.setMessage(detail.message)
        const any = new Any()
        any.setTypeUrl("type.googleapis.com/gateway.ErrorDetail")
        any.setValue(errorDetail.serializeBinary())
        return any as never
      })
    )
    metadata.set("grpc-status-details-bin", Buffer.from(status.serializeBinary()))
  }
  return { code, details: message, metadata }
}

export class RpcFailure extends Error {
  readonly status: Partial<grpc.StatusObject>
  constructor(status: Partial<grpc.StatusObject>) {
    super(status.details)
    this.status = status
  }
}

/** Throws the RpcFailure the service wrappers turn into the call's error status. */
export function fail(code: grpc.status, message: string, details: Detail[] = []): never {
  throw new RpcFailure(rpcError(code, message, details))
}

export function unary<Req, Res>(handler: (request: Req, call: grpc.ServerUnaryCall<Req, Res>) => Promise<Res>): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    handler(call.request, call).then(
      (response) => callback(null, response),
      (error: unknown) => callback(error instanceof RpcFailure ? error.status : rpcError(grpc.status.INTERNAL, String(error)))
    )
  }
}

export const failStream = (call: grpc.ServerWritableStream<unknown, unknown> | grpc.ServerDuplexStream<unknown, unknown>, error: unknown) =>
  call.emit("error", error instanceof RpcFailure ? error.status : rpcError(grpc.status.INTERNAL, String(error)))
