/**
 * The console's API (SPEC 9), under `/console/api`, on the console's own origin: what the page at
 * `/console` calls. Definitions only; handlers and the middleware's implementation: src/console/.
 *
 * - Who: a session cookie (`anchord_session`, HttpOnly, SameSite=Strict, Path=/console, Secure behind
 *   HTTPS), never an API key. `ConsoleSession` resolves it and provides the session; every request that
 *   changes something must also carry the session's CSRF token in `X-CSRF-Token` (403
 *   CSRF_TOKEN_INVALID otherwise). `ConsoleSameOrigin` refuses state changes sent from another site.
 * - Roles: operators (every account), account `admin`s (change their account), `viewer`s (read; no
 *   secret): checked by the handlers (403 FORBIDDEN).
 * - Not in `/v1/openapi.json` (OpenApi.Exclude): this is the console's private interface, changed with
 *   the page; integrators use `/v1` with API keys.
 * - Groups: signing in (`consoleAuth`) and the session (`consoleSession`) here; the areas behind a
 *   session (operators, accounts and keys, webhooks and deliveries, records, members) in
 *   ./consoleAreas.ts, each with its handlers' file in src/console/.
 */
import { Context, Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSecurity, OpenApi } from "effect/http-api"
import { AddressLimit } from "./auth.ts"
import { AcceptInvitationBody, ConsoleConfigView, LinkView, SessionView, SignInBody, SignOutResult, TokenBody } from "./consoleSchemas.ts"
import { BadRequest, Conflict, Forbidden, ServiceUnavailableSchema, TooManyRequestsSchema, Unauthorized } from "./errors.ts"
import { DatabaseBound, JsonBodyFraming, RequestDeadline } from "./http.ts"
import { JsonBody } from "./jsonBody.ts"
import { Environment, ok } from "./recordSchemas.ts"
import { EmptyBody } from "./webhookSchemas.ts"

/** The session cookie's name. */
export const SESSION_COOKIE = "anchord_session"
/** The browser's device token: the sign-in throttle knows a browser the user signed in from (src/console/SignInThrottle.ts). */
export const DEVICE_COOKIE = "anchord_device"
/** The header that carries a session's CSRF token on every state change. */
export const CSRF_HEADER = "x-csrf-token"

/** The signed-in user, as the session gives them. */
export interface ConsoleUser {
  readonly id: string
  readonly email: string
  readonly operator: boolean
  readonly accountId: string | null
  readonly role: "admin" | "viewer" | null
  readonly createdAt: Date
}

export interface CurrentSessionShape {
  readonly user: ConsoleUser
  /** The cookie's token: for sign-out; never logged, never sent back. */
  readonly token: string
  readonly csrfToken: string
  readonly expiresAt: Date
  readonly idleExpiresAt: Date
  /** The member's account is suspended: state changes are refused (403 ACCOUNT_SUSPENDED). */
  readonly readOnly: boolean
}

export class CurrentSession extends Context.Service<CurrentSession, CurrentSessionShape>()("anchord/console/CurrentSession") {}

/** The session cookie, resolved to a live session; CSRF token checked on every method but GET and HEAD. */
export class ConsoleSession extends HttpApiMiddleware.Service<ConsoleSession, { provides: CurrentSession; requires: never }>()(
  "anchord/console/ConsoleSession",
  {
    security: { cookie: HttpApiSecurity.apiKey({ in: "cookie", key: SESSION_COOKIE }) },
    error: [Unauthorized, Forbidden, ServiceUnavailableSchema]
  }
) {}

/** State changes only from the console's own origin (Origin / Sec-Fetch-Site), signed in or not. */
export class ConsoleSameOrigin extends HttpApiMiddleware.Service<ConsoleSameOrigin>()("anchord/console/ConsoleSameOrigin", {
  error: Forbidden
}) {}

export const Limit = Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 100 }))
export const AccountParam = { accountId: Schema.String.check(Schema.isMaxLength(64)) }
export const EnvironmentQuery = { environment: Environment }
export const empty = JsonBody(EmptyBody)

/**
 * Password hashing has its own bound (src/console/ConsoleAuth.ts: a few at a time, a bounded wait, 503
 * "too many sign-ins at once"); the database steps around it keep REQUEST_DEADLINE_MS each. The whole
 * request may take longer than that deadline, never because of the database.
 */
const HASHING_DEADLINE_MS = 40_000

/** Signing in: no session yet. Limited by client address, and sign-in by its own throttle. */
export class ConsoleAuthApi extends HttpApiGroup.make("consoleAuth")
  .add(
    HttpApiEndpoint.post("signIn", "/session", {
      payload: JsonBody(SignInBody),
      success: ok(SessionView),
      error: [BadRequest, Unauthorized, TooManyRequestsSchema]
    }).middleware(JsonBodyFraming).annotate(OpenApi.Description, "Email and password; sets the session cookie.")
      .annotate(RequestDeadline, HASHING_DEADLINE_MS),
    HttpApiEndpoint.post("redeemLink", "/links/redeem", {
      payload: JsonBody(TokenBody),
      success: ok(SessionView),
      error: [BadRequest]
    }).middleware(JsonBodyFraming).annotate(OpenApi.Description, "A one-time sign-in link's token; sets the session cookie."),
    HttpApiEndpoint.post("inspectInvitation", "/invitations/inspect", {
      payload: JsonBody(TokenBody),
      success: ok(LinkView),
      error: [BadRequest]
    }).middleware(JsonBodyFraming).annotate(OpenApi.Description, "What an invitation is for (it stays unused)."),
    HttpApiEndpoint.post("acceptInvitation", "/invitations/accept", {
      payload: JsonBody(AcceptInvitationBody),
      success: ok(SessionView),
      error: [BadRequest, Conflict]
    }).middleware(JsonBodyFraming).annotate(OpenApi.Description, "Choose a password: makes the user and signs them in.")
      .annotate(RequestDeadline, HASHING_DEADLINE_MS)
  )
  .middleware(AddressLimit)
  .middleware(ConsoleSameOrigin)
  // Outermost: the session's own lookup is bounded too, and refused at once while the database is down.
  .middleware(DatabaseBound)
  .prefix("/console/api")
  .annotate(OpenApi.Exclude, true)
{}

export const accountPath = <P extends "" | `/${string}`>(path: P) => `/accounts/:accountId${path}` as const

/** A console group behind a session: the session, same origin, bounded, under `/console/api`, not in `/v1/openapi.json`. */
export const behindSession = <Id extends string, Endpoints extends HttpApiEndpoint.Constraint>(group: HttpApiGroup.HttpApiGroup<Id, Endpoints>) =>
  group
    .middleware(ConsoleSession)
    .middleware(ConsoleSameOrigin)
    // Outermost: the session's own lookup is bounded too, and refused at once while the database is down.
    .middleware(DatabaseBound)
    .prefix("/console/api")
    .annotate(OpenApi.Exclude, true)

/** The session: who is signed in, signing out, and the console's settings. */
export class ConsoleSessionApi extends behindSession(HttpApiGroup.make("consoleSession").add(
  HttpApiEndpoint.get("session", "/session", { success: ok(SessionView) }),
  HttpApiEndpoint.delete("signOut", "/session", { success: ok(SignOutResult) })
    .annotate(OpenApi.Description, "Ends this session; clears the cookie."),
  HttpApiEndpoint.post("signOutEverywhere", "/session/everywhere", { payload: empty, success: ok(SignOutResult), error: [BadRequest] })
    .middleware(JsonBodyFraming)
    .annotate(OpenApi.Description, "Ends every session of this user, this one included."),
  HttpApiEndpoint.get("config", "/config", { success: ok(ConsoleConfigView) })
)) {}
