/**
 * Handlers of the time-stamp API (src/api/timestamp.ts): `POST /v1/timestamp` and `POST /tsa` read and
 * answer DER themselves, and authenticate themselves (Bearer, or the key as the HTTP Basic password;
 * anonymous under TSA_PUBLIC), through the same Admission every request goes through.
 */
import { Effect, Option, Redacted } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { CurrentPrincipal, type Principal } from "../api/auth.ts"
import { toWire, type WireError } from "../api/errors.ts"
import { Accounts } from "../auth/Accounts.ts"
import { Admission, type Admitted, type Refused } from "../auth/Admission.ts"
import { atEdge, databaseUnavailable, isConnectionFailure } from "../db/errors.ts"
import { DatabaseGuard } from "../db/guard.ts"
import { BodyBudgetService, readBody } from "../http/body.ts"
import { errorResponse, wireResponse } from "../http/envelope.ts"
import { TsaConfig } from "./config.ts"
import { TsaDisabled } from "./errors.ts"
import { type StampError, Tsa } from "./Tsa.ts"

/** A TimeStampReq is ~60-120 bytes (a SHA-512 imprint, a nonce, a policy): 16 KiB is generous. */
export const MAX_QUERY_BYTES = 16 * 1024

export const QUERY_TYPE = "application/timestamp-query"
export const REPLY_TYPE = "application/timestamp-reply"

/**
 * `Authorization` as the bearer key Admission reads: Basic credentials become `Bearer <password>` (the
 * user name is ignored: tools need one, anchord does not). undefined: no Authorization at all.
 */
export const credentialOf = (header: string | undefined): string | undefined => {
  if (header === undefined || header.trim() === "") return undefined
  const basic = /^\s*Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header)
  if (basic === null) return header
  const decoded = Buffer.from(basic[1]!, "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  // No password: nothing a key could match (Admission answers 401 INVALID_API_KEY).
  return colon === -1 || colon === decoded.length - 1 ? "Bearer \u0000invalid" : `Bearer ${decoded.slice(colon + 1)}`
}

const withAuthorization = (request: HttpServerRequest.HttpServerRequest, authorization: string) =>
  Object.create(request, { headers: { value: { ...request.headers, authorization } } }) as HttpServerRequest.HttpServerRequest

export const makeServeStamp = Effect.gen(function*() {
  const tsa = yield* Tsa
  const admission = yield* Admission
  const settings = yield* TsaConfig
  const accounts = yield* Accounts
  const budget = yield* BodyBudgetService
  const guard = yield* DatabaseGuard

  /** TSA_PUBLIC: the principal anonymous tokens are recorded under (TSA_PUBLIC_API_KEY's, cached like any key). */
  const publicPrincipal = accounts.authenticate(Option.isSome(settings.publicApiKey) ? Redacted.value(settings.publicApiKey.value) : undefined).pipe(
    Effect.catchTag("AuthRefused", (e) => Effect.die(new Error(`TSA_PUBLIC_API_KEY is not a valid key (${e.reason._tag})`)))
  )

  const admit = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<Admitted, Refused<WireError>> => {
    const credential = credentialOf(request.headers["authorization"])
    if (credential === undefined && settings.public) {
      return Effect.flatMap(admission.byAddress(request), (admitted) =>
        Effect.matchEffect(publicPrincipal, {
          onFailure: (e) => Effect.fail({ error: "errorCode" in e ? toWire(e) : databaseUnavailable(), headers: admitted.headers, principal: undefined }),
          onSuccess: (principal) => Effect.succeed({ principal, headers: admitted.headers })
        }))
    }
    return admission.byKey(credential === undefined ? request : withAuthorization(request, credential))
  }

  const failed = (e: StampError, headers: Record<string, string>) =>
    "errorCode" in e ?
      Effect.succeed(wireResponse(toWire(e), headers))
      : isConnectionFailure(e) ?
      Effect.as(guard.probeSoon, wireResponse(databaseUnavailable(), headers))
      : Effect.die(e)

  const stamp = (request: HttpServerRequest.HttpServerRequest, principal: Principal, headers: Record<string, string>) => {
    const contentType = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()
    if (contentType !== QUERY_TYPE) {
      return Effect.succeed(errorResponse("UNSUPPORTED_MEDIA_TYPE", `Content-Type must be ${QUERY_TYPE} (a DER TimeStampReq)`, headers))
    }
    if (Number(request.headers["content-length"] ?? "0") > MAX_QUERY_BYTES) {
      return Effect.succeed(errorResponse("PAYLOAD_TOO_LARGE", `Request body is larger than ${MAX_QUERY_BYTES} bytes`, headers))
    }
    return Effect.flatMap(readBody(request, MAX_QUERY_BYTES, budget), (read) => {
      switch (read._tag) {
        case "TooLarge":
          return Effect.succeed(errorResponse("PAYLOAD_TOO_LARGE", `Request body is larger than ${MAX_QUERY_BYTES} bytes`, headers))
        case "Overloaded":
          return Effect.succeed(
            errorResponse("SERVICE_UNAVAILABLE", "The node is receiving too much at once; retry shortly", { ...headers, "retry-after": "1" })
          )
        case "Aborted":
          return Effect.succeed(errorResponse("VALIDATION_ERROR", "The request body was not received in full", headers))
        case "Body":
          return Effect.matchEffect(tsa.stamp(principal, read.bytes), {
            onFailure: (e) => failed(e, headers),
            onSuccess: (stamped) =>
              Effect.succeed(HttpServerResponse.uint8Array(stamped.response, {
                contentType: REPLY_TYPE,
                headers: stamped.serial === undefined ? headers : { ...headers, "x-timestamp-serial": String(stamped.serial) }
              }))
          })
      }
    })
  }

  /** The whole POST: admission, then (with the headers earned, quota read as it leaves) the token or the error. */
  return (request: HttpServerRequest.HttpServerRequest) =>
    Effect.matchEffect(admit(request), {
      onFailure: (refused) =>
        refused.principal === undefined
          ? Effect.succeed(wireResponse(refused.error, refused.headers))
          : Effect.map(admission.quotaHeaders(refused.principal), (quota) => wireResponse(refused.error, { ...refused.headers, ...quota })),
      onSuccess: ({ principal, headers }) => {
        if (!tsa.enabled) return Effect.succeed(wireResponse(toWire(new TsaDisabled()), headers))
        return Effect.flatMap(stamp(request, principal!, headers),
          (response) => Effect.map(admission.quotaHeaders(principal!), (quota) => HttpServerResponse.setHeaders(response, quota)))
      }
    })
})

const serveFromContext = (serve: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse>) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, serve)

export const TimestampHttpLayer = HttpApiBuilder.group(Api, "timestamp", (handlers) =>
  Effect.gen(function*() {
    const serve = yield* makeServeStamp
    const tsa = yield* Tsa
    return handlers
      .handle("timestamp", () => serveFromContext(serve))
      .handle("getTimestamp", ({ params }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return { success: true as const, data: yield* tsa.lookup(principal, params.serial) }
        }).pipe(atEdge))
  }))

export const TsaShortHttpLayer = HttpApiBuilder.group(Api, "tsa",
  (handlers) => Effect.map(makeServeStamp, (serve) => handlers.handle("tsa", () => serveFromContext(serve))))
