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
 */
import { Context, Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, HttpApiSecurity, OpenApi } from "effect/http-api"
import { AddressLimit } from "./auth.ts"
import { AcceptInvitationBody, AccountList, AccountView, ConsoleConfigView, ConsoleWebhookView, CreateAccountBody, CreatedKey, CreatedLink, CreateKeyBody,
  InvitationList, InvitationView, InviteBody, KeyList, KeyView, LinkView, MemberList, NetworkList, OverviewView, PlanBody, RevealedSecret, SessionView,
  SignInBody, SignOutResult, TestEventBody, TokenBody } from "./consoleSchemas.ts"
import { BadRequest, Conflict, Forbidden, Gone, NotFound, ServiceUnavailableSchema, TooManyRequestsSchema, Unauthorized, Unprocessable } from "./errors.ts"
import { DatabaseBound, JsonBodyFraming, RequestDeadline } from "./http.ts"
import { JsonBody } from "./jsonBody.ts"
import { ProofBundle } from "./proofBundle.ts"
import { Environment, ok, RecordId, RecordList, RecordStatus, RecordView, ChainType, Collection } from "./recordSchemas.ts"
import { DeliveryList, DeliveryState, DeliveryView, EmptyBody, RotationResult, WebhookSettingsPatch } from "./webhookSchemas.ts"

/** The session cookie's name. */
export const SESSION_COOKIE = "anchord_session"
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

const Limit = Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 100 }))
const AccountParam = { accountId: Schema.String.check(Schema.isMaxLength(64)) }
const EnvironmentQuery = { environment: Environment }
const empty = JsonBody(EmptyBody)

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

const accountPath = <P extends "" | `/${string}`>(path: P) => `/accounts/:accountId${path}` as const

/** Everything behind a session. */
export class ConsoleApi extends HttpApiGroup.make("console")
  .add(
    // The session
    HttpApiEndpoint.get("session", "/session", { success: ok(SessionView) }),
    HttpApiEndpoint.delete("signOut", "/session", { success: ok(SignOutResult) })
      .annotate(OpenApi.Description, "Ends this session; clears the cookie."),
    HttpApiEndpoint.post("signOutEverywhere", "/session/everywhere", { payload: empty, success: ok(SignOutResult), error: [BadRequest] })
      .middleware(JsonBodyFraming)
      .annotate(OpenApi.Description, "Ends every session of this user, this one included."),
    HttpApiEndpoint.get("config", "/config", { success: ok(ConsoleConfigView) }),
    // Operators
    HttpApiEndpoint.get("listAccounts", "/accounts", { success: ok(AccountList) }),
    HttpApiEndpoint.post("createAccount", "/accounts", { payload: JsonBody(CreateAccountBody), success: ok(AccountView), error: [BadRequest] })
      .middleware(JsonBodyFraming),
    HttpApiEndpoint.post("activateAccount", accountPath("/activate"), { params: AccountParam, payload: empty, success: ok(AccountView),
      error: [BadRequest, NotFound] })
      .middleware(JsonBodyFraming),
    HttpApiEndpoint.post("suspendAccount", accountPath("/suspend"), { params: AccountParam, payload: empty, success: ok(AccountView),
      error: [BadRequest, NotFound] })
      .middleware(JsonBodyFraming),
    HttpApiEndpoint.post("changePlan", accountPath("/plan"), { params: AccountParam, payload: JsonBody(PlanBody), success: ok(AccountView),
      error: [BadRequest, NotFound] })
      .middleware(JsonBodyFraming),
    HttpApiEndpoint.get("networks", "/networks", { success: ok(NetworkList) }),
    // One account (its members; operators: any)
    HttpApiEndpoint.get("account", accountPath(""), { params: AccountParam, success: ok(AccountView), error: [NotFound] }),
    HttpApiEndpoint.get("overview", accountPath("/overview"), { params: AccountParam, query: EnvironmentQuery, success: ok(OverviewView),
      error: [BadRequest, NotFound] }),
    HttpApiEndpoint.get("listKeys", accountPath("/keys"), { params: AccountParam, success: ok(KeyList), error: [NotFound] }),
    HttpApiEndpoint.post("createKey", accountPath("/keys"), {
      params: AccountParam,
      payload: JsonBody(CreateKeyBody),
      success: ok(CreatedKey),
      error: [BadRequest, NotFound, Conflict]
    }).middleware(JsonBodyFraming),
    HttpApiEndpoint.post("revokeKey", accountPath("/keys/:keyId/revoke"), {
      params: { ...AccountParam, keyId: Schema.String.check(Schema.isMaxLength(64)) },
      payload: empty,
      success: ok(KeyView),
      error: [BadRequest, NotFound]
    }).middleware(JsonBodyFraming),
    // The webhook, its secret and rotation are per environment (migration 0013): each endpoint names it.
    HttpApiEndpoint.get("getWebhook", accountPath("/webhook"), { params: AccountParam, query: EnvironmentQuery, success: ok(ConsoleWebhookView),
      error: [BadRequest, NotFound] }),
    HttpApiEndpoint.put("putWebhook", accountPath("/webhook"), {
      params: AccountParam,
      // The environment's settings; the URL checked by the egress policy (src/webhooks/urlPolicy.ts; live: https only).
      query: EnvironmentQuery,
      payload: JsonBody(WebhookSettingsPatch),
      success: ok(ConsoleWebhookView),
      error: [BadRequest, NotFound]
    }).middleware(JsonBodyFraming),
    HttpApiEndpoint.post("revealSecret", accountPath("/webhook/secret/reveal"), { params: AccountParam, query: EnvironmentQuery, payload: empty,
      success: ok(RevealedSecret), error: [BadRequest, NotFound] })
      .middleware(JsonBodyFraming),
    HttpApiEndpoint.post("rotateSecret", accountPath("/webhook/secret/rotate"), { params: AccountParam, query: EnvironmentQuery, payload: empty,
      success: ok(RotationResult), error: [BadRequest, NotFound] })
      .middleware(JsonBodyFraming),
    HttpApiEndpoint.post("confirmSecret", accountPath("/webhook/secret/confirm"), { params: AccountParam, query: EnvironmentQuery, payload: empty,
      success: ok(ConsoleWebhookView), error: [BadRequest, NotFound] })
      .middleware(JsonBodyFraming),
    HttpApiEndpoint.post("testWebhook", accountPath("/webhook/test"), {
      params: AccountParam,
      payload: JsonBody(TestEventBody),
      success: ok(DeliveryView).annotate({ httpApiStatus: 202 }),
      error: [BadRequest, NotFound]
    }).middleware(JsonBodyFraming).annotate(OpenApi.Description,
      "A webhook.test event to the webhook URL of the body's environment, delivered like every event."),
    HttpApiEndpoint.get("listDeliveries", accountPath("/deliveries"), {
      params: AccountParam,
      query: {
        ...EnvironmentQuery,
        limit: Schema.optionalKey(Limit),
        cursor: Schema.optionalKey(Schema.String),
        status: Schema.optionalKey(DeliveryState),
        recordId: Schema.optionalKey(Schema.String),
        eventId: Schema.optionalKey(Schema.String)
      },
      success: ok(DeliveryList),
      error: [BadRequest, NotFound]
    }),
    HttpApiEndpoint.get("getDelivery", accountPath("/deliveries/:deliveryId"), {
      params: { ...AccountParam, deliveryId: Schema.String.check(Schema.isMaxLength(64)) },
      query: EnvironmentQuery,
      success: ok(DeliveryView),
      error: [BadRequest, NotFound]
    }),
    HttpApiEndpoint.post("redeliver", accountPath("/deliveries/:deliveryId/redeliver"), {
      params: { ...AccountParam, deliveryId: Schema.String.check(Schema.isMaxLength(64)) },
      query: EnvironmentQuery,
      payload: empty,
      success: ok(DeliveryView).annotate({ httpApiStatus: 202 }),
      error: [BadRequest, NotFound]
    }).middleware(JsonBodyFraming),
    HttpApiEndpoint.get("listRecords", accountPath("/records"), {
      params: AccountParam,
      query: {
        ...EnvironmentQuery,
        limit: Schema.optionalKey(Limit),
        cursor: Schema.optionalKey(Schema.String),
        status: Schema.optionalKey(RecordStatus),
        chain: Schema.optionalKey(ChainType),
        collection: Schema.optionalKey(Collection),
        /** Created on or after this day (YYYY-MM-DD, UTC). */
        from: Schema.optionalKey(Schema.String.check(Schema.isPattern(/^\d{4}-\d{2}-\d{2}$/))),
        /** Created on or before this day (YYYY-MM-DD, UTC). */
        to: Schema.optionalKey(Schema.String.check(Schema.isPattern(/^\d{4}-\d{2}-\d{2}$/))),
        /** A record id (24 hex) or a hash (64 hex). */
        q: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(100)))
      },
      success: ok(RecordList),
      error: [BadRequest, NotFound]
    }),
    HttpApiEndpoint.get("getRecord", accountPath("/records/:recordId"), {
      params: { ...AccountParam, recordId: RecordId },
      query: EnvironmentQuery,
      success: ok(RecordView),
      error: [BadRequest, NotFound, Gone]
    }),
    HttpApiEndpoint.get("recordProof", accountPath("/records/:recordId/proof"), {
      params: { ...AccountParam, recordId: RecordId },
      query: EnvironmentQuery,
      success: ok(ProofBundle),
      error: [BadRequest, NotFound, Gone, Conflict]
    }),
    HttpApiEndpoint.get("recordCertificate", accountPath("/records/:recordId/certificate"), {
      params: { ...AccountParam, recordId: RecordId },
      query: EnvironmentQuery,
      success: Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array({ contentType: "application/pdf" })),
      error: [BadRequest, NotFound, Gone, Conflict, Unprocessable]
    }),
    HttpApiEndpoint.get("listMembers", accountPath("/members"), { params: AccountParam, success: ok(MemberList), error: [NotFound] }),
    HttpApiEndpoint.post("inviteMember", accountPath("/members/invite"), {
      params: AccountParam,
      payload: JsonBody(InviteBody),
      success: ok(CreatedLink),
      error: [BadRequest, NotFound, Conflict]
    }).middleware(JsonBodyFraming),
    HttpApiEndpoint.get("listInvitations", accountPath("/invitations"), { params: AccountParam, success: ok(InvitationList), error: [NotFound] })
      .annotate(OpenApi.Description, "The account's invitations that can still be accepted (its admins, operators)."),
    HttpApiEndpoint.post("revokeInvitation", accountPath("/invitations/:invitationId/revoke"), {
      params: { ...AccountParam, invitationId: Schema.String.check(Schema.isMaxLength(64)) },
      payload: empty,
      success: ok(InvitationView),
      error: [BadRequest, NotFound]
    }).middleware(JsonBodyFraming),
    HttpApiEndpoint.post("removeMember", accountPath("/members/:userId/remove"), {
      params: { ...AccountParam, userId: Schema.String.check(Schema.isMaxLength(64)) },
      payload: empty,
      success: ok(SignOutResult),
      error: [BadRequest, NotFound]
    }).middleware(JsonBodyFraming)
  )
  .middleware(ConsoleSession)
  .middleware(ConsoleSameOrigin)
  // Outermost: the session's own lookup is bounded too, and refused at once while the database is down.
  .middleware(DatabaseBound)
  .prefix("/console/api")
  .annotate(OpenApi.Exclude, true)
{}
