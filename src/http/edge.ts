/**
 * What every /v1 response gets on its way out, whoever made it (an endpoint, the gateway's 404/405,
 * the ingest fast path, an error): CORS (SPEC 3 "Cross-origin use"), `Cache-Control`, and compression
 * when the client accepts it. Applied by the gateway (src/app/gateway.ts). No domain imports.
 *
 * Per-request cost is kept near zero for the common ingest request, which sends neither `Origin` nor
 * `Accept-Encoding`: one header lookup each, and one header set (`Cache-Control`).
 */
import * as Zlib from "node:zlib"
import { Effect, Exit } from "effect"
import { HttpBody, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { bodyBroken } from "./body.ts"

/** The headers a browser page may read (SPEC 3: the rate, quota, retry and idempotency headers). */
export const EXPOSED_HEADERS = [
  "X-RateLimit-Limit",
  "X-RateLimit-Remaining",
  "X-RateLimit-Reset",
  "X-Quota-Limit",
  "X-Quota-Remaining",
  "X-Quota-Reset",
  "Retry-After",
  "Idempotent-Replayed",
  "Allow",
  "ETag"
].join(", ")

/** What the API reads from a request besides the CORS-safelisted headers. */
export const ALLOWED_REQUEST_HEADERS = "Authorization, Content-Type, Idempotency-Key, X-Encryption-Key, If-None-Match"

/**
 * Every method of the API, for every /v1 path: a preflight for a method or path that does not exist
 * is let through, so the page then reads the real 404/405 error body instead of an opaque CORS failure.
 */
export const ALLOWED_METHODS = "GET, HEAD, POST, PUT, PATCH, DELETE"

/** How long a browser may cache a preflight's answer (seconds; browsers cap it at 2 h or less). */
const PREFLIGHT_MAX_AGE = "600"

/** Bodies smaller than this are sent as they are (the saving would not pay for the work). */
export const COMPRESS_MIN_BYTES = 1024

export interface Cors {
  /** The `Access-Control-Allow-Origin` value for a request's `Origin`, or undefined when it is not allowed. */
  readonly allow: (origin: string | undefined) => string | undefined
  readonly enabled: boolean
  /** Whether responses vary by `Origin` (a list of origins; not for none or "*"). */
  readonly varies: boolean
}

export const makeCors = (origins: ReadonlyArray<string>): Cors => {
  const any = origins.includes("*")
  const listed = new Set(origins)
  return {
    enabled: origins.length > 0,
    varies: !any && origins.length > 0,
    allow: (origin) => origin === undefined ? undefined : any ? "*" : listed.has(origin) ? origin : undefined
  }
}

/** The answer to a CORS preflight (or any OPTIONS) on a /v1 path: 204, with the CORS grant when the origin is allowed. */
export const preflight = (cors: Cors, request: HttpServerRequest.HttpServerRequest): HttpServerResponse.HttpServerResponse => {
  const allowed = cors.allow(request.headers["origin"])
  const headers: Record<string, string> = { allow: ALLOWED_METHODS, "cache-control": "no-store" }
  if (cors.varies) headers["vary"] = "Origin"
  if (allowed !== undefined) {
    headers["access-control-allow-origin"] = allowed
    headers["access-control-allow-methods"] = ALLOWED_METHODS
    headers["access-control-allow-headers"] = ALLOWED_REQUEST_HEADERS
    headers["access-control-max-age"] = PREFLIGHT_MAX_AGE
  }
  return HttpServerResponse.empty({ status: 204, headers })
}

const br = { params: { [Zlib.constants.BROTLI_PARAM_QUALITY]: 4 } }

/** The encoding to use for `accept-encoding`, if any: br, else gzip (q=0 refuses one). */
const chooseEncoding = (accept: string): "br" | "gzip" | undefined => {
  let gzip = false
  let brotli = false
  for (const part of accept.split(",")) {
    const [name, ...params] = part.trim().toLowerCase().split(";")
    const refused = params.some((p) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(p))
    if (refused) continue
    if (name === "br") brotli = true
    else if (name === "gzip" || name === "x-gzip" || name === "*") gzip = true
  }
  return brotli ? "br" : gzip ? "gzip" : undefined
}

const compress = (encoding: "br" | "gzip", bytes: Uint8Array) =>
  Effect.callback<Buffer>((resume) => {
    const done = (error: Error | null, out: Buffer) => resume(error === null ? Effect.succeed(out) : Effect.die(error))
    if (encoding === "br") Zlib.brotliCompress(bytes, br, done)
    else Zlib.gzip(bytes, done)
  })

/** `f` at once when `effect` is already a success (an Exit: the fast path's answers often are), else after it. */
const mapNow = <A, B, E, R>(effect: Effect.Effect<A, E, R>, f: (a: A) => Effect.Effect<B, E, R>): Effect.Effect<B, E, R> =>
  Exit.isExit(effect) && Exit.isSuccess(effect) ? f((effect as Exit.Success<A, E>).value) : Effect.flatMap(effect, f)

/**
 * The response as it leaves: the CORS grant (or `Vary: Origin`), `Cache-Control: no-store` unless the
 * response chose its own (every /v1 answer may carry record data, keys' results or secrets), and the
 * body compressed when it is over ~1 KB and the request accepts br or gzip.
 */
export const finish = (cors: Cors) => {
  const exit = Exit.succeed
  return <E, R>(
    request: HttpServerRequest.HttpServerRequest,
    response: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> =>
    mapNow(response, (res) => {
      const headers: Record<string, string> = {}
      if (res.headers["cache-control"] === undefined) headers["cache-control"] = "no-store"
      // The connection's byte stream is broken past this request: no other may follow on it.
      if (bodyBroken(request)) headers["connection"] = "close"
      if (cors.enabled) {
        const allowed = cors.allow(request.headers["origin"])
        if (cors.varies) headers["vary"] = res.headers["vary"] === undefined ? "Origin" : `${res.headers["vary"]}, Origin`
        if (allowed !== undefined) {
          headers["access-control-allow-origin"] = allowed
          headers["access-control-expose-headers"] = EXPOSED_HEADERS
        }
      }
      // Nothing to add (a 202 of the fast path without Origin): the response as it is, no copy.
      let added = false
      for (const _ in headers) {
        added = true
        break
      }
      const out = added ? HttpServerResponse.setHeaders(res, headers) : res
      const accept = request.headers["accept-encoding"]
      if (accept === undefined) return exit(out)
      const body = out.body
      if (body._tag !== "Uint8Array" || body.contentLength < COMPRESS_MIN_BYTES || out.headers["content-encoding"] !== undefined) {
        return exit(out)
      }
      const encoding = chooseEncoding(accept)
      if (encoding === undefined) return exit(out)
      return Effect.map(compress(encoding, body.body), (bytes) =>
        HttpServerResponse.setBody(
          HttpServerResponse.setHeaders(out, {
            // A strong ETag names the bytes sent: the compressed ones are another representation.
            ...(out.headers["etag"]?.startsWith("\"") ? { etag: `W/${out.headers["etag"]}` } : {}),
            "content-encoding": encoding,
            vary: out.headers["vary"] === undefined ? "Accept-Encoding" : `${out.headers["vary"]}, Accept-Encoding`
          }),
          HttpBody.uint8Array(bytes, body.contentType)
        ))
    })
}
