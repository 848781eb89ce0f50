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

/** Who is calling an endpoint open to anonymous callers: the key's principal, or none (counted by address). */
export class CurrentCaller extends Context.Service<CurrentCaller, { readonly principal: Principal | undefined }>()("anchord/auth/CurrentCaller") {}

/**
 * An API key when one is sent (then exactly as ApiKeyAuth: 401 for a bad one, the key's limits), else
 * anonymous, counted against the client address's per-second limit. `POST /v1/verify` (the public
 * verify page asks it about Fabric anchors, SPEC 9).
 */
export class KeyOrAddress extends HttpApiMiddleware.Service<KeyOrAddress, { provides: CurrentCaller; requires: never }>()(
  "anchord/auth/KeyOrAddress",
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
