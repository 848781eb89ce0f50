/**
 * The gateway: one global middleware every request passes through, before the API handlers.
 *
 *  1. unknown route → 404 NOT_FOUND, known path with another method → 405 METHOD_NOT_ALLOWED;
 *  2. authentication of the bearer key (401s) and the per-second limits (429), by key or by address;
 *  3. request bodies: 415 unless JSON, 413 past the limit, strict JSON parsing (400);
 *  4. whatever escapes the handlers: schema failures → 400, database outage → 503, defects → 500
 *     without internals;
 *  5. the X-RateLimit-* / X-Quota-* headers on every /v1 response, errors included.
 */
import { Cause, Context, Effect, Exit, Option } from "effect"
import { HttpRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApi, HttpApiError } from "effect/http-api"
import { Accounts, type Principal } from "../auth/Accounts.ts"
import { RateLimits, type LimitState } from "../auth/RateLimits.ts"
import { UsageCache } from "../auth/UsageCache.ts"
import { currentMonth, nextMonthStart } from "../auth/plans.ts"
import { AppConfig } from "../config.ts"
import { isConnectionFailure } from "../db/Database.ts"
import { parseStrictJson, StrictJsonError } from "../canonical/strictJson.ts"
import { CREATE_ENDPOINTS, type CreateEndpoint, RecordCreation } from "../records/creation.ts"
import { Api } from "../api/Api.ts"
import { type ErrorCode, errorBody, statusOfWire } from "../api/errors.ts"
import { readBody } from "../http/body.ts"
import { stateOf } from "../http/requestState.ts"
import { describeIssue } from "../http/schemaMessages.ts"

interface RouteEntry {
  readonly pattern: RegExp
  readonly methods: Set<string>
  /** methods whose endpoint takes a JSON body (POST /v1/webhooks/secret/rotate, say, takes none) */
  readonly withBody: Set<string>
  /** the path itself when it has no parameters (looked up directly, before the patterns) */
  readonly literal?: string
  /** POST here creates records: served by RecordCreation directly (src/records/creation.ts) */
  creates?: CreateEndpoint
}

const utf8 = new TextDecoder("utf-8", { fatal: true })

const PUBLIC_PATHS = new Set(["/v1/health", "/v1/openapi.json"])

/** Route patterns of the API definition (plus the generated OpenAPI document). */
const routeTable = (): ReadonlyArray<RouteEntry> => {
  const byPath = new Map<string, RouteEntry>()
  const add = (path: string, method: string, hasPayload: boolean, name?: string) => {
    let entry = byPath.get(path)
    if (!entry) {
      const source = path.split("/").map((seg) => seg.startsWith(":") ? "[^/]+" : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("/")
      entry = {
        pattern: new RegExp(`^${source}/?$`),
        methods: new Set(),
        withBody: new Set(),
        ...(path.includes(":") ? {} : { literal: path })
      }
      byPath.set(path, entry)
    }
    entry.methods.add(method)
    if (hasPayload) entry.withBody.add(method)
    if (method === "POST" && name !== undefined && CREATE_ENDPOINTS.has(name)) entry.creates = name as CreateEndpoint
  }
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => add(endpoint.path, endpoint.method, endpoint.payload.size > 0, endpoint.identifier)
  })
  add("/v1/openapi.json", "GET", false)
  // Literal paths first, so /v1/anchor/hash never matches a parameter route.
  return [...byPath.entries()].sort(([a], [b]) => Number(a.includes(":")) - Number(b.includes(":"))).map(([, e]) => e)
}

export const jsonError = (status: number, code: ErrorCode, message: string, headers?: Record<string, string>) =>
  HttpServerResponse.jsonUnsafe(errorBody(code, message), { status, headers })

const describeAuthFailure = (reason: string): [ErrorCode, string] => {
  switch (reason) {
    case "missing":
      return ["MISSING_API_KEY", "Missing API key: send Authorization: Bearer <API_KEY>"]
    case "malformed":
      return ["INVALID_API_KEY", "Invalid API key: expected dcp_live_ or dcp_test_ followed by 32 letters and digits"]
    case "unknown":
      return ["INVALID_API_KEY", "Invalid API key: no such key"]
    case "revoked":
      return ["EXPIRED_API_KEY", "API key has been revoked"]
    case "expired":
      return ["EXPIRED_API_KEY", "API key has expired"]
    default:
      return ["INVALID_API_KEY", "Invalid API key: its account is not active"]
  }
}

const bearerToken = (header: string | undefined): string | undefined => {
  if (header === undefined) return undefined
  if (/^\s*(Bearer\s*)?$/i.test(header)) return undefined
  const match = /^\s*Bearer\s+(.*?)\s*$/i.exec(header)
  return match ? match[1] : "\u0000invalid"
}

type App = Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, HttpServerRequest.HttpServerRequest>

/**
 * `f` of the effect's value: at once when the effect is already a success (services answer cache hits
 * with `Effect.succeed`, which is an Exit), else after it runs.
 */
const andThen = <A, E, R, B, E2, R2>(effect: Effect.Effect<A, E, R>, f: (a: A) => Effect.Effect<B, E2, R2>): Effect.Effect<B, E | E2, R | R2> =>
  Exit.isExit(effect) && Exit.isSuccess(effect) ? f((effect as Exit.Success<A, E>).value) : Effect.flatMap(effect, f)

export const GatewayLayer = HttpRouter.middleware(
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const limits = yield* RateLimits
    const usage = yield* UsageCache
    const config = yield* AppConfig
    const creation = yield* RecordCreation
    const routes = routeTable()
    const literalRoutes = new Map(routes.flatMap((r) => r.literal === undefined ? [] : [[r.literal, r], [`${r.literal}/`, r]]))

    const clientAddress = (request: HttpServerRequest.HttpServerRequest): string => {
      if (config.trustProxy) {
        const forwarded = request.headers["x-forwarded-for"]
        if (forwarded) return forwarded.split(",")[0].trim()
      }
      return Option.getOrElse(request.remoteAddress, () => "unknown")
    }

    const quotaHeaders = (principal: Principal): Effect.Effect<Record<string, string>> =>
      andThen(usage.get(principal.accountId), (used) => {
        const reset = currentMonth().resetSeconds
        return Exit.succeed(
          principal.monthlyQuota === null
            ? { "x-quota-limit": "unlimited", "x-quota-remaining": "unlimited", "x-quota-reset": reset }
            : {
              "x-quota-limit": String(principal.monthlyQuota),
              "x-quota-remaining": String(Math.max(0, principal.monthlyQuota - used)),
              "x-quota-reset": reset
            }
        )
      })

    const rateHeaders = (s: LimitState): Record<string, string> => ({
      "x-ratelimit-limit": String(s.limit),
      "x-ratelimit-remaining": String(s.remaining),
      "x-ratelimit-reset": String(s.reset)
    })

    const rateLimited = (s: LimitState, extra: Record<string, string> = {}) =>
      jsonError(429, "RATE_LIMIT_EXCEEDED", `Rate limit exceeded: ${s.limit} requests per second`, {
        ...rateHeaders(s),
        ...extra,
        "retry-after": String(s.retryAfter)
      })

    const tooLarge = () => jsonError(413, "PAYLOAD_TOO_LARGE", `Request body is larger than ${config.maxBodyBytes} bytes`)

    /** Reads and strictly parses a JSON body; a response when it is refused. */
    const readJsonBody = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<HttpServerResponse.HttpServerResponse | undefined> => {
      const contentType = (request.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase()
      if (contentType !== "application/json") {
        return Effect.succeed(jsonError(415, "UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json"))
      }
      const declared = Number(request.headers["content-length"] ?? "0")
      if (declared > config.maxBodyBytes) return Effect.succeed(tooLarge())
      return Effect.map(readBody(request, config.maxBodyBytes), (read) => {
        if (read._tag === "TooLarge") return tooLarge()
        if (read._tag === "Aborted") return jsonError(400, "INVALID_JSON", "The request body was not received in full")
        // Fatal decoding: invalid UTF-8 is refused, never silently replaced (that would change the hash).
        let text: string
        try {
          text = utf8.decode(read.bytes)
        } catch {
          return jsonError(400, "INVALID_JSON", "Request body is not valid UTF-8")
        }
        if (text.trim() === "") return jsonError(400, "INVALID_JSON", "Request body is empty: send a JSON object")
        try {
          const state = stateOf(request)
          state.body = parseStrictJson(text)
          state.bodyText = text
          return undefined
        } catch (error) {
          if (error instanceof StrictJsonError) {
            return error.reason === "syntax"
              ? jsonError(400, "INVALID_JSON", `Request body is not valid JSON: ${error.message}`)
              : jsonError(400, "VALIDATION_ERROR", `Request body rejected: ${error.message}`)
          }
          throw error
        }
      })
    }

    const handleFailure = (cause: Cause.Cause<unknown>) =>
      Effect.gen(function*() {
        const failure = cause.reasons.find(Cause.isFailReason)?.error
        const defect = cause.reasons.find(Cause.isDieReason)?.defect
        const error = failure ?? defect
        if (HttpServerError.isHttpServerError(error) && error.reason._tag === "RouteNotFound") {
          return jsonError(404, "NOT_FOUND", "No such route")
        }
        if (HttpApiError.HttpApiSchemaError.is(error)) {
          return jsonError(400, "VALIDATION_ERROR", `Invalid request ${error.kind.toLowerCase()}: ${describeIssue(error.cause.issue)}`)
        }
        if (isConnectionFailure(error)) {
          yield* Effect.logError("database unavailable", { error: String((error as Error).message) })
          return jsonError(503, "SERVICE_UNAVAILABLE", "The database is unavailable; retry later", { "retry-after": "5" })
        }
        if (Cause.hasInterruptsOnly(cause)) return yield* Effect.failCause(cause)
        yield* Effect.logError("request failed", cause)
        return jsonError(500, "INTERNAL_ERROR", "Internal error")
      })

    // Plain functions and Effect.flatMap here, not Effect.gen: this runs on every request, and the
    // generator form of the same steps measured ~50 µs more CPU per request under load.
    const limitHit = (key: string, limit: number): Effect.Effect<LimitState> =>
      limits.hitNow !== undefined ? Exit.succeed(limits.hitNow(key, limit)) : limits.hit(key, limit)

    /** One /v1 request on its way through the gateway: the rate-limit headers it has earned so far. */
    class Exchange {
      headers: Record<string, string> | undefined = undefined
      principal: Principal | undefined = undefined
      readonly method: string
      readonly route: RouteEntry | undefined
      readonly request: HttpServerRequest.HttpServerRequest
      readonly path: string
      constructor(request: HttpServerRequest.HttpServerRequest, path: string) {
        this.request = request
        this.path = path
        this.method = request.method === "HEAD" ? "GET" : request.method
        this.route = literalRoutes.get(path) ?? routes.find((r) => r.pattern.test(path))
      }

      /** Adds the X-RateLimit-* headers, and for a key the X-Quota-* headers as usage stands now. */
      finish(response: HttpServerResponse.HttpServerResponse): Effect.Effect<HttpServerResponse.HttpServerResponse> {
        const headers = this.headers
        const principal = this.principal
        if (principal === undefined) return Exit.succeed(headers === undefined ? response : HttpServerResponse.setHeaders(response, headers))
        return andThen(quotaHeaders(principal), (quota) => Exit.succeed(HttpServerResponse.setHeaders(response, { ...headers, ...quota })))
      }

      /** Requests that cannot be tied to a valid key are limited by address. */
      byAddress(): Effect.Effect<LimitState> {
        return andThen(limitHit(`ip:${clientAddress(this.request)}`, config.anonymousRatePerSecond), (state) => {
          this.headers = rateHeaders(state)
          return Exit.succeed(state)
        })
      }

      /** By address, then `next` unless refused. */
      limitedByAddress<R>(next: () => Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, R>) {
        return andThen(this.byAddress(), (state) => state.allowed ? next() : Exit.succeed(rateLimited(state)))
      }

      run(app: App): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, HttpServerRequest.HttpServerRequest> {
        const { route, method, path, request } = this
        if (route === undefined || !route.methods.has(method)) {
          return this.limitedByAddress(() =>
            this.finish(
              route === undefined
                ? jsonError(404, "NOT_FOUND", `No route ${request.method} ${path}`)
                : jsonError(405, "METHOD_NOT_ALLOWED", `Method ${request.method} is not allowed on ${path}`, {
                  allow: [...route.methods].join(", ")
                })
            )
          )
        }
        if (PUBLIC_PATHS.has(path)) return this.limitedByAddress(() => this.serve(app, route))
        return andThen(accounts.authenticate(bearerToken(request.headers["authorization"])), (auth) => {
          if (auth._tag === "Rejected") {
            const [code, message] = describeAuthFailure(auth.reason)
            return this.limitedByAddress(() => this.finish(jsonError(401, code, message)))
          }
          const principal = auth.principal
          return andThen(limitHit(`key:${principal.accountId}`, principal.perSecond), (state) => {
            this.headers = rateHeaders(state)
            this.principal = principal
            if (!state.allowed) return andThen(quotaHeaders(principal), (quota) => Exit.succeed(rateLimited(state, { ...this.headers, ...quota })))
            stateOf(request).principal = principal
            return this.serve(app, route)
          })
        })
      }

      serve(app: App, route: RouteEntry) {
        if (!route.withBody.has(this.method)) return this.handle(app, route)
        return Effect.flatMap(readJsonBody(this.request), (refused) => refused === undefined ? this.handle(app, route) : this.finish(refused))
      }

      handle(app: App, route: RouteEntry) {
        const creates = this.method === "POST" ? route.creates : undefined
        const request = this.request
        const response = creates === undefined ? app.pipe(Effect.catchCause(handleFailure)) : creation.create(
          creates,
          request,
          this.principal!,
          stateOf(request).body
        ).pipe(
          Effect.catch((e) => Effect.succeed(jsonError(statusOfWire(e), e.errorCode as ErrorCode, e.error))),
          Effect.catchCause(handleFailure)
        )
        return Effect.flatMap(response, (r) => {
          // The only 429 a handler answers is QUOTA_EXCEEDED: retry when the month turns.
          if (r.status === 429 && r.headers["retry-after"] === undefined) {
            const wait = Math.ceil((nextMonthStart(new Date()).getTime() - Date.now()) / 1000)
            r = HttpServerResponse.setHeader(r, "retry-after", String(Math.max(1, wait)))
          }
          return this.finish(r)
        })
      }

      /** A failure anywhere (the database behind authentication, say) still answers with the headers. */
      recover(cause: Cause.Cause<unknown>) {
        return Effect.flatMap(handleFailure(cause), (response) =>
          this.headers === undefined
            ? Effect.flatMap(this.byAddress(), () => this.finish(response))
            : this.finish(response))
      }
    }

    return (app: App) =>
      Effect.withFiber((fiber) => {
        const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
        const query = request.url.indexOf("?")
        const path = query === -1 ? request.url : request.url.slice(0, query)
        if (!path.startsWith("/v1/") && path !== "/v1") return app.pipe(Effect.catchCause(handleFailure))
        const exchange = new Exchange(request, path)
        // Suspended, so that an exception thrown by any step is a defect answered by `recover`.
        return Effect.suspend(() => exchange.run(app)).pipe(
          Effect.catchCause((cause) => exchange.recover(cause)),
          Effect.catchCause(handleFailure)
        )
      })
  }),
  { global: true }
)
