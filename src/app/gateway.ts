/**
 * The gateway: the router middleware every request passes through, for what no endpoint owns.
 *
 *  1. An unknown path is 404 NOT_FOUND, a known path with another method 405 METHOD_NOT_ALLOWED
 *     (with Allow), counted against the client address like every request without a key.
 *  2. The ingest fast path, the one documented exception to "every request goes through HttpApi"
 *     (docs/architecture.md): the four record-creating POSTs are served here, at a third less CPU per
 *     request than through the generic handler chain, by the same pieces the endpoints use: Admission
 *     (key, limits, headers), the JSON body framing, the strict parser, RecordCreation (the endpoints'
 *     schemas), `toWire`. Their HttpApi handlers (src/records/http.ts) answer the same bytes; with
 *     INGEST_FAST_PATH=false every request takes them (test/records/fastpath.test.ts compares both).
 *     The time-stamp POSTs (`/v1/timestamp`, `/tsa`) too: their handler is one function
 *     (src/tsa/http.ts, `makeServeStamp`) that the HttpApi endpoints call as well.
 *  3. Whatever escapes an endpoint unhandled (a defect) is 500 INTERNAL_ERROR, logged, without internals;
 *     but a lost database connection, however it arrives, is 503 SERVICE_UNAVAILABLE with Retry-After.
 */
import { Cause, Clock, Context, Effect, Exit } from "effect"
import { HttpRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { Api } from "../api/Api.ts"
import { bodyRejection } from "../api/jsonBody.ts"
import { toWire, type WireError } from "../api/errors.ts"
import { Admission, type Admitted, andThen, type Headers, type Refused } from "../auth/Admission.ts"
import { parseStrictJson, StrictJsonError } from "../canonical/strictJson.ts"
import { AppConfig } from "../config.ts"
import { databaseUnavailable, isConnectionFailure } from "../db/errors.ts"
import { DatabaseGuard } from "../db/guard.ts"
import { finish, makeCors, preflight } from "../http/edge.ts"
import { errorResponse, wireResponse } from "../http/envelope.ts"
import { BodyBudgetService } from "../http/body.ts"
import { type FramingError, readJsonText } from "../http/framing.ts"
import { type Route, routeTable } from "../http/routes.ts"
import { observeHttp } from "../metrics/metrics.ts"
import { type CreateEndpoint, type CreateError, RecordCreation } from "../records/creation.ts"
import { acceptedResponse, pathOf } from "../records/http.ts"
import { makeServeStamp } from "../tsa/http.ts"
import { excerpt } from "../excerpt.ts"

/** A path or method as it may appear in a message: a bounded excerpt (src/excerpt.ts), control characters escaped. */
const printable = (text: string) => JSON.stringify(excerpt(text)).slice(1, -1)

const CREATES: ReadonlySet<string> = new Set<CreateEndpoint>(["anchor", "anchorEncrypted", "anchorHash", "anchorBatch"])

type App = Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, HttpServerRequest.HttpServerRequest>

/** Request methods as metrics label them: the known ones, anything else `other` (a client picks the method). */
const METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])

/** The route label of a path outside /v1: the node's pages, the transparency logs, or `other`. */
const pageRoute = (path: string) =>
  path === "/console" || path.startsWith("/console/")
    ? "/console"
    : path === "/verify" || path.startsWith("/verify/")
    ? "/verify"
    : path.startsWith("/log/")
    ? "/log"
    : "other"

/** An HTTP/1.1 request without `Host` (RFC 9112 3.2: a 400; HTTP/1.0 may leave it out). */
const missingHost = (request: HttpServerRequest.HttpServerRequest) =>
  request.headers.host === undefined && (request.source as { readonly httpVersion?: string }).httpVersion !== "1.0"

const noHost = () => errorResponse("VALIDATION_ERROR", "Malformed HTTP request: no Host header (HTTP/1.1 requires one)", { connection: "close" })

export const GatewayLayer = HttpRouter.middleware(
  Effect.gen(function*() {
    const admission = yield* Admission
    const creation = yield* RecordCreation
    const config = yield* AppConfig
    const budget = yield* BodyBudgetService
    const guard = yield* DatabaseGuard
    const routes = routeTable(Api as never)
    const clock = yield* Clock.Clock
    // The time-stamp POSTs read, authenticate and answer themselves (src/tsa/http.ts): served from here
    // with the fast path, without the router's handler chain around the same function.
    const serveStamp = yield* makeServeStamp

    const withHeaders = (response: HttpServerResponse.HttpServerResponse, headers: Headers) => HttpServerResponse.setHeaders(response, headers)

    /** Counted by address, then `response` with the headers earned (a 429 when over the limit). */
    const byAddress = (request: HttpServerRequest.HttpServerRequest, response: () => HttpServerResponse.HttpServerResponse) =>
      Effect.match(admission.byAddress(request), {
        onFailure: (refused) => wireResponse(refused.error, refused.headers),
        onSuccess: (admitted) => withHeaders(response(), admitted.headers)
      })

    const failure = (cause: Cause.Cause<unknown>) => {
      if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
      const error = cause.reasons.find(Cause.isFailReason)?.error
      if (HttpServerError.isHttpServerError(error) && error.reason._tag === "RouteNotFound") {
        // A path the route table knows but the router cannot match (a malformed %-escape in it): no
        // middleware ran, so it is counted by address here, like every other unknown route.
        return byAddress(error.request, () => errorResponse("NOT_FOUND", "No such route"))
      }
      // A connection lost inside a transaction (the primary dying or failing over under it) reaches here
      // as a defect: the SQL client raises the ROLLBACK that fails on the closed connection with orDie.
      // The database was unreachable, not the request wrong: 503 with Retry-After, as for any outage.
      if (cause.reasons.some((r) => (Cause.isFailReason(r) && isConnectionFailure(r.error)) || (Cause.isDieReason(r) && isConnectionFailure(r.defect)))) {
        return Effect.as(guard.probeSoon, wireResponse(databaseUnavailable()))
      }
      return Effect.as(Effect.logError("request failed", cause), errorResponse("INTERNAL_ERROR", "Internal error"))
    }

    // ---- The ingest fast path (plain functions over Exits: it runs for every record-creating request).

    const createFailed = (e: CreateError | FramingError) =>
      "errorCode" in e && !("success" in e) ?
        wireResponse(toWire(e))
        : "success" in e ?
        wireResponse(e)
        : isConnectionFailure(e) ?
        wireResponse(databaseUnavailable())
        : undefined

    /** A refusal of admission as a response, with the headers earned. */
    const refusedResponse = (refused: Refused<WireError>) =>
      refused.principal === undefined
        ? Exit.succeed(wireResponse(refused.error, refused.headers))
        : Effect.map(admission.quotaHeaders(refused.principal), (quota) => wireResponse(refused.error, { ...refused.headers, ...quota }))

    const admitted = (request: HttpServerRequest.HttpServerRequest, endpoint: CreateEndpoint, { principal, headers }: Admitted) => {
      const finish = (response: HttpServerResponse.HttpServerResponse) =>
        andThen(admission.quotaHeaders(principal!), (quota) => Exit.succeed(withHeaders(response, { ...headers, ...quota })))
      const failed = (e: CreateError | FramingError) => {
        const response = createFailed(e)
        if (response === undefined) return Effect.die(e)
        // The database could not be reached: probe now (the breaker, /v1/health) rather than at the next tick.
        return isConnectionFailure(e) ? Effect.andThen(guard.probeSoon, finish(response)) : finish(response)
      }
      return Effect.matchEffect(readJsonText(request, config.maxBodyBytes, budget), {
        onFailure: failed,
        onSuccess: (bodyText) => {
          let body: unknown
          try {
            body = parseStrictJson(bodyText)
          } catch (error) {
            if (!(error instanceof StrictJsonError)) throw error
            const { syntax, message } = bodyRejection(error)
            return finish(errorResponse(syntax ? "INVALID_JSON" : "VALIDATION_ERROR", message))
          }
          return Effect.matchEffect(
            // Decoded once, by RecordCreation (the endpoints' schemas, after a check by hand for the common case).
            creation.create(endpoint, principal!, { _tag: "Parsed", json: body }, {
              idempotencyKey: request.headers["idempotency-key"],
              bodyText,
              path: pathOf(request.url)
            }),
            { onFailure: failed, onSuccess: (accepted) => finish(acceptedResponse(accepted)) }
          )
        }
      })
    }

    const fast = (request: HttpServerRequest.HttpServerRequest, endpoint: CreateEndpoint) => {
      const admission_ = admission.byKey(request)
      // A cached key in an in-memory window is known at once (an Exit): no effect step for it.
      if (Exit.isExit(admission_) && Exit.isSuccess(admission_)) return admitted(request, endpoint, (admission_ as Exit.Success<Admitted>).value)
      return Effect.matchEffect(admission_, { onFailure: refusedResponse, onSuccess: (a: Admitted) => admitted(request, endpoint, a) })
    }

    const cors = makeCors(config.corsOrigins)
    const leave = finish(cors)

    /** Every /v1 request: its answer, from an endpoint or from here. */
    const answer = (app: App, request: HttpServerRequest.HttpServerRequest, path: string, route: Route | undefined) => {
      // CORS preflights (and any OPTIONS) on /v1, known path or not: see ALLOWED_METHODS.
      if (request.method === "OPTIONS") return byAddress(request, () => preflight(cors, request))
      const method = request.method === "HEAD" ? "GET" : request.method
      if (route === undefined) return byAddress(request, () => errorResponse("NOT_FOUND", `No route ${request.method} ${printable(path)}`))
      const endpoint = route.endpoints.get(method)
      if (endpoint === undefined) {
        return byAddress(request, () =>
          errorResponse("METHOD_NOT_ALLOWED", `Method ${printable(request.method)} is not allowed on ${printable(path)}`, {
            allow: [...route.methods].join(", ")
          }))
      }
      if (config.ingestFastPath && method === "POST" && CREATES.has(endpoint)) {
        return Effect.suspend(() => fast(request, endpoint as CreateEndpoint)).pipe(Effect.catchCause(failure))
      }
      if (config.ingestFastPath && method === "POST" && endpoint === "timestamp") {
        return Effect.suspend(() => serveStamp(request)).pipe(Effect.catchCause(failure))
      }
      return app.pipe(Effect.catchCause(failure))
    }

    /**
     * The response as it leaves, counted in anchord_http_request_duration_seconds (src/metrics/metrics.ts):
     * on the hot path, one clock read at each end and one histogram update, synchronously when the
     * response is already there (an Exit).
     */
    const measured = (
      fiber: { readonly context: Context.Context<never> },
      request: HttpServerRequest.HttpServerRequest,
      started: bigint,
      route: string,
      response: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, HttpServerRequest.HttpServerRequest>
    ) => {
      const observe = (res: HttpServerResponse.HttpServerResponse) => {
        const seconds = Number(clock.currentTimeNanosUnsafe() - started) / 1e9
        observeHttp(fiber.context, METHODS.has(request.method) ? request.method : "other", route, res.status, seconds)
        return res
      }
      if (Exit.isExit(response) && Exit.isSuccess(response)) {
        observe((response as Exit.Success<HttpServerResponse.HttpServerResponse>).value)
        return response
      }
      return Effect.map(response, observe)
    }

    return (app: App) =>
      Effect.withFiber((fiber) => {
        // Before the answer is built: a fast-path answer may be complete (an Exit) once built.
        const started = clock.currentTimeNanosUnsafe()
        const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
        const path = pathOf(request.url)
        if (missingHost(request)) {
          return measured(fiber, request, started, "unmatched", leave(request, byAddress(request, noHost)))
        }
        if (!path.startsWith("/v1/") && path !== "/v1") {
          if (config.ingestFastPath && path === "/tsa" && request.method === "POST") {
            return measured(fiber, request, started, pageRoute(path), Effect.suspend(() => serveStamp(request)).pipe(Effect.catchCause(failure)))
          }
          return measured(fiber, request, started, pageRoute(path), app.pipe(Effect.catchCause(failure)))
        }
        const route = routes.find(path)
        return measured(fiber, request, started, route?.path ?? "unmatched", leave(request, answer(app, request, path, route)))
      })
  }),
  { global: true }
)
