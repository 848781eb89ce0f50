/** Signing in (`consoleAuth`: no session yet) and the session itself (`consoleSession`): src/api/console.ts. */
import { Effect, Option } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { ConfiguredNetworks } from "../../anchoring/Networks.ts"
import { Api } from "../../api/Api.ts"
import { CurrentSession, DEVICE_COOKIE } from "../../api/console.ts"
import { clientAddressOf } from "../../auth/Admission.ts"
import { Accounts } from "../../auth/Accounts.ts"
import { AppConfig } from "../../config.ts"
import { atEdge } from "../../db/errors.ts"
import { publicBaseUrl } from "../../http/publicUrl.ts"
import { ConsoleAuth, type SignedIn } from "../ConsoleAuth.ts"
import { ConsoleConfig } from "../config.ts"
import { clearSessionCookie, secureCookieFor, setDeviceCookie, setSessionCookie } from "../middleware.ts"
import { ConsoleSessions } from "../Sessions.ts"
import { csrfTokenOf } from "../tokens.ts"
import { consoleAccess } from "./access.ts"
import { ok, userView } from "./views.ts"

export const ConsoleAuthHttpLayer = HttpApiBuilder.group(Api, "consoleAuth", (handlers) =>
  Effect.gen(function*() {
    const auth = yield* ConsoleAuth
    const accounts = yield* Accounts
    const config = yield* AppConfig
    const consoleConfig = yield* ConsoleConfig

    const accountName = (accountId: string | null) =>
      accountId === null ? Effect.succeed(null) : accounts.get(accountId).pipe(Effect.map((a) => a.name), Effect.orElseSucceed(() => null))

    /** The session's view, and its cookie on the response. */
    const signedIn = ({ device, session, token }: SignedIn) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const secure = secureCookieFor(request, config, consoleConfig)
        yield* setSessionCookie(token, secure)
        if (device !== undefined) yield* setDeviceCookie(device, secure)
        return ok({
          user: userView(session.user, yield* accountName(session.user.accountId)),
          csrfToken: csrfTokenOf(token),
          expiresAt: session.expiresAt.toISOString(),
          idleExpiresAt: session.idleExpiresAt.toISOString(),
          readOnly: session.accountSuspended
        })
      })

    return handlers
      .handle("signIn", ({ payload }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const result = yield* auth.signIn({
            email: payload.email,
            password: payload.password,
            address: clientAddressOf(request, config.trustProxy),
            device: request.cookies[DEVICE_COOKIE]
          })
          return yield* signedIn(result)
        }).pipe(atEdge))
      .handle("redeemLink", ({ payload }) => Effect.flatMap(auth.redeemSignInLink(payload.token), signedIn).pipe(atEdge))
      .handle("inspectInvitation", ({ payload }) =>
        Effect.gen(function*() {
          const link = yield* auth.inspectLink(payload.token)
          return ok({
            kind: link.kind,
            email: link.email,
            operator: link.operator,
            accountId: link.accountId,
            accountName: yield* accountName(link.accountId),
            role: link.role,
            expiresAt: link.expiresAt.toISOString()
          })
        }).pipe(atEdge))
      .handle("acceptInvitation",
        ({ payload }) => Effect.flatMap(auth.acceptInvitation({ token: payload.token, password: payload.password }), signedIn).pipe(atEdge))
  }))

export const ConsoleSessionHttpLayer = HttpApiBuilder.group(Api, "consoleSession", (handlers) =>
  Effect.gen(function*() {
    const { getAccount } = yield* consoleAccess
    const sessions = yield* ConsoleSessions
    const config = yield* AppConfig
    const consoleConfig = yield* ConsoleConfig
    const networks = yield* ConfiguredNetworks

    const signedOut = (ended: number) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        yield* clearSessionCookie(secureCookieFor(request, config, consoleConfig))
        return ok({ sessionsEnded: ended })
      })

    return handlers
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
          yield* sessions.end(s.token)
          return yield* signedOut(1)
        }).pipe(atEdge))
      .handle("signOutEverywhere", () =>
        Effect.gen(function*() {
          const s = yield* CurrentSession
          return yield* signedOut(yield* sessions.endAll(s.user.id))
        }).pipe(atEdge))
      .handle("config", () =>
        Effect.gen(function*() {
          const base = publicBaseUrl(yield* HttpServerRequest.HttpServerRequest, config)
          return ok({ publicUrl: base, verifyUrl: `${base}/verify`, networks, recordFilters: { collection: true } })
        }))
  }))
