/** Certificates (SPEC 9): a PDF of an anchored record, with a QR code to the public verify page. Handlers: src/certificates/http.ts. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { ApiKeyAuth } from "./auth.ts"
import { BadRequest, Conflict, Gone, NotFound, Unprocessable } from "./errors.ts"
import { DatabaseBound } from "./http.ts"
import { Hash64, RecordId } from "./recordSchemas.ts"

/** A PDF document (binary). */
export const Pdf = Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array({ contentType: "application/pdf" })).annotate({
  description: "A PDF certificate: the record hash, each anchor (network, transaction, block, batch, Merkle root), the anchoring " +
    "time, the certificate id CERT-<unix seconds>-<first 8 hash characters> and a QR code opening the public verify page with the " +
    "record's proof bundle (in the link's fragment)."
})

export class CertificatesApi extends HttpApiGroup.make("certificates")
  .add(
    HttpApiEndpoint.get("recordCertificate", "/records/:recordId/certificate", {
      params: { recordId: RecordId },
      success: Pdf,
      error: [BadRequest, NotFound, Gone, Conflict, Unprocessable]
    }).annotate(OpenApi.Summary, "A record's certificate (PDF)").annotate(
      OpenApi.Description,
      "The record's certificate (application/pdf); 409 NOT_ANCHORED before it is anchored, 422 CERTIFICATE_TOO_LARGE when its proof does not fit a QR code."
    ),
    HttpApiEndpoint.get("hashCertificate", "/certificate/:hash", {
      params: { hash: Hash64 },
      success: Pdf,
      error: [BadRequest, NotFound, Conflict, Unprocessable]
    }).annotate(OpenApi.Summary, "The certificate of a hash's newest anchored record (PDF)").annotate(
      OpenApi.Description,
      "The certificate of this account's newest anchored record with this hash (the seed service's lookup); 409 NOT_ANCHORED when its records with this hash are not anchored yet."
    )
  )
  .middleware(DatabaseBound)
  .middleware(ApiKeyAuth)
  .prefix("/v1")
  .annotate(OpenApi.Description, "PDF certificates of anchored records, with a QR code to the public verify page")
{}
