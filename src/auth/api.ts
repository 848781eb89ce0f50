/** The bearer-key security declaration shared by the server and the typed client. */
import { Context } from "effect"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import { Unauthorized } from "../http/errors.ts"
import type { Principal } from "./Accounts.ts"

export class CurrentPrincipal extends Context.Service<CurrentPrincipal, Principal>()("anchord/auth/CurrentPrincipal") {}

export class ApiKeyAuth extends HttpApiMiddleware.Service<ApiKeyAuth, { provides: CurrentPrincipal; requires: never }>()(
  "anchord/auth/ApiKeyAuth",
  {
    requiredForClient: true,
    security: { bearer: HttpApiSecurity.bearer },
    error: Unauthorized
  }
) {}
