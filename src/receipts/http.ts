/**
 * Handlers of the receipts API (src/api/receipts.ts): a record's COSE Receipt (RFC 9942), built from its
 * anchor's RFC 9162 index and inclusion path (./ReceiptStore.ts) and signed on request, and the receipt key.
 */
import { Effect, Layer, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/auth.ts"
import { toWire } from "../api/errors.ts"
import { hashBytes, toHex } from "../anchoring/rfc9162.ts"
import { atEdge } from "../db/errors.ts"
import { NotAnchored } from "../records/errors.ts"
import { RecordStore, requireFound } from "../records/RecordStore.ts"
import { receiptAnchor } from "./anchor.ts"
import { NoReceipt, ReceiptsOff } from "./errors.ts"
import { coseKeySet, ReceiptKey } from "./key.ts"
import { encodeReceipt, parseReceipt, protectedHeader, receiptRoot, sigStructure } from "./receipt.ts"
import { ReceiptStore } from "./ReceiptStore.ts"

export const ReceiptsHttpLayer = HttpApiBuilder.group(Api, "receipts", (handlers) =>
  Effect.gen(function*() {
    const store = yield* RecordStore
    const receipts = yield* ReceiptStore
    const { signer } = yield* ReceiptKey
    return handlers.handle("recordReceipt", ({ params, query }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const row = yield* requireFound(yield* store.get(principal, params.recordId, false), params.recordId)
        if (row.status !== "ANCHORED") return yield* new NotAnchored({ recordId: row.id, status: row.status })
        if (Option.isNone(signer)) return yield* new ReceiptsOff()
        const found = yield* receipts.find(row.id, query.networkId)
        if (Option.isNone(found)) return yield* new NoReceipt({ recordId: row.id, networkId: query.networkId })
        const a = found.value
        const key = signer.value
        const prot = protectedHeader(key.kid)
        const root = hashBytes(a.logRoot)
        const inclusion = { treeSize: a.leafCount, leafIndex: a.logIndex, path: yield* receipts.inclusionPath(a) }
        const receipt = encodeReceipt(prot, inclusion, receiptAnchor(a), key.sign(sigStructure(prot, root)))
        // The stored proof must give the stored root: a receipt that would not verify is never served.
        const computed = receiptRoot(parseReceipt(receipt), hashBytes(row.hash))
        if (computed === undefined || toHex(computed) !== toHex(root)) {
          return yield* Effect.die(new Error(`stored RFC 9162 proof of record ${row.id} does not give its batch's root`))
        }
        return receipt
      }).pipe(atEdge))
  })).pipe(Layer.provide(ReceiptStore.layer))

export const ReceiptKeysHttpLayer = HttpApiBuilder.group(Api, "receiptKeys", (handlers) =>
  Effect.gen(function*() {
    const { signer } = yield* ReceiptKey
    const off = Effect.fail(toWire(new ReceiptsOff()))
    return handlers
      .handle("scittKeys", () => Option.isNone(signer) ? off : Effect.succeed(coseKeySet(signer.value)))
      .handle("receiptKeyPem", () => Option.isNone(signer) ? off : Effect.succeed(signer.value.publicKeyPem))
  }))
