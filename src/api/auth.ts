/** The bearer-key security declaration shared by the server and the typed client. */
import { Context } from "effect"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import { Unauthorized } from "./errors.ts"

/** Who is calling: resolved from a valid bearer key. */
export interface Principal {
  readonly accountId: string
  readonly keyId: string
  readonly environment: "test" | "live"
  readonly plan: "FREE" | "STARTUP" | "SCALE" | "ENTERPRISE"
  readonly perSecond: number
  /** null = unlimited */
  readonly monthlyQuota: number | null
  readonly defaultChain: "evm" | "fabric" | "hybrid"
}

export class CurrentPrincipal extends Context.Service<CurrentPrincipal, Principal>()("anchord/auth/CurrentPrincipal") {}

export class ApiKeyAuth extends HttpApiMiddleware.Service<ApiKeyAuth, { provides: CurrentPrincipal; requires: never }>()(
  "anchord/auth/ApiKeyAuth",
  {
    requiredForClient: true,
    security: { bearer: HttpApiSecurity.bearer },
    error: Unauthorized
  }
) {}
