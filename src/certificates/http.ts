/** Handlers of the certificates API (src/api/certificates.ts): PDFs of the caller's anchored records. */
import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/auth.ts"
import { AppConfig } from "../config.ts"
import { atEdge } from "../db/errors.ts"
import { publicBaseUrl } from "../http/publicUrl.ts"
import { type Certificate, certificateHeaders, Certificates } from "./Certificates.ts"

export const pdfResponse = (c: Certificate) => HttpServerResponse.uint8Array(c.pdf, { contentType: "application/pdf", headers: certificateHeaders(c) })

export const CertificatesHttpLayer = HttpApiBuilder.group(Api, "certificates", (handlers) =>
  Effect.gen(function*() {
    const certificates = yield* Certificates
    const config = yield* AppConfig
    const verifyUrl = Effect.map(HttpServerRequest.HttpServerRequest, (request) => `${publicBaseUrl(request, config)}/verify`)
    return handlers
      .handle("recordCertificate", ({ params }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return pdfResponse(yield* certificates.forRecord(principal, params.recordId, yield* verifyUrl))
        }).pipe(atEdge))
      .handle("hashCertificate", ({ params }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return pdfResponse(yield* certificates.forHash(principal, params.hash, yield* verifyUrl))
        }).pipe(atEdge))
  }))
