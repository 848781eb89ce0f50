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

export const printBanner = (info: {
  readonly baseUrl: string
  readonly apiKey: string
  readonly accountId: string
  readonly fabric: { readonly address: string; readonly channel: string; readonly chaincode: string; readonly mspId: string }
}) =>
  Console.log([
    "",
    "anchord dev node",
    "================",
    `API:       ${info.baseUrl}/v1   (OpenAPI: ${info.baseUrl}/v1/openapi.json)`,
    `Account:   ${info.accountId} (ENTERPRISE, active)`,
    `Test key:  ${info.apiKey}`,
    `Fabric:    dev peer at ${info.fabric.address} (channel ${info.fabric.channel}, chaincode ${info.fabric.chaincode}, MSP ${info.fabric.mspId})`,
    "",
    "Try:",
    `  curl -s -X POST ${info.baseUrl}/v1/anchor -H "Authorization: Bearer ${info.apiKey}" \\`,
    `       -H "Content-Type: application/json" -d '{"data":{"hello":"world"}}'`,
    ""
  ].join("\n"))
