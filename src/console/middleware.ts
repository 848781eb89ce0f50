/**
 * The console's middleware (declared in src/api/console.ts):
 *
 * - `ConsoleSameOrigin`: a state change (any method but GET/HEAD/OPTIONS) is refused with 403 when the
 *   browser says it comes from another site (`Sec-Fetch-Site`, else an `Origin` that is not this
 *   node's). Sign-in is covered too (login CSRF), where no session exists yet. Every console response is
 *   `Cache-Control: no-store` (sessions, keys, secrets, record data).
 * - `ConsoleSession`: the session cookie resolved to a live session (401 NOT_SIGNED_IN or
 *   SESSION_EXPIRED otherwise, and the cookie is cleared), then, for a state change, the session's CSRF
 *   token required in `X-CSRF-Token` and compared in constant time (403 CSRF_TOKEN_INVALID). A member
 *   of a suspended account changes nothing: every state change but signing out is refused here, in
 *   one place for every endpoint, with 403 ACCOUNT_SUSPENDED (reads work; operators, who manage
 *   suspended accounts, are not members of one).
 *
 * CSRF has three layers here: the cookie is SameSite=Strict (browsers do not send it with requests
 * from other sites), every state change needs the synchronizer token that only the console's page can
 * read (from `GET /console/api/session`), and JSON bodies (application/json) cannot be sent across
 * origins without a CORS preflight, which the console never allows.
 */
import { Effect, Layer, Option, Redacted } from "effect"
import { HttpEffect, HttpServerRequest, HttpServerResponse } from "effect/http"
import { ConsoleSameOrigin, ConsoleSession, CSRF_HEADER, CurrentSession, DEVICE_COOKIE, SESSION_COOKIE } from "../api/console.ts"
import { toWire } from "../api/errors.ts"
import { AppConfig, type AppConfigShape } from "../config.ts"
import { atEdge } from "../db/errors.ts"
import { publicBaseUrl, requestIsHttps } from "../http/publicUrl.ts"
import { ConsoleConfig, type ConsoleConfigShape } from "./config.ts"
import { AccountSuspended, CsrfRejected } from "./errors.ts"
import { ConsoleSessions } from "./Sessions.ts"
import { csrfTokenOf, sameSecret } from "./tokens.ts"

const SAFE = new Set(["GET", "HEAD", "OPTIONS"])
/** State changes a member of a suspended account may still make (they change nothing of the account). */
const ALLOWED_WHEN_SUSPENDED = new Set(["signOut", "signOutEverywhere"])
export const isStateChange = (method: string) => !SAFE.has(method.toUpperCase())

/** Whether the session cookie gets the Secure flag for this request. */
export const secureCookieFor = (request: HttpServerRequest.HttpServerRequest, config: AppConfigShape, console_: ConsoleConfigShape) =>
  console_.secureCookie !== "auto"
    ? console_.secureCookie
    : Option.match(config.baseUrl, { onNone: () => false, onSome: (u) => u.startsWith("https:") }) || requestIsHttps(request, config)

const cookieOptions = (secure: boolean) => ({ httpOnly: true, sameSite: "strict" as const, path: "/console", secure })

/** Sets the session cookie on the response (a browser-session cookie: the server decides when it ends). */
export const setSessionCookie = (token: string, secure: boolean) =>
  HttpEffect.appendPreResponseHandler((_request, response) =>
    Effect.succeed(HttpServerResponse.setCookieUnsafe(response, SESSION_COOKIE, token, cookieOptions(secure)))
  )

/** How long a browser stays known to the sign-in throttle after its last password sign-in (the throttle's own limit decides). */
const DEVICE_COOKIE_SECONDS = 30 * 86_400

/**
 * Sets the device cookie: a random token the sign-in throttle knows this browser by (never a credential:
 * it signs no one in, and only spares a browser that signed in before the email's slow-down).
 */
export const setDeviceCookie = (token: string, secure: boolean) =>
  HttpEffect.appendPreResponseHandler((_request, response) =>
    Effect.succeed(HttpServerResponse.setCookieUnsafe(response, DEVICE_COOKIE, token, { ...cookieOptions(secure), maxAge: `${DEVICE_COOKIE_SECONDS} seconds` }))
  )

/** Clears the session cookie. */
export const clearSessionCookie = (secure: boolean) =>
  HttpEffect.appendPreResponseHandler((_request, response) =>
    Effect.succeed(HttpServerResponse.expireCookieUnsafe(response, SESSION_COOKIE, cookieOptions(secure)))
  )

const noStore = HttpEffect.appendPreResponseHandler((_request, response) => Effect.succeed(HttpServerResponse.setHeader(response, "cache-control", "no-store")))

/** Whether the request says it was sent by a page of another site. */
const crossSite = (request: HttpServerRequest.HttpServerRequest, config: AppConfigShape): boolean => {
  const site = request.headers["sec-fetch-site"]
  if (site !== undefined) return site !== "same-origin" && site !== "none"
  const origin = request.headers["origin"]
  if (origin === undefined) return false // not a browser's cross-site request (browsers send Origin with them)
  const own = new Set([new URL(publicBaseUrl(request, config)).origin])
  const host = request.headers.host
  if (host !== undefined) own.add(`${requestIsHttps(request, config) ? "https" : "http"}://${host}`)
  return !own.has(origin)
}

export const ConsoleSameOriginLayer = Layer.effect(
  ConsoleSameOrigin,
  Effect.map(AppConfig, (config) =>
    ConsoleSameOrigin.of((httpEffect) =>
      Effect.gen(function*() {
        yield* noStore
        const request = yield* HttpServerRequest.HttpServerRequest
        if (isStateChange(request.method) && crossSite(request, config)) {
          return yield* Effect.fail(toWire(new CsrfRejected({ reason: "cross-site" })))
        }
        return yield* httpEffect
      })
    ))
)

export const ConsoleSessionLayer = Layer.effect(
  ConsoleSession,
  Effect.gen(function*() {
    const sessions = yield* ConsoleSessions
    const config = yield* AppConfig
    const consoleConfig = yield* ConsoleConfig
    return ConsoleSession.of({
      cookie: (httpEffect, { credential, endpoint }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const token = Redacted.value(credential)
          const session = yield* sessions.resolve(token).pipe(
            // Whatever the reason, a cookie that signs no one in is cleared.
            Effect.tapError(() => clearSessionCookie(secureCookieFor(request, config, consoleConfig))),
            atEdge
          )
          const csrfToken = csrfTokenOf(token)
          if (isStateChange(request.method)) {
            const sent = request.headers[CSRF_HEADER]
            if (sent === undefined || sent === "") return yield* Effect.fail(toWire(new CsrfRejected({ reason: "missing" })))
            if (!sameSecret(sent, csrfToken)) return yield* Effect.fail(toWire(new CsrfRejected({ reason: "mismatch" })))
            if (session.accountSuspended && !ALLOWED_WHEN_SUSPENDED.has(endpoint.identifier)) {
              return yield* Effect.fail(toWire(new AccountSuspended({ accountId: session.user.accountId ?? "" })))
            }
          }
          return yield* Effect.provideService(httpEffect, CurrentSession, {
            user: session.user,
            token,
            csrfToken,
            expiresAt: session.expiresAt,
            idleExpiresAt: session.idleExpiresAt,
            readOnly: session.accountSuspended
          })
        })
    })
  })
)
