/**
 * Handlers of the console's API (src/api/console.ts). They read and change through the capabilities'
 * own services (Accounts, WebhookSettingsStore, DeliveryLog, WebhookTests, RecordStore, Certificates,
 * NetworkHealth); what is the console's is who may do what:
 *
 * - operators: every account, the accounts list, creating accounts, plans, suspension, networks;
 * - an account's `admin`: everything of their account, secrets included, and inviting members;
 * - an account's `viewer`: reads their account, and sees no secret (webhook secret, member links);
 *   a viewer asking to change something gets 403 FORBIDDEN saying so.
 *
 * Another account is "not found" to a member (its existence is not confirmed). Domain errors go to the
 * wire through `atEdge`, like every handler's.
 */
import { Clock, Effect, Option } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { loadAnchors, proofBundle } from "../anchoring/anchorViews.ts"
import { NetworkHealth } from "../anchoring/NetworkHealth.ts"
import { Api } from "../api/Api.ts"
import { CurrentSession, type CurrentSessionShape } from "../api/console.ts"
import type { Environment } from "../api/recordSchemas.ts"
import { clientAddressOf } from "../auth/Admission.ts"
import { type Account, Accounts, type ApiKeyInfo } from "../auth/Accounts.ts"
import { ENTERPRISE_DEFAULT_PER_SECOND, monthStart, nextMonthStart, Plans } from "../auth/plans.ts"
import { certificateHeaders, Certificates } from "../certificates/Certificates.ts"
import { AppConfig } from "../config.ts"
import { atEdge } from "../db/errors.ts"
import { EvmNetworks } from "../evm/config.ts"
import { FabricNetworks } from "../fabric/config.ts"
import { cursorCodec, pageOf } from "../http/pagination.ts"
import { publicBaseUrl } from "../http/publicUrl.ts"
import { InvalidRecord, NotAnchored } from "../records/errors.ts"
import { toView } from "../records/model.ts"
import { RecordStore, requireFound } from "../records/RecordStore.ts"
import { DeliveryNotFound, InvalidDeliveryQuery } from "../webhooks/errors.ts"
import { DeliveryLog } from "../webhooks/DeliveryLog.ts"
import type { DeliveryRow, WebhookSettingsRow } from "../webhooks/rows.ts"
import { WebhookTests } from "../webhooks/TestEvents.ts"
import { WebhookEgress } from "../webhooks/urlPolicy.ts"
import { deliveryView, settingsView, updateSettings } from "../webhooks/views.ts"
import { WebhookSettingsStore } from "../webhooks/WebhookSettingsStore.ts"
import { type SignedIn, ConsoleAuth } from "./ConsoleAuth.ts"
import { ConsoleConfig } from "./config.ts"
import { ConsoleStats } from "./ConsoleStats.ts"
import { leaderLockKey } from "../anchoring/Leadership.ts"
import { AccountInactive, ConsoleNotFound, InvalidConsoleInput, NotAllowed } from "./errors.ts"
import { ConsoleLinks, type LinkRow, linkPath } from "./Links.ts"
import { clearSessionCookie, secureCookieFor, setSessionCookie } from "./middleware.ts"
import { ConsoleSessions } from "./Sessions.ts"
import { csrfTokenOf } from "./tokens.ts"
import { type ConsoleUserInfo, ConsoleUsers } from "./Users.ts"

const iso = (d: Date | null | undefined) => d === null || d === undefined ? null : d.toISOString()

export const accountView = (a: Account) => ({
  id: a.id,
  name: a.name,
  email: a.email,
  plan: a.plan,
  status: a.status,
  ratePerSecond: a.ratePerSecond,
  defaultChain: a.defaultChain,
  createdAt: a.createdAt.toISOString(),
  activatedAt: iso(a.activatedAt)
})

const keyView = (k: ApiKeyInfo, now: number) => ({
  id: k.id,
  name: k.name,
  environment: k.environment,
  display: k.display,
  status: k.revokedAt !== null ? "revoked" as const : k.expiresAt !== null && k.expiresAt.getTime() <= now ? "expired" as const : "active" as const,
  createdAt: k.createdAt.toISOString(),
  lastUsedAt: iso(k.lastUsedAt),
  expiresAt: iso(k.expiresAt),
  revokedAt: iso(k.revokedAt)
})

/** The secret's first characters only: enough to tell two apart, nothing to sign with. */
const secretPreview = (secret: string) => `${secret.slice(0, 10)}…`

/**
 * A webhook URL as a viewer sees it: its origin only. Receivers' URLs often carry a credential in their
 * path or query (a token, a signed path), and viewers see no secret.
 */
export const redactUrl = <U extends string | null>(url: U): U => {
  if (url === null) return url
  try {
    const u = new URL(url)
    return (u.pathname === "/" && u.search === "" && u.username === "" ? u.origin : `${u.origin}/…`) as U
  } catch {
    return "…" as U
  }
}

const webhookView = (row: WebhookSettingsRow, hideSecrets: boolean) => {
  const { secret, ...view } = settingsView(row)
  return { ...view, url: hideSecrets ? redactUrl(view.url) : view.url, secretPreview: hideSecrets ? "whsec_…" : secretPreview(secret) }
}

const recordCursors = cursorCodec("", /^[0-9a-f]{24}$/)
const deliveryCursors = cursorCodec("d:", /^\d{1,19}$/)

const dayStart = (day: string) => new Date(`${day}T00:00:00.000Z`)

export const ConsoleAuthHttpLayer = HttpApiBuilder.group(Api, "consoleAuth", (handlers) =>
  Effect.gen(function*() {
    const auth = yield* ConsoleAuth
    const accounts = yield* Accounts
    const config = yield* AppConfig
    const consoleConfig = yield* ConsoleConfig

    const accountName = (accountId: string | null) =>
      accountId === null ? Effect.succeed(null) : accounts.get(accountId).pipe(Effect.map((a) => a.name), Effect.orElseSucceed(() => null))

    /** The session's view, and its cookie on the response. */
    const signedIn = ({ token, session }: SignedIn) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        yield* setSessionCookie(token, secureCookieFor(request, config, consoleConfig))
        return {
          success: true as const,
          data: {
            user: userView(session.user, yield* accountName(session.user.accountId)),
            csrfToken: csrfTokenOf(token),
            expiresAt: session.expiresAt.toISOString(),
            idleExpiresAt: session.idleExpiresAt.toISOString(),
            readOnly: session.accountSuspended
          }
        }
      })

    return handlers
      .handle("signIn", ({ payload }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const result = yield* auth.signIn({ email: payload.email, password: payload.password, address: clientAddressOf(request, config.trustProxy) })
          return yield* signedIn(result)
        }).pipe(atEdge))
      .handle("redeemLink", ({ payload }) => Effect.flatMap(auth.redeemSignInLink(payload.token), signedIn).pipe(atEdge))
      .handle("inspectInvitation", ({ payload }) =>
        Effect.gen(function*() {
          const link = yield* auth.inspectLink(payload.token)
          return {
            success: true as const,
            data: {
              kind: link.kind,
              email: link.email,
              operator: link.operator,
              accountId: link.accountId,
              accountName: yield* accountName(link.accountId),
              role: link.role,
              expiresAt: link.expiresAt.toISOString()
            }
          }
        }).pipe(atEdge))
      .handle("acceptInvitation",
        ({ payload }) => Effect.flatMap(auth.acceptInvitation({ token: payload.token, password: payload.password }), signedIn).pipe(atEdge))
  }))

/** A pending invitation as its account's admins see it (never its token: only its digest is stored). */
const invitationView = (l: LinkRow) => ({
  id: l.id,
  email: l.email,
  role: l.role ?? "viewer" as const,
  createdBy: l.createdBy,
  createdAt: l.createdAt.toISOString(),
  expiresAt: l.expiresAt.toISOString()
})

const userView = (u: ConsoleUserInfo | CurrentSessionShape["user"], accountName: string | null) => ({
  id: u.id,
  email: u.email,
  operator: u.operator,
  accountId: u.accountId,
  accountName,
  role: u.role,
  createdAt: u.createdAt.toISOString()
})

export const ConsoleHttpLayer = HttpApiBuilder.group(Api, "console", (handlers) =>
  Effect.gen(function*() {
    const auth = yield* ConsoleAuth
    const sessions = yield* ConsoleSessions
    const users = yield* ConsoleUsers
    const links = yield* ConsoleLinks
    const accounts = yield* Accounts
    const webhookSettings = yield* WebhookSettingsStore
    const deliveryLog = yield* DeliveryLog
    const tests = yield* WebhookTests
    const records = yield* RecordStore
    const certificates = yield* Certificates
    const health = yield* NetworkHealth
    const stats = yield* ConsoleStats
    const config = yield* AppConfig
    const consoleConfig = yield* ConsoleConfig
    const egress = yield* WebhookEgress
    const sql = yield* SqlClient.SqlClient
    const evm = (yield* EvmNetworks).networks
    const fabric = (yield* FabricNetworks).networks
    const environmentOf = new Map<string, Environment>([...evm, ...fabric].map((n) => [n.networkId, n.environment]))

    const now = Clock.currentTimeMillis
    const baseUrl = Effect.map(HttpServerRequest.HttpServerRequest, (request) => publicBaseUrl(request, config))

    const getAccount = (accountId: string) =>
      accounts.get(accountId).pipe(Effect.catchTag("AccountNotFound", () => Effect.fail(new ConsoleNotFound({ what: `account ${accountId}` }))))

    /**
     * The account, if the signed-in user may do `need` on it: read (members of it, operators), change
     * (its admins, operators), secret (its admins, operators: webhook secrets, invitation links),
     * invitations (its admins, operators: the pending invitations). A suspended account's members
     * change nothing: the session middleware refuses their state changes (src/console/middleware.ts).
     */
    const access = (accountId: string, need: "read" | "change" | "secret" | "invitations") =>
      Effect.gen(function*() {
        const { user } = yield* CurrentSession
        if (!user.operator) {
          if (user.accountId !== accountId) return yield* new ConsoleNotFound({ what: `account ${accountId}` })
          if (need !== "read" && user.role !== "admin") {
            return yield* new NotAllowed({
              reason: need === "secret"
                ? "Viewers cannot see secrets: ask an admin of this account."
                : need === "invitations"
                ? "Only admins of this account see and revoke its invitations."
                : "Viewers can look but not change anything: ask an admin of this account."
            })
          }
        }
        return yield* getAccount(accountId)
      })

    const operatorOnly = Effect.gen(function*() {
      const { user } = yield* CurrentSession
      if (!user.operator) return yield* new NotAllowed({ reason: "Only operators can do this." })
    })

    const owner = (accountId: string, environment: Environment) => ({ accountId, environment })

    /** Viewers see no secret: webhook URLs (which may carry one) are shown by their origin. */
    const hidesSecrets = Effect.map(CurrentSession, ({ user }) => !user.operator && user.role !== "admin")
    const recordView = (row: Parameters<typeof toView>[0], hide: boolean) => {
      const view = toView(row)
      return hide ? { ...view, webhookUrl: redactUrl(view.webhookUrl) } : view
    }

    const withAttempts = (rows: ReadonlyArray<DeliveryRow>) =>
      Effect.gen(function*() {
        const hide = yield* hidesSecrets
        const attempts = yield* deliveryLog.attemptsOf(rows.map((r) => r.seq))
        return rows.map((row) => {
          const view = deliveryView(row, attempts)
          return hide ? { ...view, url: redactUrl(view.url) } : view
        })
      })

    const networkEntries: ReadonlyArray<{ networkId: string; chainType: "evm" | "fabric"; environment: Environment; explorerUrl: string | null }> = [
      ...evm.map((n) => ({ networkId: n.networkId, chainType: "evm" as const, environment: n.environment, explorerUrl: n.explorerUrl ?? null })),
      ...fabric.map((n) => ({ networkId: n.networkId, chainType: "fabric" as const, environment: n.environment, explorerUrl: null }))
    ]

    const ok = <A>(data: A) => ({ success: true as const, data })

    return handlers
      // ---- the session
      .handle("session", () =>
        Effect.gen(function*() {
          const s = yield* CurrentSession
          const name = s.user.accountId === null ? null : (yield* Effect.option(getAccount(s.user.accountId))).pipe(Option.map((a) => a.name), Option.getOrNull)
          return ok({
            user: userView(s.user, name),
            csrfToken: s.csrfToken,
            expiresAt: s.expiresAt.toISOString(),
            idleExpiresAt: s.idleExpiresAt.toISOString(),
            readOnly: s.readOnly
          })
        }).pipe(atEdge))
      .handle("signOut", () =>
        Effect.gen(function*() {
          const s = yield* CurrentSession
          const request = yield* HttpServerRequest.HttpServerRequest
          yield* sessions.end(s.token)
          yield* clearSessionCookie(secureCookieFor(request, config, consoleConfig))
          return ok({ sessionsEnded: 1 })
        }).pipe(atEdge))
      .handle("signOutEverywhere", () =>
        Effect.gen(function*() {
          const s = yield* CurrentSession
          const request = yield* HttpServerRequest.HttpServerRequest
          const ended = yield* sessions.endAll(s.user.id)
          yield* clearSessionCookie(secureCookieFor(request, config, consoleConfig))
          return ok({ sessionsEnded: ended })
        }).pipe(atEdge))
      .handle("config", () =>
        Effect.gen(function*() {
          const base = yield* baseUrl
          return ok({ publicUrl: base, verifyUrl: `${base}/verify`, networks: networkEntries, recordFilters: { collection: true } })
        }))
      // ---- operators
      .handle("listAccounts", () =>
        Effect.gen(function*() {
          yield* operatorOnly
          return ok({ accounts: (yield* accounts.list).map(accountView) })
        }).pipe(atEdge))
      .handle("createAccount", ({ payload }) =>
        Effect.gen(function*() {
          yield* operatorOnly
          let account = yield* accounts.createAccount({
            name: payload.name.trim(),
            email: payload.email?.trim() || undefined,
            plan: payload.plan,
            ratePerSecond: payload.plan === "ENTERPRISE" ? payload.ratePerSecond : undefined,
            defaultChain: payload.defaultChain
          })
          if (payload.activate === true) account = yield* getAccount(account.id).pipe(Effect.andThen(accounts.activate(account.id)), Effect.orDie)
          return ok(accountView(account))
        }).pipe(atEdge))
      .handle("activateAccount", ({ params }) =>
        Effect.gen(function*() {
          yield* operatorOnly
          yield* getAccount(params.accountId)
          return ok(accountView(yield* accounts.activate(params.accountId).pipe(Effect.orDie)))
        }).pipe(atEdge))
      .handle("suspendAccount", ({ params }) =>
        Effect.gen(function*() {
          yield* operatorOnly
          yield* getAccount(params.accountId)
          return ok(accountView(yield* accounts.suspend(params.accountId).pipe(Effect.orDie)))
        }).pipe(atEdge))
      .handle("changePlan", ({ params, payload }) =>
        Effect.gen(function*() {
          yield* operatorOnly
          yield* getAccount(params.accountId)
          return ok(accountView(yield* accounts.setPlan(params.accountId, payload.plan, payload.ratePerSecond).pipe(Effect.orDie)))
        }).pipe(atEdge))
      .handle("networks", () =>
        Effect.gen(function*() {
          yield* operatorOnly
          const at = yield* now
          const states = yield* health.snapshot
          const views = yield* Effect.forEach(states, (s) =>
            Effect.gen(function*() {
              const backlog = yield* stats.backlog(s.networkId)
              const signer = yield* stats.signer(s.networkId)
              // A follower asks the lock table who leads; a failed lookup is "unknown", not an error page.
              const holder = s.leader ? undefined : yield* stats.leader(leaderLockKey(s.chainType, s.networkId)).pipe(
                Effect.map((h) => h ?? null),
                Effect.orElseSucceed(() => "unknown" as const)
              )
              return {
                networkId: s.networkId,
                chainType: s.chainType,
                environment: environmentOf.get(s.networkId) ?? "test",
                leader: s.leader,
                ledBy: s.leader
                  ? "this-node" as const
                  : holder === "unknown"
                  ? "unknown" as const
                  : holder === null
                  ? "no-node" as const
                  : "another-node" as const,
                leaderAddress: typeof holder === "object" && holder !== null ? holder.clientAddress : null,
                leaderSince: typeof holder === "object" && holder !== null ? holder.since.toISOString() : null,
                rpc: s.rpc,
                status: !s.leader ? "follower" : s.rpc === "down" ? "unreachable" : s.rpc === "up" ? "up" : "starting",
                head: s.head === undefined ? null : s.head.toString(),
                lastError: s.lastError ?? null,
                lastChangeAt: new Date(s.lastChangeAt).toISOString(),
                queued: backlog.queued,
                unconfirmedBatches: backlog.unconfirmedBatches,
                confirmationLagSeconds: backlog.oldestUnconfirmedSentAt === null
                  ? null
                  : Math.max(0, Math.round((at - backlog.oldestUnconfirmedSentAt.getTime()) / 1000)),
                lastConfirmedAt: iso(backlog.lastConfirmedAt),
                signer: signer ?? null
              }
            }), { concurrency: 4 })
          return ok({ networks: views })
        }).pipe(atEdge))
      // ---- one account
      .handle("account", ({ params }) => Effect.map(access(params.accountId, "read"), (a) => ok(accountView(a))).pipe(atEdge))
      .handle("overview", ({ params, query }) =>
        Effect.gen(function*() {
          const account = yield* access(params.accountId, "read")
          const hide = yield* hidesSecrets
          const at = new Date(yield* now)
          const month = monthStart(at)
          const used = yield* records.usage(account.id, month)
          const by = owner(account.id, query.environment)
          const failedRecords = yield* records.list(by, { limit: 5, status: "FAILED", includeDeleted: false })
          const failedDeliveries = yield* deliveryLog.list(by, { limit: 5, state: "FAILED" })
          const states = yield* health.snapshot
          return ok({
            account: accountView(account),
            environment: query.environment,
            usage: {
              month: month.slice(0, 7),
              used,
              quota: Plans[account.plan].monthlyQuota,
              resetsAt: nextMonthStart(at).toISOString(),
              perSecond: account.plan === "ENTERPRISE" ? (account.ratePerSecond ?? ENTERPRISE_DEFAULT_PER_SECOND) : Plans[account.plan].perSecond,
              daily: yield* stats.daily(account.id, dayStart(month))
            },
            records: (yield* stats.byStatus(account.id, query.environment)) as Record<"QUEUED" | "BATCHING" | "ANCHORED" | "FAILED" | "DELETED", number>,
            networks: states.filter((s) => environmentOf.get(s.networkId) === query.environment).map((s) => ({
              networkId: s.networkId,
              chainType: s.chainType,
              environment: query.environment,
              status: !s.leader ? "follower" : s.rpc === "down" ? "unreachable" : s.rpc === "up" ? "up" : "starting",
              head: s.head === undefined ? null : s.head.toString(),
              lastError: s.lastError ?? null
            })),
            recentFailures: {
              records: failedRecords.map((r) => ({ recordId: r.id, hash: r.hash, networkId: r.networkId, updatedAt: r.updatedAt.toISOString() })),
              deliveries: failedDeliveries.map((d) => ({
                id: d.id,
                event: d.kind,
                url: hide ? redactUrl(d.url) : d.url,
                lastStatusCode: d.lastStatusCode,
                lastError: d.lastError,
                createdAt: d.createdAt.toISOString()
              }))
            }
          })
        }).pipe(atEdge))
      // ---- API keys
      .handle("listKeys", ({ params }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "read")
          const at = yield* now
          const keys = yield* accounts.listKeys(params.accountId)
          return ok({ keys: [...keys].reverse().map((k) => keyView(k, at)) })
        }).pipe(atEdge))
      .handle("createKey", ({ params, payload }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "change")
          const at = yield* now
          const { key, info } = yield* accounts.createKey({
            accountId: params.accountId,
            environment: payload.environment,
            name: payload.name.trim(),
            expiresAt: payload.expiresInDays === undefined ? undefined : new Date(at + payload.expiresInDays * 86_400_000)
          }).pipe(
            Effect.catchTags({
              AccountNotFound: () => Effect.fail(new ConsoleNotFound({ what: `account ${params.accountId}` })),
              AccountNotActive: () => Effect.fail(new AccountInactive({ accountId: params.accountId }))
            })
          )
          return ok({ key, info: keyView(info, at) })
        }).pipe(atEdge))
      .handle("revokeKey", ({ params }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "change")
          const notFound = new ConsoleNotFound({ what: `API key ${params.keyId}` })
          const key = yield* accounts.getKey(params.keyId).pipe(Effect.catchTag("ApiKeyNotFound", () => Effect.fail(notFound)))
          if (key.accountId !== params.accountId) return yield* notFound
          const revoked = yield* accounts.revokeKey(params.keyId).pipe(Effect.catchTag("ApiKeyNotFound", () => Effect.fail(notFound)))
          return ok(keyView(revoked, yield* now))
        }).pipe(atEdge))
      // ---- the webhook
      .handle("getWebhook", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "read")
          return ok(webhookView(yield* webhookSettings.get(params.accountId, query.environment), yield* hidesSecrets))
        }).pipe(atEdge))
      .handle("putWebhook", ({ params, query, payload }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "change")
          return ok(webhookView(yield* updateSettings(webhookSettings, egress, params.accountId, query.environment, payload), false))
        }).pipe(atEdge))
      .handle("revealSecret", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "secret")
          const view = settingsView(yield* webhookSettings.get(params.accountId, query.environment))
          return ok({ secret: view.secret, rotation: view.rotation })
        }).pipe(atEdge))
      .handle("rotateSecret", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "secret")
          const settings = settingsView(yield* webhookSettings.rotate(params.accountId, query.environment))
          const at = new Date(yield* now)
          return ok({ secret: settings.secret, previousSecretExpiresAt: settings.rotation?.previousSecretExpiresAt ?? at.toISOString(), settings })
        }).pipe(atEdge))
      .handle("confirmSecret", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "change")
          return ok(webhookView(yield* webhookSettings.confirmRotation(params.accountId, query.environment), false))
        }).pipe(atEdge))
      .handle("testWebhook", ({ params, payload }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "change")
          const row = yield* tests.send(owner(params.accountId, payload.environment))
          return ok((yield* withAttempts([row]))[0]!)
        }).pipe(atEdge))
      // ---- deliveries
      .handle("listDeliveries", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "read")
          const limit = query.limit ?? 25
          const before = deliveryCursors.parse(query.cursor)
          if (!before.ok) return yield* new InvalidDeliveryQuery({ reason: before.message })
          const rows = yield* deliveryLog.list(owner(params.accountId, query.environment), {
            limit: limit + 1,
            before: before.key,
            state: query.status,
            recordId: query.recordId,
            eventId: query.eventId
          })
          const { page, nextCursor } = pageOf(rows, limit, deliveryCursors, (row) => row.seq)
          return ok({ deliveries: yield* withAttempts(page), nextCursor })
        }).pipe(atEdge))
      .handle("getDelivery", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "read")
          const row = yield* deliveryLog.get(owner(params.accountId, query.environment), params.deliveryId)
          if (row === undefined) return yield* new DeliveryNotFound({ deliveryId: params.deliveryId })
          return ok((yield* withAttempts([row]))[0]!)
        }).pipe(atEdge))
      .handle("redeliver", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "change")
          const row = yield* deliveryLog.redeliver(owner(params.accountId, query.environment), params.deliveryId)
          if (row === undefined) return yield* new DeliveryNotFound({ deliveryId: params.deliveryId })
          return ok((yield* withAttempts([row]))[0]!)
        }).pipe(atEdge))
      // ---- records
      .handle("listRecords", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "read")
          const hide = yield* hidesSecrets
          const by = owner(params.accountId, query.environment)
          const q = query.q?.trim().toLowerCase()
          if (q !== undefined && q !== "") {
            // A search is by id or hash: the record(s) found, other filters ignored.
            if (/^[0-9a-f]{24}$/.test(q)) {
              const found = yield* records.get(by, q, true)
              return ok({ records: found._tag === "Found" ? [recordView(found.row, hide)] : [], nextCursor: null })
            }
            if (/^[0-9a-f]{64}$/.test(q)) return ok({ records: (yield* records.byHash(by, q)).map((r) => recordView(r, hide)), nextCursor: null })
            return yield* new InvalidConsoleInput({ reason: "search: a record id (24 hex characters) or a hash (64 hex characters)" })
          }
          const limit = query.limit ?? 25
          const before = recordCursors.parse(query.cursor)
          if (!before.ok) return yield* new InvalidRecord({ reason: before.message })
          const to = query.to === undefined ? undefined : new Date(dayStart(query.to).getTime() + 86_400_000)
          const rows = yield* records.list(by, {
            limit: limit + 1,
            before: before.key,
            status: query.status,
            collection: query.collection,
            includeDeleted: query.status === "DELETED",
            chainType: query.chain,
            createdFrom: query.from === undefined ? undefined : dayStart(query.from),
            createdBefore: to
          })
          const { page, nextCursor } = pageOf(rows, limit, recordCursors, (row) => row.id)
          return ok({ records: page.map((row) => recordView(row, hide)), nextCursor })
        }).pipe(atEdge))
      .handle("getRecord", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "read")
          const row = yield* requireFound(yield* records.get(owner(params.accountId, query.environment), params.recordId, true), params.recordId)
          return ok(recordView(row, yield* hidesSecrets))
        }).pipe(atEdge))
      .handle("recordProof", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "read")
          const row = yield* requireFound(yield* records.get(owner(params.accountId, query.environment), params.recordId, false), params.recordId)
          if (row.status !== "ANCHORED") return yield* new NotAnchored({ recordId: row.id, status: row.status })
          return ok(proofBundle(row, (yield* loadAnchors(sql, [row.id])).get(row.id) ?? []))
        }).pipe(atEdge))
      .handle("recordCertificate", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "read")
          const certificate = yield* certificates.forRecord(owner(params.accountId, query.environment), params.recordId, `${yield* baseUrl}/verify`)
          return HttpServerResponse.uint8Array(certificate.pdf, { contentType: "application/pdf", headers: certificateHeaders(certificate) })
        }).pipe(atEdge))
      // ---- members
      .handle("listMembers", ({ params }) =>
        Effect.gen(function*() {
          const account = yield* access(params.accountId, "read")
          return ok({ members: (yield* users.members(account.id)).map((u) => userView(u, account.name)) })
        }).pipe(atEdge))
      .handle("inviteMember", ({ params, payload }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "secret")
          const { user } = yield* CurrentSession
          const link = yield* auth.createLink({
            kind: "invitation",
            email: payload.email,
            target: { operator: false, accountId: params.accountId, role: payload.role },
            by: user
          }).pipe(Effect.catchTag("AccountNotFound", () => Effect.fail(new ConsoleNotFound({ what: `account ${params.accountId}` }))))
          return ok({ url: `${yield* baseUrl}${linkPath("invitation", link.token)}`, expiresAt: link.expiresAt.toISOString() })
        }).pipe(atEdge))
      .handle("listInvitations", ({ params }) =>
        Effect.gen(function*() {
          const account = yield* access(params.accountId, "invitations")
          return ok({ invitations: (yield* links.pendingInvitations(account.id)).map(invitationView) })
        }).pipe(atEdge))
      .handle("revokeInvitation", ({ params }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "invitations")
          const pending = (yield* links.pendingInvitations(params.accountId)).find((l) => l.id === params.invitationId)
          if (pending === undefined || !(yield* links.revokeInvitation(params.accountId, params.invitationId))) {
            return yield* new ConsoleNotFound({ what: `pending invitation ${params.invitationId}` })
          }
          return ok(invitationView(pending))
        }).pipe(atEdge))
      .handle("removeMember", ({ params }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "change")
          const { user } = yield* CurrentSession
          if (user.id === params.userId) return yield* new InvalidConsoleInput({ reason: "You cannot remove yourself" })
          const removed = yield* users.removeMember(params.accountId, params.userId)
          if (!removed) return yield* new ConsoleNotFound({ what: `member ${params.userId}` })
          return ok({ sessionsEnded: 0 })
        }).pipe(atEdge))
  }))
