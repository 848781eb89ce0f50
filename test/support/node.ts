/**
 * Starts a whole node in this process on a real socket (port 0) against a database, and gives
 * tests a base URL, API keys and a way to stop it.
 */
import { ConfigProvider, Effect, Layer, ManagedRuntime, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { Accounts } from "../../src/auth/Accounts.ts"
import type { PlanName } from "../../src/auth/plans.ts"
import { AppConfig, type AppConfigShape } from "../../src/config.ts"
import { NodeLayer } from "../../src/app/layers.ts"
import { freshDatabase } from "./db.ts"
import { EVM_UNSERVED_IDS } from "./process.ts"

export interface TestNode {
  readonly baseUrl: string
  readonly databaseUrl: string
  readonly runtime: ManagedRuntime.ManagedRuntime<any, any>
  readonly createAccount: (options?: { plan?: PlanName; ratePerSecond?: number; activate?: boolean; name?: string }) => Promise<string>
  readonly createKey: (accountId: string, environment?: "test" | "live", expiresAt?: Date) => Promise<{ key: string; id: string }>
  readonly revokeKey: (keyId: string) => Promise<void>
  readonly stop: () => Promise<void>
}

export const startNode = async (options: {
  readonly databaseUrl?: string
  readonly config?: Partial<AppConfigShape>
  /** The node to run (default: NodeLayer, networks from the environment). */
  readonly layer?: Layer.Layer<any, any, AppConfig>
  /**
   * EVM records accepted into QUEUED without a chain (the default with the default layer when the
   * environment has no EVM_NETWORKS): EVM_TEST_NETWORK_ID / EVM_LIVE_NETWORK_ID name the default ids,
   * as for a network another node of the database serves; without either the node refuses EVM records
   * (CHAIN_NOT_CONFIGURED). Fabric tests do the same with FABRIC_TEST_NETWORK_ID.
   */
  readonly evmUnserved?: boolean
} = {}): Promise<TestNode> => {
  const databaseUrl = options.databaseUrl ?? await freshDatabase()
  const config = AppConfig.layerWith({
    databaseUrl: Option.some(Redacted.make(databaseUrl)),
    host: "127.0.0.1",
    port: 0,
    anonymousRatePerSecond: 1000,
    authCacheMillis: 0,
    ...options.config
  })
  const evmUnserved = options.evmUnserved ??
    (options.layer === undefined && process.env.EVM_NETWORKS === undefined && process.env.EVM_NETWORKS_FILE === undefined)
  const unserved = evmUnserved
    ? ConfigProvider.layerAdd(ConfigProvider.fromUnknown(EVM_UNSERVED_IDS))
    : Layer.empty
  const runtime = ManagedRuntime.make((options.layer ?? NodeLayer).pipe(Layer.provideMerge(config), Layer.provide(unserved)))
  const server = await runtime.runPromise(HttpServer.HttpServer)
  const address = server.address
  if (address._tag === "UnixPathAddress") throw new Error("expected a TCP address")
  const run = <A>(effect: Effect.Effect<A, unknown, Accounts>) => runtime.runPromise(effect)
  return {
    baseUrl: `http://127.0.0.1:${address.port}`,
    databaseUrl,
    runtime,
    createAccount: (o = {}) =>
      run(Effect.gen(function*() {
        const accounts = yield* Accounts
        const account = yield* accounts.createAccount({ name: o.name ?? "test", plan: o.plan ?? "ENTERPRISE", ratePerSecond: o.ratePerSecond })
        if (o.activate !== false) yield* accounts.activate(account.id)
        return account.id
      })),
    createKey: (accountId, environment = "test", expiresAt) =>
      run(Effect.gen(function*() {
        const { key, info } = yield* (yield* Accounts).createKey({ accountId, environment, expiresAt })
        return { key, id: info.id }
      })),
    revokeKey: (keyId) => run(Effect.asVoid(Effect.flatMap(Accounts, (a) => a.revokeKey(keyId)))),
    stop: () => runtime.dispose()
  }
}

/** fetch with JSON helpers: returns status, headers and the parsed body (never throws on status). */
export const call = async (
  baseUrl: string,
  method: string,
  path: string,
  options: { key?: string; body?: unknown; rawBody?: string | Uint8Array; headers?: Record<string, string> } = {}
) => {
  const headers: Record<string, string> = { ...options.headers }
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`
  let body: string | Uint8Array | undefined
  if (options.rawBody !== undefined) body = options.rawBody
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body)
    headers["content-type"] ??= "application/json"
  }
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body })
  const text = await response.text()
  let json: any
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: response.status, headers: response.headers, text, json }
}
