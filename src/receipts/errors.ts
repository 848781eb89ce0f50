/** Why a record has no COSE receipt to serve (both 404 NOT_FOUND on the wire). */
import { Schema } from "effect"
import { DomainErrorClass } from "../api/domainError.ts"

export class ReceiptsOff
  extends DomainErrorClass<ReceiptsOff>()("ReceiptsOff", {}, "NOT_FOUND",
    () => "This node issues no COSE receipts: set RECEIPT_KEY_FILE (docs/proof-format.md)")
{}

export class NoReceipt
  extends DomainErrorClass<NoReceipt>()("NoReceipt", { recordId: Schema.String, networkId: Schema.optional(Schema.String) }, "NOT_FOUND", (error) => {
    const where = error.networkId === undefined ? "" : ` on network ${error.networkId}`
    return `Record ${error.recordId} has no COSE receipt${where}: its batch was anchored without an RFC 9162 tree (before receipts existed, or by a contract or chaincode deployed before them); its proof bundle (/proof) proves it`
  })
{}
