/**
 * The console's areas behind a session (src/api/console.ts says who may call them and how), one group
 * each, with its handlers in src/console/: operators (operators.ts), one account and its keys
 * (accounts.ts), its webhook and deliveries (webhooks.ts), its records (records.ts), its members
 * (members.ts). Every endpoint checks its role itself (403 FORBIDDEN).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { AccountParam, accountPath, behindSession, empty, EnvironmentQuery, Limit } from "./console.ts"
import { AccountList, AccountView, ConsoleWebhookView, CreateAccountBody, CreatedKey, CreatedLink, CreateKeyBody, InvitationList, InvitationView, InviteBody,
  KeyList, KeyView, MemberList, NetworkList, OverviewView, PlanBody, RevealedSecret, SignOutResult, TestEventBody } from "./consoleSchemas.ts"
import { BadRequest, Conflict, Gone, NotFound, Unprocessable } from "./errors.ts"
import { JsonBodyFraming } from "./http.ts"
import { JsonBody } from "./jsonBody.ts"
import { ProofBundle } from "./proofBundle.ts"
import { ChainType, Collection, ok, RecordId, RecordList, RecordStatus, RecordView } from "./recordSchemas.ts"
import { DeliveryList, DeliveryState, DeliveryView, RequestId, RequestList, RequestRedelivery, RotationResult, WebhookSettingsPatch } from "./webhookSchemas.ts"

/** Operators only: every account, creating accounts, plans, suspension, the networks. */
export class ConsoleOperatorsApi extends behindSession(HttpApiGroup.make("consoleOperators").add(
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
  HttpApiEndpoint.get("networks", "/networks", { success: ok(NetworkList) })
)) {}

/** One account (its members; operators: any) and its API keys. */
export class ConsoleAccountsApi extends behindSession(HttpApiGroup.make("consoleAccounts").add(
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
  }).middleware(JsonBodyFraming)
)) {}

/** The account's webhook, its secret and rotation (per environment: each endpoint names it), and deliveries. */
export class ConsoleWebhooksApi extends behindSession(HttpApiGroup.make("consoleWebhooks").add(
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
  HttpApiEndpoint.get("listRequests", accountPath("/requests"), {
    params: AccountParam,
    query: {
      ...EnvironmentQuery,
      limit: Schema.optionalKey(Limit),
      cursor: Schema.optionalKey(Schema.String),
      recordId: Schema.optionalKey(Schema.String),
      eventId: Schema.optionalKey(Schema.String)
    },
    success: ok(RequestList),
    error: [BadRequest, NotFound]
  }),
  HttpApiEndpoint.post("redeliverRequest", accountPath("/requests/:requestId/redeliver"), {
    params: { ...AccountParam, requestId: RequestId },
    query: EnvironmentQuery,
    payload: empty,
    success: ok(RequestRedelivery).annotate({ httpApiStatus: 202 }),
    error: [BadRequest, NotFound]
  }).middleware(JsonBodyFraming)
)) {}

/** The account's records, their proofs and certificates. */
export class ConsoleRecordsApi extends behindSession(HttpApiGroup.make("consoleRecords").add(
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
  })
)) {}

/** The account's members and invitations. */
export class ConsoleMembersApi extends behindSession(HttpApiGroup.make("consoleMembers").add(
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
)) {}
