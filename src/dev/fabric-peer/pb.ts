/**
 * google-protobuf well-known types used on the wire. They come from the same google-protobuf copy
 * as @hyperledger/fabric-protos 0.3.x, which ships no type declarations for them: typed here.
 */
import anyModule from "google-protobuf/google/protobuf/any_pb.js"
import timestampModule from "google-protobuf/google/protobuf/timestamp_pb.js"

export interface TimestampMessage {
  getSeconds(): number
  getNanos(): number
  toDate(): Date
  serializeBinary(): Uint8Array
}
interface TimestampClass {
  new(): TimestampMessage
  fromDate(date: Date): TimestampMessage
}
export interface AnyMessage {
  setTypeUrl(value: string): void
  setValue(value: Uint8Array): void
}
interface AnyClass {
  new(): AnyMessage
}

export const Timestamp = (timestampModule as { Timestamp: TimestampClass }).Timestamp
export const Any = (anyModule as { Any: AnyClass }).Any
