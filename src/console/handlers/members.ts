/** The account's members and invitations (`consoleMembers`, src/api/consoleAreas.ts): its admins invite and remove. */
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../../api/Api.ts"
import { CurrentSession } from "../../api/console.ts"
import { AppConfig } from "../../config.ts"
import { atEdge } from "../../db/errors.ts"
import { publicBaseUrl } from "../../http/publicUrl.ts"
import { ConsoleAuth } from "../ConsoleAuth.ts"
import { ConsoleNotFound, InvalidConsoleInput } from "../errors.ts"
import { ConsoleLinks, linkPath } from "../Links.ts"
import { ConsoleUsers } from "../Users.ts"
import { consoleAccess } from "./access.ts"
import { invitationView, ok, userView } from "./views.ts"

export const ConsoleMembersHttpLayer = HttpApiBuilder.group(Api, "consoleMembers", (handlers) =>
  Effect.gen(function*() {
    const { access } = yield* consoleAccess
    const auth = yield* ConsoleAuth
    const users = yield* ConsoleUsers
    const links = yield* ConsoleLinks
    const config = yield* AppConfig
    const baseUrl = Effect.map(HttpServerRequest.HttpServerRequest, (request) => publicBaseUrl(request, config))

    return handlers
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
          const sessionsEnded = yield* users.removeMember(params.accountId, params.userId)
          if (sessionsEnded === undefined) return yield* new ConsoleNotFound({ what: `member ${params.userId}` })
          return ok({ sessionsEnded })
        }).pipe(atEdge))
  }))
