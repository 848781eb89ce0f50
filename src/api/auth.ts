/**
 * Who may call: the bearer-key security declaration shared by the server and the typed client, and the
 * address limit of public endpoints. Implementations: src/auth/middleware.ts.
 */
import { Context } from "effect"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import type { ChainType, Environment, PlanName } from "./recordSchemas.ts"
import { ServiceUnavailableSchema, TooManyRequestsSchema, Unauthorized } from "./errors.ts"

/** Who is calling: resolved from a valid bearer key. */
export interface Principal {
  readonly accountId: string
  readonly keyId: string
  readonly environment: Environment
  readonly plan: PlanName
  readonly perSecond: number
  /** null = unlimited */
  readonly monthlyQuota: number | null
  readonly defaultChain: ChainType
}

export class CurrentPrincipal extends Context.Service<CurrentPrincipal, Principal>()("anchord/auth/CurrentPrincipal") {}

export class ApiKeyAuth extends HttpApiMiddleware.Service<ApiKeyAuth, { provides: CurrentPrincipal; requires: never }>()(
  "anchord/auth/ApiKeyAuth",
  {
    requiredForClient: true,
    security: { bearer: HttpApiSecurity.bearer },
    error: [Unauthorized, TooManyRequestsSchema, ServiceUnavailableSchema]
  }
) {}

/**
 * Public endpoints: counted against the client address's per-second limit (requests without a valid
 * key are limited per address, SPEC 7).
 */
export class AddressLimit extends HttpApiMiddleware.Service<AddressLimit>()("anchord/auth/AddressLimit", {
  error: TooManyRequestsSchema
}) {}
