/**
 * RFC 3161 time stamps (SPEC 11, docs/timestamping.md). Handlers: src/tsa/http.ts.
 *
 * The POSTs read their body themselves (a DER TimeStampReq, `application/timestamp-query`, at most
 * 16 KiB): HttpApi's binary payloads answer a wrong Content-Type with a plain-text 415 and read the
 * body without a bound. They authenticate themselves too, because signing tools send the API key as the
 * HTTP Basic password (a URL with credentials): Bearer or Basic, counted like any request.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { ApiKeyAuth } from "./auth.ts"
import { BadRequest, NotFound, PayloadTooLarge, ServiceUnavailableSchema, TooManyRequestsSchema, Unauthorized, UnsupportedMediaType } from "./errors.ts"
import { DatabaseBound } from "./http.ts"
import { ProofBundle } from "./proofBundle.ts"
import { DateTimeString, ok, RecordId } from "./recordSchemas.ts"

export const TimeStampResp = Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array({ contentType: "application/timestamp-reply" })).annotate({
  description: "A DER TimeStampResp (RFC 3161 §2.4.2): status granted with the token, or rejection with a PKIFailureInfo " +
    "(badAlg: SHA-1 or an unknown hash; badDataFormat: not a TimeStampReq or a wrong imprint length; unacceptedPolicy; " +
    "unacceptedExtension). Refusals are HTTP 200 as RFC 3161 §3.4 expects."
})

export const Serial = Schema.String.check(Schema.isPattern(/^[1-9][0-9]{0,17}$/)).annotate({ description: "A token's serial number, in decimal" })

export const TimestampView = Schema.Struct({
  serial: Serial,
  recordId: RecordId,
  hashAlgorithm: Schema.Literals(["sha256", "sha384", "sha512"]),
  messageImprint: Schema.String.annotate({ description: "The imprint the client sent, hex" }),
  recordHash: Schema.String.annotate({
    description: "The hash anchored for this token: the imprint itself (SHA-256), or SHA-256 of the token's TSTInfo (SHA-384/512)"
  }),
  genTime: DateTimeString,
  status: Schema.String.annotate({ description: "The record's status: QUEUED, BATCHING, ANCHORED, FAILED" }),
  token: Schema.String.annotate({ description: "The TimeStampToken (DER ContentInfo), base64" }),
  proof: Schema.NullOr(ProofBundle)
}).annotate({ identifier: "Timestamp" })

const stampDescription = "Body: a DER TimeStampReq (Content-Type: application/timestamp-query), e.g. from `openssl ts -query`. " +
  "The API key as `Authorization: Bearer <key>` or as the HTTP Basic password (any user name). Each token is a hash-only record " +
  "of the account, committed before the answer and anchored like any record; counted against the quota. 415 for another " +
  "Content-Type, 413 past 16 KiB, 404 when the node has no TSA (docs/timestamping.md)."

const stampErrors = [BadRequest, Unauthorized, NotFound, PayloadTooLarge, UnsupportedMediaType, TooManyRequestsSchema, ServiceUnavailableSchema]

export class TimestampApi extends HttpApiGroup.make("timestamp")
  .add(
    HttpApiEndpoint.post("timestamp", "/timestamp", { success: TimeStampResp, error: stampErrors })
      .annotate(OpenApi.Summary, "Time-stamp a hash (RFC 3161)")
      .annotate(OpenApi.Description, stampDescription),
    HttpApiEndpoint.get("getTimestamp", "/timestamp/:serial", {
      params: { serial: Serial },
      success: ok(TimestampView),
      error: [BadRequest, NotFound]
    })
      .middleware(DatabaseBound).middleware(ApiKeyAuth)
      .annotate(OpenApi.Summary, "A time-stamp token and, once anchored, its proof bundle")
  )
  .prefix("/v1")
  .annotate(OpenApi.Description, "RFC 3161 time-stamp authority: every token anchored (SPEC 11)")
{}

/** `POST /tsa`: the same, at a short URL for tools that take only a URL (signtool /tr, jarsigner -tsa). */
export class TsaShortApi extends HttpApiGroup.make("tsa")
  .add(
    HttpApiEndpoint.post("tsa", "/tsa", { success: TimeStampResp, error: stampErrors })
      .annotate(OpenApi.Summary, "Time-stamp a hash (RFC 3161), short URL")
      .annotate(OpenApi.Description, `The same as POST /v1/timestamp. ${stampDescription}`)
  )
  .annotate(OpenApi.Description, "POST /v1/timestamp at a short URL")
{}
