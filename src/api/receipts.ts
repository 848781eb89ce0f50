/**
 * COSE Receipts (RFC 9942) of anchored records and the receipt key (docs/proof-format.md, "COSE
 * Receipts"). Handlers: src/receipts/http.ts.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { ApiKeyAuth } from "./auth.ts"
import { BadRequest, Conflict, Gone, NotFound } from "./errors.ts"
import { DatabaseBound } from "./http.ts"
import { RecordId } from "./recordSchemas.ts"

export const CoseReceipt = Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array({ contentType: "application/cose" })).annotate({
  description: "A COSE_Sign1 (CBOR tag 18), RFC 9942 receipt with vds RFC9162_SHA256: protected {alg: ES256, kid, vds: 1}, " +
    "the inclusion proof [tree-size, leaf-index, path] in vdp (396), detached payload (the RFC 9162 root of the record's " +
    "batch), and where that root is anchored in the unprotected parameter \"anchord-anchor\" (docs/proof-format.md)."
})

export const CoseKeySet = Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array({ contentType: "application/cbor" })).annotate({
  description: "COSE_KeySet (RFC 9052 §7): the node's receipt key, kid = SHA-256 of its SPKI DER"
})

export const PemKey = Schema.String.pipe(HttpApiSchema.asText({ contentType: "application/x-pem-file" })).annotate({
  description: "The node's receipt public key, SPKI PEM"
})

export class ReceiptsApi extends HttpApiGroup.make("receipts")
  .add(
    HttpApiEndpoint.get("recordReceipt", "/records/:recordId/receipt", {
      params: { recordId: RecordId },
      query: {
        networkId: Schema.optionalKey(Schema.String.annotate({
          description: "The network of the anchor to prove (a hybrid record has two); default: the first with a receipt"
        }))
      },
      success: CoseReceipt,
      error: [BadRequest, NotFound, Gone, Conflict]
    })
      .annotate(OpenApi.Summary, "Get a record's COSE Receipt (RFC 9942)")
      .annotate(OpenApi.Description, "application/cose: the record's inclusion in its batch's RFC 9162 tree, signed by the node's receipt key " +
        "(/.well-known/scitt-keys), with the transaction that anchored the tree root. 409 NOT_ANCHORED before the record is " +
        "anchored; 404 NOT_FOUND when its batch has no RFC 9162 tree (anchored before receipts existed, or by a contract or chaincode deployed before them) or the node has no receipt key.")
  )
  .middleware(DatabaseBound)
  .middleware(ApiKeyAuth)
  .prefix("/v1")
  .annotate(OpenApi.Description, "COSE Receipts (RFC 9942) of anchored records")
{}

export class ReceiptKeysApi extends HttpApiGroup.make("receiptKeys")
  .add(
    HttpApiEndpoint.get("scittKeys", "/.well-known/scitt-keys", { success: CoseKeySet, error: [NotFound] })
      .annotate(OpenApi.Summary, "The receipt key as a COSE_KeySet (SCITT SCRAPI)"),
    HttpApiEndpoint.get("receiptKeyPem", "/.well-known/anchord-receipt-key.pem", { success: PemKey, error: [NotFound] })
      .annotate(OpenApi.Summary, "The receipt key, SPKI PEM")
  )
  .annotate(OpenApi.Description, "The public key that signs COSE Receipts (no authentication)")
{}
