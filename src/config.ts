/**
 * Node configuration, read from environment variables (every variable is documented in README.md).
 * One place, so `anchord start`, `anchord dev` and the tests read the same names.
 */
import * as Fs from "node:fs"
import { Config, ConfigProvider, Context, Effect, Layer, Option, Redacted } from "effect"
import ipaddr from "ipaddr.js"
import { quoted } from "./excerpt.ts"

export interface AppConfigShape {
  /** External PostgreSQL; when absent the node runs an embedded PostgreSQL under `dataDir`. */
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  /** Project-local state: embedded PostgreSQL data, the dev API key, dev chain state. */
  readonly dataDir: string
  readonly host: string
  readonly port: number
  /** Public base URL printed and used in links (defaults to http://host:port). */
  readonly baseUrl: Option.Option<string>
  readonly maxBodyBytes: number
  readonly redisUrl: Option.Option<Redacted.Redacted<string>>
  /** Per-second limit for requests without a valid key, per client address. */
  readonly anonymousRatePerSecond: number
  /** How long a verified API key is cached in memory (revocations take at most this long on other nodes). */
  readonly authCacheMillis: number
  /** Group commit: the most records written by one INSERT. */
  readonly ingestMaxBatch: number
  /** Group commit: how many group statements may be in flight at once. */
  readonly ingestWriters: number
  /** Serve the record-creating POSTs on the gateway's fast path (false: through HttpApi, like every other endpoint). */
  readonly ingestFastPath: boolean
  /** Which proxies in front of the node are believed about the client (TRUST_PROXY; src/http/forwarded.ts). */
  readonly trustProxy: TrustProxy
  /** After SIGTERM/SIGINT, exit anyway (code 1) if the graceful shutdown has not finished by then. */
  readonly shutdownTimeoutMillis: number
  /**
   * Origins whose browser pages may call /v1 (CORS): exact origins, or "*" for any. Empty (the
   * default): none, the node's own pages (console, verify) being same-origin (docs/api.md).
   */
  readonly corsOrigins: ReadonlyArray<string>
  // ---- Bounded waits (docs/operations.md, "Bounded waits": every wait on a dependency, in one place)
  /** Opening a connection to PostgreSQL. */
  readonly dbConnectTimeoutMillis: number
  /** PostgreSQL's own `statement_timeout` for every session of the node (0: none). */
  readonly dbStatementTimeoutMillis: number
  /** How long a request waits on the database before it is answered 503. */
  readonly requestDeadlineMillis: number
  /** How often the database is probed (the circuit breaker and /v1/health), and the probe's own bound. */
  readonly dbProbeIntervalMillis: number
  readonly dbProbeTimeoutMillis: number
  /** How long a key verified before still admits requests when the database cannot confirm it. */
  readonly authStaleMillis: number
  /** Records accepted but not yet committed, at most (beyond: 503, load shedding). */
  readonly ingestMaxPending: number
  /** HTTP: open connections at most, and how long a client may take to send its headers and its request. */
  readonly httpMaxConnections: number
  readonly httpHeadersTimeoutMillis: number
  readonly httpRequestTimeoutMillis: number
  /** Request bodies being received, in bytes, across all connections (beyond: 503). */
  readonly httpMaxBodyBytesInFlight: number
  // ---- HTTPS (docs/tls.md)
  /** TLS_CERT_FILE and TLS_KEY_FILE (both or neither): the API is served over HTTPS with this pair. */
  readonly tls: Option.Option<{ readonly certFile: string; readonly keyFile: string }>
  /** TLS_PLAIN_PORT: a plain-HTTP listener on HOST answering only a redirect to HTTPS (308) or 426. */
  readonly tlsPlainPort: Option.Option<number>
  /** How often the pair's files are checked for a change (they are also reloaded on SIGHUP). */
  readonly tlsWatchIntervalMillis: number
  // ---- Metrics (docs/metrics.md)
  /** The /metrics listener's port (METRICS_PORT); none: no listener (`anchord dev` then uses 9464). */
  readonly metricsPort: Option.Option<number>
  readonly metricsHost: string
  /** How often the gauges that need a query (queue depth, webhook backlog…) are sampled. */
  readonly metricsSampleIntervalMillis: number
}

/**
 * CORS_ORIGINS: comma-separated origins (`https://app.example.com`), or `*`. Each is normalized as
 * browsers send it in `Origin` (scheme://host[:port], lowercase, default port dropped); anything
 * else is refused at start rather than silently never matching.
 */
export const parseOrigins = (text: string): ReadonlyArray<string> =>
  text.split(",").map((s) => s.trim()).filter((s) => s !== "").map((s) => {
    if (s === "*") return s
    const url = new URL(s)
    if ((url.protocol !== "http:" && url.protocol !== "https:") || url.origin !== s.replace(/\/$/, "").toLowerCase()) {
      throw new Error(`CORS_ORIGINS: ${JSON.stringify(s)} is not an origin (scheme://host[:port], no path)`)
    }
    return url.origin
  })

/**
 * TRUST_PROXY: whom `X-Forwarded-For` / `X-Forwarded-Proto` are believed from (docs/operations.md).
 * - off (unset, `false`, `0`, `no`, `off`): the connection's address; forwarded headers are ignored.
 * - hops (`1`, `2`…; `true`/`yes`/`on` mean `1`): that many proxies stand in front of the node, each
 *   appending the address it was reached from; the client is the entry that many steps from the right.
 * - ranges (`10.0.0.0/8,127.0.0.1`): the proxies' addresses or CIDR ranges; the client is the right-most
 *   address, connection included, that is not one of them.
 * In every form the entries the client wrote itself (left of what the trusted proxies appended) are never read.
 */
export type TrustProxy =
  | { readonly _tag: "Off" }
  | { readonly _tag: "Hops"; readonly hops: number }
  | { readonly _tag: "Ranges"; readonly ranges: ReadonlyArray<readonly [ipaddr.IPv4 | ipaddr.IPv6, number]> }

const FALSE_WORDS = new Set(["", "false", "no", "off", "n", "0"])
const TRUE_WORDS = new Set(["true", "yes", "on", "y"])

/** An IP address in its usual spelling (IPv4: four decimal parts; not `0x7f.1` or `2130706433`). */
export const parseIpLiteral = (text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined => {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text)
  if (!text.includes(":") || !ipaddr.IPv6.isValid(text)) return undefined
  const v6 = ipaddr.IPv6.parse(text)
  return v6.isIPv4MappedAddress() ? v6.toIPv4Address() : v6
}

/** TRUST_PROXY's text as a {@link TrustProxy}; a message saying what is wrong otherwise. */
export const parseTrustProxy = (raw: string): TrustProxy | string => {
  const text = raw.trim().toLowerCase()
  if (FALSE_WORDS.has(text)) return { _tag: "Off" }
  if (TRUE_WORDS.has(text)) return { _tag: "Hops", hops: 1 }
  if (/^\d+$/.test(text)) {
    const hops = Number(text)
    return hops <= 32 ? { _tag: "Hops", hops } : `TRUST_PROXY: ${hops} proxies in front of the node? Expected a hop count from 0 to 32`
  }
  const ranges: Array<readonly [ipaddr.IPv4 | ipaddr.IPv6, number]> = []
  for (const item of text.split(",").map((s) => s.trim())) {
    const [address = "", bits, ...rest] = item.split("/")
    const ip = parseIpLiteral(address)
    const max = address.includes(":") ? 128 : 32
    const width = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN
    // A mapped address (::ffff:10.0.0.0/104) stands for the IPv4 range it maps.
    const mapped = ip?.kind() === "ipv4" && max === 128
    if (ip === undefined || rest.length > 0 || !(width <= max) || (mapped && width < 96)) {
      return `TRUST_PROXY: ${quoted(item)} is not an IP address or CIDR range. Expected off (false), ` +
        `a hop count (1: one proxy in front of the node) or the proxies' addresses and ranges (10.0.0.0/8,127.0.0.1)`
    }
    ranges.push([ip, mapped ? width - 96 : width])
  }
  return { _tag: "Ranges", ranges }
}

const trustProxyConfig = Config.String("TRUST_PROXY").pipe(
  Config.withDefault("false"),
  Config.mapEffect((text) => {
    const parsed = parseTrustProxy(text)
    return typeof parsed === "string"
      ? Effect.fail(new Config.ConfigError(new ConfigProvider.SourceError({ message: parsed })))
      : Effect.succeed(parsed)
  })
)

/** A setting the node refuses, as Effect's Config reports one (the message names the variable). */
export const configError = (message: string) => new Config.ConfigError(new ConfigProvider.SourceError({ message }))

/** TLS_CERT_FILE / TLS_KEY_FILE: both or neither (one alone would silently serve plain HTTP). */
const tlsConfig = Config.all({ cert: Config.option(Config.String("TLS_CERT_FILE")), key: Config.option(Config.String("TLS_KEY_FILE")) }).pipe(
  Config.mapEffect(({ cert, key }) => {
    if (Option.isSome(cert) && Option.isSome(key)) return Effect.succeed(Option.some({ certFile: cert.value, keyFile: key.value }))
    if (Option.isNone(cert) && Option.isNone(key)) return Effect.succeed(Option.none())
    return Effect.fail(configError(Option.isSome(cert)
      ? "TLS_CERT_FILE is set but TLS_KEY_FILE is not: HTTPS needs both (the certificate and its private key), or neither for plain HTTP"
      : "TLS_KEY_FILE is set but TLS_CERT_FILE is not: HTTPS needs both (the certificate and its private key), or neither for plain HTTP"))
  })
)

/**
 * A secret variable (docs/operating.md, "Secrets from files"): NAME, or NAME_FILE naming a file that
 * holds the value (a Docker or Kubernetes secret, a systemd credential), so the secret need not sit in
 * the process environment, which `ps e` and /proc/<pid>/environ show. Both set (NAME not empty) is an
 * error (which one wins would be a guess); one trailing newline is dropped (editors and `echo` add it). Errors name the
 * variable and the file, never the content.
 */
export const secretConfig = (name: string): Config.Config<Option.Option<Redacted.Redacted<string>>> =>
  Config.all({
    value: Config.option(Config.Redacted(name)),
    file: Config.option(Config.String(`${name}_FILE`))
  }).pipe(Config.mapEffect(({ file, value }) => {
    if (Option.isNone(file)) return Effect.succeed(value)
    // An empty NAME (`NAME=` left in an env file) does not count as set.
    if (Option.isSome(value) && Redacted.value(value.value) !== "") {
      return Effect.fail(configError(`${name} and ${name}_FILE are both set: set only one`))
    }
    return Effect.try({
      try: () => Fs.readFileSync(file.value, "utf8"),
      catch: (e) => configError(`${name}_FILE: cannot read ${JSON.stringify(file.value)} (${(e as NodeJS.ErrnoException).code ?? "error"})`)
    }).pipe(Effect.flatMap((text) => {
      const secret = text.replace(/\r?\n$/, "")
      return secret.trim() === ""
        ? Effect.fail(configError(`${name}_FILE: ${JSON.stringify(file.value)} is empty`))
        : Effect.succeed(Option.some(Redacted.make(secret)))
    }))
  }))

export class AppConfig extends Context.Service<AppConfig, AppConfigShape>()("anchord/AppConfig") {
  static readonly config = Config.all({
    databaseUrl: secretConfig("DATABASE_URL"),
    dataDir: Config.String("ANCHORD_DATA_DIR").pipe(Config.withDefault(".anchord")),
    host: Config.String("HOST").pipe(Config.withDefault("127.0.0.1")),
    port: Config.Port("PORT").pipe(Config.withDefault(8080)),
    baseUrl: Config.option(Config.String("PUBLIC_URL")),
    maxBodyBytes: Config.Int("MAX_BODY_BYTES").pipe(Config.withDefault(1024 * 1024)),
    redisUrl: secretConfig("REDIS_URL"),
    anonymousRatePerSecond: Config.Int("ANON_RATE_LIMIT_PER_SECOND").pipe(Config.withDefault(10)),
    authCacheMillis: Config.Int("AUTH_CACHE_MS").pipe(Config.withDefault(1000)),
    ingestMaxBatch: Config.Int("INGEST_MAX_BATCH").pipe(Config.withDefault(512)),
    ingestWriters: Config.Int("INGEST_WRITERS").pipe(Config.withDefault(1)),
    ingestFastPath: Config.Boolean("INGEST_FAST_PATH").pipe(Config.withDefault(true)),
    trustProxy: trustProxyConfig,
    shutdownTimeoutMillis: Config.Int("SHUTDOWN_TIMEOUT_MS").pipe(Config.withDefault(30_000)),
    corsOrigins: Config.String("CORS_ORIGINS").pipe(Config.withDefault(""), Config.map(parseOrigins)),
    dbConnectTimeoutMillis: Config.Int("DB_CONNECT_TIMEOUT_MS").pipe(Config.withDefault(5_000)),
    dbStatementTimeoutMillis: Config.Int("DB_STATEMENT_TIMEOUT_MS").pipe(Config.withDefault(60_000)),
    requestDeadlineMillis: Config.Int("REQUEST_DEADLINE_MS").pipe(Config.withDefault(2_000)),
    dbProbeIntervalMillis: Config.Int("DB_PROBE_INTERVAL_MS").pipe(Config.withDefault(1_000)),
    dbProbeTimeoutMillis: Config.Int("DB_PROBE_TIMEOUT_MS").pipe(Config.withDefault(1_000)),
    authStaleMillis: Config.Int("AUTH_STALE_MS").pipe(Config.withDefault(300_000)),
    ingestMaxPending: Config.Int("INGEST_MAX_PENDING").pipe(Config.withDefault(50_000)),
    httpMaxConnections: Config.Int("HTTP_MAX_CONNECTIONS").pipe(Config.withDefault(20_000)),
    httpHeadersTimeoutMillis: Config.Int("HTTP_HEADERS_TIMEOUT_MS").pipe(Config.withDefault(10_000)),
    httpRequestTimeoutMillis: Config.Int("HTTP_REQUEST_TIMEOUT_MS").pipe(Config.withDefault(30_000)),
    httpMaxBodyBytesInFlight: Config.Int("HTTP_MAX_BODY_BYTES_IN_FLIGHT").pipe(Config.withDefault(256 * 1024 * 1024)),
    tls: tlsConfig,
    tlsPlainPort: Config.option(Config.Port("TLS_PLAIN_PORT")),
    tlsWatchIntervalMillis: Config.Int("TLS_WATCH_INTERVAL_MS").pipe(Config.withDefault(5_000)),
    // Unset or empty: no listener. 0 picks a free port (tests).
    metricsPort: Config.String("METRICS_PORT").pipe(
      Config.withDefault(""),
      Config.mapEffect((raw) => {
        const text = raw.trim()
        if (text === "") return Effect.succeed(Option.none<number>())
        const port = /^\d{1,5}$/.test(text) ? Number(text) : NaN
        return port <= 65535
          ? Effect.succeed(Option.some(port))
          : Effect.fail(configError(`METRICS_PORT: ${quoted(raw)} is not a port (0-65535; unset: no metrics listener)`))
      })
    ),
    metricsHost: Config.String("METRICS_HOST").pipe(Config.withDefault("127.0.0.1")),
    metricsSampleIntervalMillis: Config.Int("METRICS_SAMPLE_INTERVAL_MS").pipe(Config.withDefault(10_000))
  }).pipe(Config.mapEffect((c) =>
    Option.isSome(c.tlsPlainPort) && Option.isNone(c.tls)
      ? Effect.fail(
        configError("TLS_PLAIN_PORT is set but TLS is off: it is the plain port of an HTTPS node (set TLS_CERT_FILE and TLS_KEY_FILE, or unset it)")
      )
      : Effect.succeed(c)
  ))

  static readonly layer = Layer.effect(AppConfig, Effect.map(AppConfig.config, (c) => AppConfig.of(c)))

  static readonly layerWith = (overrides: Partial<AppConfigShape>) =>
    Layer.effect(AppConfig, Effect.map(AppConfig.config, (c) => AppConfig.of({ ...c, ...overrides })))
}
