/**
 * `anchord doctor`'s checks (docs/doctor.md): each looks at one part of a production configuration
 * and says what is wrong and what to do about it. Every check is bounded in time (a dependency that
 * never answers is a failed check, not a hung command) and never prints a secret (URLs with
 * credentials, keys): only what the operator set, named.
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Cause, Duration, Effect, Option, Redacted, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import type { AppConfigShape } from "../config.ts"
import { pgClientLayer } from "../db/Database.ts"
import { rowDefects } from "../db/rows.ts"
import { migrations } from "../db/migrations/index.ts"
import { embeddedDataDirProblem } from "../dev/EmbeddedPostgres.ts"
import { publicUrlRefusal } from "../http/publicUrl.ts"
import { describeAllowlist, parseAllowlist } from "../webhooks/urlPolicy.ts"
import { replicationCheck } from "./replication.ts"
import { type CheckResult, fatal, ok, warn } from "./result.ts"

export { type CheckResult, fatal, ok, warn } from "./result.ts"

/** The first line of an error's message, bounded: enough to act on, never a dump. */
export const reason = (e: unknown) => {
  const messageOf = (x: unknown) => x instanceof Error ? x.message : typeof x === "object" && x !== null && "message" in x ? String(x.message) : String(x)
  // The innermost cause says what happened ("connect ECONNREFUSED 127.0.0.1:5432", "password authentication failed").
  let inner: unknown = e
  for (let i = 0; i < 5 && typeof inner === "object" && inner !== null && "cause" in inner && inner.cause !== undefined; i++) inner = inner.cause
  const text = inner === e || messageOf(inner) === messageOf(e) ? messageOf(e) : `${messageOf(e)} (${messageOf(inner)})`
  const line = text.split("\n").find((l) => l.trim() !== "") ?? text
  return line.length > 200 ? `${line.slice(0, 200)}…` : line
}

/** Runs a check within `millis`; a check that throws or overruns is reported as `onFailure` says. */
export const bounded = (
  millis: number,
  effect: Effect.Effect<CheckResult | ReadonlyArray<CheckResult>, unknown>,
  onFailure: (message: string) => CheckResult
): Effect.Effect<ReadonlyArray<CheckResult>> =>
  effect.pipe(
    Effect.map((r) => (Array.isArray(r) ? r : [r as CheckResult])),
    Effect.timeoutOrElse({
      duration: Duration.millis(millis),
      orElse: () => Effect.succeed([onFailure(`no answer within ${millis} ms`)])
    }),
    Effect.catchCause((cause) => Effect.succeed([onFailure(reason(Cause.squash(cause)))]))
  )

// ---- configuration alone (no network) ------------------------------------------------------------

/** PUBLIC_URL: required off loopback (the rule `anchord start` enforces, src/http/publicUrl.ts). */
export const publicUrlCheck = (config: Pick<AppConfigShape, "host" | "baseUrl">): CheckResult => {
  const refusal = publicUrlRefusal(config)
  if (refusal !== undefined) return fatal("public-url", refusal, "set PUBLIC_URL=https://<the address clients use>")
  return ok("public-url", Option.match(config.baseUrl, {
    onNone: () => `HOST ${config.host} is loopback: links use http://HOST:PORT`,
    onSome: (u) => `links use ${u}`
  }))
}

/** WEBHOOK_ALLOW_PRIVATE parses; what it opens to webhooks besides public addresses. */
export const webhookPolicyCheck = (raw: string | undefined): CheckResult => {
  const parsed = parseAllowlist(raw ?? "")
  if (!parsed.ok) {
    return fatal("webhook-egress", `WEBHOOK_ALLOW_PRIVATE: ${parsed.message}`, "fix WEBHOOK_ALLOW_PRIVATE (docs/security.md) or unset it")
  }
  if (parsed.allowlist.entries.length === 0) return ok("webhook-egress", "webhooks go to public addresses only")
  return warn(
    "webhook-egress",
    `webhooks may also reach non-public targets: ${describeAllowlist(parsed.allowlist)}`,
    "intended? Every API key of every account can then aim webhooks there (docs/security.md)"
  )
}

/** TLS_CERT_FILE / TLS_KEY_FILE: both or neither; readable; the key is the certificate's; in date. */
export const tlsFilesCheck = (certFile: string | undefined, keyFile: string | undefined, now: Date): CheckResult => {
  const name = "tls"
  if (certFile === undefined && keyFile === undefined) {
    return ok(name, "plain HTTP (TLS_CERT_FILE unset): put a TLS proxy in front, or set TLS_CERT_FILE and TLS_KEY_FILE")
  }
  if (certFile === undefined || keyFile === undefined) {
    return fatal(name,
      `${certFile === undefined ? "TLS_KEY_FILE" : "TLS_CERT_FILE"} is set without ${certFile === undefined ? "TLS_CERT_FILE" : "TLS_KEY_FILE"}`,
      "set both (PEM files), or neither")
  }
  let cert: Crypto.X509Certificate
  try {
    cert = new Crypto.X509Certificate(Fs.readFileSync(certFile))
  } catch (e) {
    return fatal(name, `TLS_CERT_FILE ${certFile}: ${reason(e)}`, "point TLS_CERT_FILE at a readable PEM certificate (the server's first, then its chain)")
  }
  let key: Crypto.KeyObject
  try {
    key = Crypto.createPrivateKey(Fs.readFileSync(keyFile))
  } catch (e) {
    // Never the file's contents: only that it is not a key.
    return fatal(name, `TLS_KEY_FILE ${keyFile}: not a readable private key (${(e as NodeJS.ErrnoException).code ?? "unparsable PEM"})`,
      "point TLS_KEY_FILE at the certificate's PEM private key, readable by the node's user")
  }
  if (!cert.checkPrivateKey(key)) {
    return fatal(name, `TLS_KEY_FILE is not the key of the certificate in TLS_CERT_FILE (${cert.subject.replace(/\n/g, ", ")})`,
      "use the key the certificate was issued for")
  }
  const notAfter = new Date(cert.validTo)
  const notBefore = new Date(cert.validFrom)
  if (notAfter.getTime() <= now.getTime()) {
    return fatal(name, `the certificate expired on ${notAfter.toISOString()}`, "renew it and replace TLS_CERT_FILE and TLS_KEY_FILE")
  }
  if (notBefore.getTime() > now.getTime()) {
    return fatal(name, `the certificate is not valid before ${notBefore.toISOString()}`, "check the node's clock, or use a certificate valid now")
  }
  const days = Math.floor((notAfter.getTime() - now.getTime()) / 86_400_000)
  if (days < 14) {
    return warn(name, `the certificate expires in ${days} day(s), on ${notAfter.toISOString()}`, "renew it (the node reloads the files without a restart)")
  }
  return ok(name, `certificate valid until ${notAfter.toISOString()}, the key matches`)
}

/** Embedded PostgreSQL only: the data directory is one the server's user can reach. */
export const dataDirCheck = (config: Pick<AppConfigShape, "databaseUrl" | "dataDir">): CheckResult => {
  if (Option.isSome(config.databaseUrl)) return ok("data-dir", "DATABASE_URL is set: no embedded PostgreSQL")
  const problem = embeddedDataDirProblem(config.dataDir)
  if (problem !== undefined) return fatal("data-dir", problem.message, problem.fix)
  return ok("data-dir", `embedded PostgreSQL under ${Path.resolve(config.dataDir)} (set DATABASE_URL for production)`)
}

/**
 * Which chains a record may ask for, per environment: a chain without a network of the key's
 * environment (EVM_NETWORKS / FABRIC_NETWORKS, or an EVM_<ENV>_NETWORK_ID / FABRIC_<ENV>_NETWORK_ID
 * naming one another node serves) is refused at ingest with CHAIN_NOT_CONFIGURED; hybrid needs both.
 */
export const anchorableCheck = (
  evm: ReadonlyArray<{ readonly environment: string }>,
  fabric: ReadonlyArray<{ readonly environment: string }>,
  overrides: { readonly evm?: ReadonlyArray<string>; readonly fabric?: ReadonlyArray<string> } = {}
): CheckResult => {
  const envs = (list: ReadonlyArray<{ readonly environment: string }>, named: ReadonlyArray<string> = []) =>
    [...new Set([...list.map((n) => n.environment), ...named])].sort()
  const e = envs(evm, overrides.evm), f = envs(fabric, overrides.fabric)
  const h = e.filter((env) => f.includes(env))
  const say = `evm: ${e.join(", ") || "none"}; fabric: ${f.join(", ") || "none"}; hybrid: ${h.join(", ") || "none"}`
  if (e.length === 0) {
    return warn("anchorable", `no EVM network (EVM_NETWORKS): EVM and hybrid records are refused with CHAIN_NOT_CONFIGURED; ${say}`,
      "set EVM_NETWORKS (docs/configuration-evm.md)")
  }
  return ok("anchorable", `anchorable chains by environment: ${say} (records for the others are refused with CHAIN_NOT_CONFIGURED)`)
}

// ---- the database -------------------------------------------------------------------------------

/** The statements of `databaseChecks`, on the database checked. */
const databaseQueries = (sql: SqlClient.SqlClient) => ({
  version: SqlSchema.findOne({
    Request: Schema.Void,
    Result: Schema.Struct({ v: Schema.String }),
    execute: () => sql`SELECT current_setting('server_version') AS v`
  }),
  migrationsTable: SqlSchema.findOne({
    Request: Schema.Void,
    Result: Schema.Struct({ t: Schema.NullOr(Schema.String) }),
    execute: () => sql`SELECT to_regclass('effect_sql_migrations')::text AS t`
  }),
  applied: SqlSchema.findAll({
    Request: Schema.Void,
    Result: Schema.Struct({ id: Schema.Number }),
    execute: () => sql`SELECT migration_id::int AS id FROM effect_sql_migrations`
  }),
  settings: SqlSchema.findAll({
    Request: Schema.Void,
    Result: Schema.Struct({ name: Schema.String, setting: Schema.String }),
    execute: () => sql`SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'full_page_writes', 'synchronous_commit', 'autovacuum')`
  }),
  neverAnalyzed: SqlSchema.findAll({
    Request: Schema.Void,
    Result: Schema.Struct({ relname: Schema.String }),
    execute: () =>
      sql`
        SELECT relname FROM pg_stat_user_tables
        WHERE n_live_tup + n_dead_tup > 1000 AND last_analyze IS NULL AND last_autoanalyze IS NULL
        ORDER BY relname LIMIT 10`
  })
})

/** Reachable; migrated; durable (fsync, full_page_writes, synchronous_commit); replication (src/doctor/replication.ts); autovacuum and statistics. */
export const databaseChecks = (url: Redacted.Redacted<string>, connectTimeoutMillis: number) =>
  Effect.gen(function*() {
    const q = databaseQueries(yield* SqlClient.SqlClient)
    const out: Array<CheckResult> = []
    const version = yield* rowDefects(q.version())
    out.push(ok("database", `reachable, PostgreSQL ${version.v}`))
    const table = yield* rowDefects(q.migrationsTable())
    const applied = new Set(table.t === null ? [] : (yield* rowDefects(q.applied())).map((r) => r.id))
    const pending = Object.keys(migrations).filter((name) => !applied.has(Number(name.split("_")[0])))
    out.push(pending.length === 0
      ? ok("migrations", `all ${Object.keys(migrations).length} applied`)
      : warn("migrations", `pending: ${pending.join(", ")}`, "`anchord migrate` (or `anchord start`, which applies them)"))
    const settings = new Map((yield* rowDefects(q.settings())).map((r) => [r.name, r.setting]))
    const off = ["fsync", "full_page_writes"].filter((n) => settings.get(n) === "off")
    const sync = settings.get("synchronous_commit")
    if (off.length > 0) {
      out.push(
        fatal("durability", `${off.join(" and ")} off: a crash of the server's machine can corrupt the database and lose committed (202) records`,
          `set ${off.map((n) => `${n} = on`).join(", ")} in postgresql.conf`)
      )
    } else if (sync === "off" || sync === "local") {
      out.push(
        warn("durability", `synchronous_commit = ${sync}: a crash can lose the last transactions after their 202`,
          "set synchronous_commit = on (or remote_write with a replica)")
      )
    } else {
      out.push(ok("durability", `fsync on, full_page_writes on, synchronous_commit ${sync ?? "?"}`))
    }
    out.push(yield* replicationCheck)
    if (settings.get("autovacuum") === "off") {
      out.push(warn("autovacuum", "autovacuum is off: tables bloat and the planner's statistics go stale", "set autovacuum = on"))
    } else {
      // Tables of some size never analyzed: the planner guesses their sizes, and a plan made on a guess can stay slow.
      const stale = yield* rowDefects(q.neverAnalyzed())
      out.push(stale.length === 0
        ? ok("autovacuum", "on; every table of size has statistics")
        : warn("autovacuum", `no statistics yet for ${stale.map((r) => r.relname).join(", ")}`, "run ANALYZE (autovacuum will too, given time)"))
    }
    return out as ReadonlyArray<CheckResult>
  }).pipe(Effect.scoped, Effect.provide(pgClientLayer(url, { connectTimeoutMillis, statementTimeoutMillis: connectTimeoutMillis })))

// ---- Redis --------------------------------------------------------------------------------------

export const redisCheck = (url: Redacted.Redacted<string>, timeoutMillis: number) =>
  Effect.tryPromise(async () => {
    const { createClient } = await import("redis")
    const client = createClient({ url: Redacted.value(url), socket: { connectTimeout: timeoutMillis, reconnectStrategy: false } })
    client.on("error", () => {})
    try {
      await client.connect()
      const answer = await client.ping()
      return ok("redis", `PING answered ${answer}`)
    } finally {
      await client.destroy?.()
    }
  })
