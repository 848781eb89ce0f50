/**
 * `anchord dev` (what `npm start` runs): embedded PostgreSQL under ./.anchord, an active test account
 * created once, and a dev API key kept in the data directory and printed at every start, the way
 * local chains print their funded accounts.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Console, Effect } from "effect"
import { Accounts } from "../auth/Accounts.ts"
import { apiKeyDigest, generateApiKey } from "../auth/apiKeys.ts"
import { AppConfig } from "../config.ts"
import { SqlClient } from "effect/sql"
import { ConsoleAuth } from "../console/ConsoleAuth.ts"
import { linkPath } from "../console/Links.ts"
import { ConsoleUsers } from "../console/Users.ts"
import type { DevChain } from "./evmChain.ts"

type DevChainInfo = DevChain["Service"]

export const ensureDevAccount = Effect.gen(function*() {
  const config = yield* AppConfig
  const accounts = yield* Accounts
  const sql = yield* SqlClient.SqlClient
  const file = Path.resolve(config.dataDir, "dev-account.json")
  let saved: { accountId: string; apiKey: string } | undefined
  if (Fs.existsSync(file)) saved = JSON.parse(Fs.readFileSync(file, "utf8"))
  let accountId = saved?.accountId
  const exists = accountId !== undefined &&
    (yield* sql`SELECT 1 FROM accounts WHERE id = ${accountId}`.pipe(Effect.orDie)).length > 0
  if (!exists) {
    const account = yield* accounts.createAccount({ name: "Local developer", plan: "ENTERPRISE" })
    yield* accounts.activate(account.id)
    accountId = account.id
    saved = undefined
  }
  let apiKey = saved?.apiKey
  const keyKnown = apiKey !== undefined &&
    (yield* sql`SELECT 1 FROM api_keys WHERE digest = ${apiKeyDigest(apiKey)} AND revoked_at IS NULL`.pipe(Effect.orDie))
        .length > 0
  if (!keyKnown) {
    apiKey = generateApiKey("test")
    yield* accounts.importKey({ accountId: accountId!, key: apiKey, name: "dev key (npm start)" })
  }
  Fs.mkdirSync(Path.dirname(file), { recursive: true })
  Fs.writeFileSync(file, JSON.stringify({ accountId, apiKey }, null, 2) + "\n", { mode: 0o600 })
  return { accountId: accountId!, apiKey: apiKey! }
})

/** The dev operator of `npm start`: signs in by one-time links only (it has no password). */
export const DEV_OPERATOR_EMAIL = "dev@anchord.local"

/**
 * The dev operator (created once) and a new one-time sign-in link for them, printed in the banner at
 * every start (a link works once, for CONSOLE_SIGN_IN_LINK_MINUTES; `anchord users sign-in-link
 * dev@anchord.local` makes another).
 */
export const devOperatorLink = (baseUrl: string) =>
  Effect.gen(function*() {
    const users = yield* ConsoleUsers
    const auth = yield* ConsoleAuth
    yield* users.ensureOperator(DEV_OPERATOR_EMAIL)
    const link = yield* auth.createLink({ kind: "sign-in", email: DEV_OPERATOR_EMAIL, target: { operator: true } })
    return { url: `${baseUrl}${linkPath("sign-in", link.token)}`, expiresAt: link.expiresAt }
  }).pipe(Effect.orDie)

/** The embedded PostgreSQL's URL (its port is kept in `<dataDir>/pg.port`; a dev-only password). */
export const embeddedDatabaseUrl = (dataDir: string): string | undefined => {
  try {
    const port = Number(Fs.readFileSync(Path.resolve(dataDir, "pg.port"), "utf8"))
    return `postgres://postgres:anchord@127.0.0.1:${port}/anchord`
  } catch {
    return undefined
  }
}

/** One write, after the start-up logs, so nothing is interleaved with it. */
export const printBanner = (info: {
  readonly baseUrl: string
  readonly apiKey: string
  readonly accountId: string
  readonly dataDir: string
  /** undefined: DATABASE_URL (not printed: it may hold a password). */
  readonly database: string | undefined
  readonly chain: DevChainInfo | undefined
  readonly fabric: {
    readonly address: string
    readonly channel: string
    readonly chaincode: string
    readonly mspId: string
    readonly profile: string
  }
  readonly signInLink: { readonly url: string; readonly expiresAt: Date }
  /** The egress policy's targets (describeAllowlist). */
  readonly webhookTargets: string
  /** The /metrics URL; undefined: no listener (METRICS_PORT, docs/metrics.md). */
  readonly metrics?: string | undefined
  /** The dev TSA's root CA file (`openssl ts -verify -CAfile`); undefined: TSA_CERT_FILE's TSA. */
  readonly tsaCaFile?: string | undefined
  /** Each EVM network's transparency log: its checkpoint's URL and the key that verifies it (docs/transparency-log.md). */
  readonly logs?: ReadonlyArray<{ readonly checkpointUrl: string; readonly verifierKey: string }>
}) =>
  Console.log([
    "",
    "anchord dev node",
    "================",
    `API:       ${info.baseUrl}/v1`,
    `Console:   ${info.baseUrl}/console`,
    `Sign in:   ${info.signInLink.url}`,
    `           (one-time link for the dev operator ${DEV_OPERATOR_EMAIL}, valid until ${info.signInLink.expiresAt.toISOString()})`,
    `Verify:    ${info.baseUrl}/verify  (public verify page)`,
    `OpenAPI:   ${info.baseUrl}/v1/openapi.json`,
    `Data dir:  ${info.dataDir}`,
    `Database:  ${info.database ?? "DATABASE_URL"}${info.database ? "  (embedded PostgreSQL)" : ""}`,
    info.chain
      ? `Chain:     ${info.chain.rpcUrl}  (${
        info.chain.kind === "hardhat" ? "Hardhat EDR" : "Anvil"
      }, chainId ${info.chain.chainId}, network "${info.chain.networkId}", test keys; ${
        info.chain.stateFile === undefined
          ? "state in memory: lost at every stop, records re-anchored and earlier proofs void after a restart (DEV_CHAIN=anvil keeps it)"
          : `state ${info.chain.stateFile}`
      })`
      : "Chain:     EVM_NETWORKS",
    ...(info.chain ? [`Contract:  AnchorRegistry at ${info.chain.contractAddress}`] : []),
    `Fabric:    dev peer at ${info.fabric.address} (channel ${info.fabric.channel}, chaincode ${info.fabric.chaincode}, MSP ${info.fabric.mspId})`,
    `Profile:   ${info.fabric.profile}  (anchord verify --fabric-profile)`,
    `Account:   ${info.accountId} (ENTERPRISE, active)`,
    `Test key:  ${info.apiKey}`,
    `Webhooks:  to ${info.webhookTargets}  (WEBHOOK_ALLOW_PRIVATE)`,
    `Metrics:   ${info.metrics ?? "off (127.0.0.1:9464 busy: set METRICS_PORT to another port)"}`,
    `TSA:       ${info.baseUrl}/tsa  (RFC 3161; ${info.tsaCaFile === undefined ? "TSA_CERT_FILE" : `dev root CA ${info.tsaCaFile}`}, docs/timestamping.md)`,
    `Receipts:  ${info.baseUrl}/v1/records/{id}/receipt  (COSE, RFC 9942; key ${info.baseUrl}/.well-known/anchord-receipt-key.pem, docs/proof-format.md)`,
    ...(info.logs ?? []).flatMap((log) => [
      `Log:       ${log.checkpointUrl}  (C2SP tlog-tiles; anchord monitor, docs/transparency-log.md)`,
      `Log key:   ${log.verifierKey}`
    ]),
    "",
    "Try:",
    `  curl -s -X POST ${info.baseUrl}/v1/anchor -H "Authorization: Bearer ${info.apiKey}" \\`,
    `       -H "Content-Type: application/json" -d '{"data":{"hello":"world"}}'`,
    `  npx anchord verify proof.json --rpc ${info.chain?.rpcUrl ?? "<rpc-url>"} --fabric-profile ${info.fabric.profile}`,
    ""
  ].join("\n"))
