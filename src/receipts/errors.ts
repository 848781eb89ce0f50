/** Why a record has no COSE receipt to serve (both 404 NOT_FOUND on the wire). */
import { Schema } from "effect"

export class ReceiptsOff extends Schema.TaggedError<ReceiptsOff>()("ReceiptsOff", {}) {
  get errorCode() {
    return "NOT_FOUND" as const
  }
  override get message() {
    return "This node issues no COSE receipts: set RECEIPT_KEY_FILE (docs/proof-format.md)"
  }
}

export class NoReceipt extends Schema.TaggedError<NoReceipt>()("NoReceipt", { recordId: Schema.String, networkId: Schema.optional(Schema.String) }) {
  get errorCode() {
    return "NOT_FOUND" as const
  }
  override get message() {
    const where = this.networkId === undefined ? "" : ` on network ${this.networkId}`
    return `Record ${this.recordId} has no COSE receipt${where}: its batch was anchored without an RFC 9162 tree (before receipts existed, or by a contract or chaincode deployed before them); its proof bundle (/proof) proves it`
  }
}
