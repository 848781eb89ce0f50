/**
 * The records, webhooks and system APIs over the in-memory stores, without a server or a database: the
 * real handlers, middleware (authentication, rate limits, JSON body framing, the error envelope, the
 * database bound) and services (record creation, ingest, admission, the webhook egress policy), with the
 * stores of this folder behind the SQL stores' service tags. Requests go through `HttpApiTest`'s in-memory
 * client (effect's ai-docs, 51_http-server/20_testing.ts): the same routing, decoding and encoding as a
 * served node, so statuses, bodies and headers are the wire's, not re-implemented here.
 *
 * What this leaves out, covered by the black-box tests over real PostgreSQL and sockets: the gateway in
 * front of the API (src/app/gateway.ts: the ingest fast path, 404/405 of unknown routes, CORS,
 * Cache-Control on reads, compression), anchoring, and the SQL itself.
 */
import { ConfigProvider, Context, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { HttpClientRequest, type HttpClientResponse, HttpServer } from "effect/http"
import { HttpApiMiddleware, HttpApiTest } from "effect/http-api"
import { NetworkHealth } from "../../../src/anchoring/NetworkHealth.ts"
import { ConfiguredNetworks, Networks } from "../../../src/anchoring/Networks.ts"
import { Api } from "../../../src/api/Api.ts"
import { ApiKeyAuth, KeyOrAddress } from "../../../src/api/auth.ts"
import { ConsoleSameOrigin, ConsoleSession } from "../../../src/api/console.ts"
import type { Environment, PlanName } from "../../../src/api/recordSchemas.ts"
import { Accounts } from "../../../src/auth/Accounts.ts"
import { Admission } from "../../../src/auth/Admission.ts"
import { AddressLimitLayer, ApiKeyAuthLayer, KeyOrAddressLayer } from "../../../src/auth/middleware.ts"
import { RateLimits } from "../../../src/auth/RateLimits.ts"
import { AppConfig } from "../../../src/config.ts"
import { DatabaseBoundLayer } from "../../../src/db/guard.ts"
import { BodyBudgetService } from "../../../src/http/body.ts"
import { ErrorEnvelopeLayer, JsonBodyFramingLayer } from "../../../src/http/middleware.ts"
import { RecordCreation } from "../../../src/records/creation.ts"
import { RecordsHttpLayer } from "../../../src/records/http.ts"
import { Ingest } from "../../../src/records/Ingest.ts"
import { SystemHttpLayer } from "../../../src/system/http.ts"
import { WebhooksHttpLayer } from "../../../src/webhooks/http.ts"
import { type Resolve, WebhookEgress, WebhookResolver } from "../../../src/webhooks/urlPolicy.ts"
import { AccountsMemory, UsageCacheMemory } from "./auth.ts"
import { NoDatabase } from "./database.ts"
import { IngestWriterMemory, RecordStoreMemory } from "./records.ts"
import { MemoryTables } from "./tables.ts"
import { DeliveryLogMemory, RequestLogMemory, WebhookSettingsStoreMemory } from "./webhooks.ts"

/** The networks new records go to: one EVM network per environment, Fabric in test only. */
export const NETWORKS = [
  { networkId: "evm-test", chainType: "evm", environment: "test", explorerUrl: null },
  { networkId: "evm-live", chainType: "evm", environment: "live", explorerUrl: null },
  { networkId: "fabric-test", chainType: "fabric", environment: "test", explorerUrl: null }
] as const

/** DNS as the egress policy sees it here: public names and one that resolves to a private address. */
export const HOSTS: Readonly<Record<string, string>> = {
  "hooks.example.com": "93.184.216.34",
  "internal.example.com": "10.0.0.7"
}

const resolve: Resolve = (hostname) =>
  HOSTS[hostname] === undefined
    ? Promise.reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" }))
    : Promise.resolve([{ address: HOSTS[hostname], family: 4 }])

const Stores = Layer.mergeAll(AccountsMemory, UsageCacheMemory, RecordStoreMemory, IngestWriterMemory, WebhookSettingsStoreMemory, DeliveryLogMemory,
  RequestLogMemory)
  .pipe(Layer.provideMerge(MemoryTables.layer))

const Services = Layer.mergeAll(
  RecordCreation.layer.pipe(
    Layer.provide(Ingest.layer),
    Layer.provide(Networks.layer.pipe(Layer.provide(Layer.succeed(ConfiguredNetworks, ConfiguredNetworks.of(NETWORKS)))))
  ),
  Admission.layer.pipe(Layer.provide(RateLimits.layerMemory)),
  NetworkHealth.layer,
  BodyBudgetService.layer
).pipe(
  Layer.provideMerge(WebhookEgress.layer.pipe(Layer.provide(Layer.succeed(WebhookResolver, resolve)))),
  Layer.provideMerge(Stores),
  Layer.provideMerge(NoDatabase)
)

/** The console's middleware, which these groups do not use: present because the API declares it, never run. */
const ConsoleUnused = Layer.mergeAll(
  Layer.succeed(ConsoleSession, ConsoleSession.of({ cookie: () => Effect.die(new Error("the console is not served in the handler tests")) })),
  Layer.succeed(ConsoleSameOrigin, ConsoleSameOrigin.of(() => Effect.die(new Error("the console is not served in the handler tests"))))
)

const Middleware = Layer.mergeAll(
  ApiKeyAuthLayer,
  AddressLimitLayer,
  KeyOrAddressLayer,
  JsonBodyFramingLayer,
  ErrorEnvelopeLayer,
  DatabaseBoundLayer,
  ConsoleUnused
)

/**
 * Everything `makeClient` needs, fresh (empty tables) per build. The node's configuration is its
 * defaults (nothing read from the environment), the egress policy's `WEBHOOK_ALLOW_PRIVATE` unset.
 */
export const MemoryApiLayer = Layer.mergeAll(RecordsHttpLayer, WebhooksHttpLayer, SystemHttpLayer).pipe(
  Layer.provideMerge(Middleware),
  Layer.provideMerge(Services),
  Layer.provideMerge(AppConfig.layer),
  Layer.provideMerge(HttpServer.layerServices),
  Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: {} })))
)

/** The key the client sends as `Authorization: Bearer` (none by default). */
export const ClientKey = Context.Reference<string | undefined>("anchord/test/ClientKey", { defaultValue: () => undefined })

/** A request to send as it is, instead of the one the endpoint's client built (`send`). */
const RawRequest = Context.Reference<HttpClientRequest.HttpClientRequest | undefined>("anchord/test/RawRequest", { defaultValue: () => undefined })

const withBearer = (request: HttpClientRequest.HttpClientRequest) =>
  Effect.map(ClientKey, (key) => key === undefined ? request : HttpClientRequest.bearerToken(request, key))

/** The client side of the bearer-key middleware: the key of `ClientKey`, or the raw request of `send`. */
const ClientAuth = Layer.mergeAll(
  HttpApiMiddleware.layerClient(ApiKeyAuth,
    ({ next, request }) => Effect.flatMap(RawRequest, (raw) => raw !== undefined ? next(raw) : Effect.flatMap(withBearer(request), next))),
  HttpApiMiddleware.layerClient(KeyOrAddress, ({ next, request }) => Effect.flatMap(withBearer(request), next))
)

/** The typed client of the records, webhooks and system groups, wired to their handlers in memory. */
export const makeClient = HttpApiTest.groups(Api, ["records", "webhooks", "system"]).pipe(Effect.provide(ClientAuth))

export type Client = Effect.Success<typeof makeClient>

/** `effect` with `key` as the client's bearer key (undefined: no Authorization header). */
export const asKey = (key: string | undefined) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, ClientKey, key)

/**
 * Sends `request` as it is, through the same in-memory pipeline: for what the typed client cannot send
 * because it encodes every request with the endpoint's schemas (a body that is not JSON, a query value
 * out of range). It rides on a records endpoint's client middleware, which hands it on in place of the
 * request that endpoint's client built; the route it takes is its own method and path.
 */
export const send = (client: Client, request: HttpClientRequest.HttpClientRequest): Effect.Effect<HttpClientResponse.HttpClientResponse> =>
  client.records.usage({ responseMode: "response-only" }).pipe(Effect.provideService(RawRequest, request), Effect.orDie)

/** A JSON request as `send` takes it, with the key as bearer when given. */
export const request = (method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE", path: string, options?: {
  readonly key?: string | undefined
  /** A value sent as JSON, or a string sent as the body's text (application/json). */
  readonly body?: unknown
  readonly headers?: Readonly<Record<string, string>>
}): HttpClientRequest.HttpClientRequest => {
  let r = HttpClientRequest.make(method)(path)
  if (options?.key !== undefined) r = HttpClientRequest.bearerToken(r, options.key)
  if (options?.headers !== undefined) r = HttpClientRequest.setHeaders(r, options.headers)
  if (options?.body !== undefined) {
    r = HttpClientRequest.bodyText(r, typeof options.body === "string" ? options.body : JSON.stringify(options.body), "application/json")
  }
  return r
}

/** A response's status, headers and body parsed as JSON (undefined when it has none). */
export const read = (response: HttpClientResponse.HttpClientResponse) =>
  Effect.map(Effect.orDie(response.text),
    (text) => ({ status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text) as any }))

/** An active account of the plan with a key of the environment: what a request authenticates with. */
export const newKey = (options?: { readonly plan?: PlanName; readonly environment?: Environment; readonly defaultChain?: "evm" | "fabric" | "hybrid" }) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const account = yield* accounts.createAccount({ name: "handler tests", plan: options?.plan ?? "STARTUP", defaultChain: options?.defaultChain })
    yield* accounts.activate(account.id)
    const { info, key } = yield* accounts.createKey({ accountId: account.id, environment: options?.environment ?? "test" })
    return { accountId: account.id, keyId: info.id, key }
  }).pipe(Effect.orDie)

/** The tests' "now": 2026-11-26T12:00:00.250Z, inside a rate-limit second, not at its edge. */
export const T0 = Date.UTC(2026, 10, 26, 12, 0, 0, 250)

/** Runs `f` with a fresh API (empty tables) at T0 on the test's Clock (`it.effect`'s TestClock). */
export const withApi = <A, E, R>(f: (client: Client) => Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(T0)
    return yield* Effect.flatMap(makeClient, f)
  }).pipe(Effect.scoped, Effect.provide(MemoryApiLayer))
