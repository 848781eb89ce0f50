/**
 * Node configuration, read from environment variables (every variable is documented in README.md).
 * One place, so `anchord start`, `anchord dev` and the tests read the same names.
 */
import { Config, Context, Effect, Layer, Option, Redacted } from "effect"

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
  /** Trust `X-Forwarded-For` for the client address (only behind a proxy you control). */
  readonly trustProxy: boolean
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

export class AppConfig extends Context.Service<AppConfig, AppConfigShape>()("anchord/AppConfig") {
  static readonly config = Config.all({
    databaseUrl: Config.option(Config.Redacted("DATABASE_URL")),
    dataDir: Config.String("ANCHORD_DATA_DIR").pipe(Config.withDefault(".anchord")),
    host: Config.String("HOST").pipe(Config.withDefault("127.0.0.1")),
    port: Config.Port("PORT").pipe(Config.withDefault(8080)),
    baseUrl: Config.option(Config.String("PUBLIC_URL")),
    maxBodyBytes: Config.Int("MAX_BODY_BYTES").pipe(Config.withDefault(1024 * 1024)),
    redisUrl: Config.option(Config.Redacted("REDIS_URL")),
    anonymousRatePerSecond: Config.Int("ANON_RATE_LIMIT_PER_SECOND").pipe(Config.withDefault(10)),
    authCacheMillis: Config.Int("AUTH_CACHE_MS").pipe(Config.withDefault(1000)),
    ingestMaxBatch: Config.Int("INGEST_MAX_BATCH").pipe(Config.withDefault(512)),
    ingestWriters: Config.Int("INGEST_WRITERS").pipe(Config.withDefault(1)),
    ingestFastPath: Config.Boolean("INGEST_FAST_PATH").pipe(Config.withDefault(true)),
    trustProxy: Config.Boolean("TRUST_PROXY").pipe(Config.withDefault(false)),
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
    httpMaxBodyBytesInFlight: Config.Int("HTTP_MAX_BODY_BYTES_IN_FLIGHT").pipe(Config.withDefault(256 * 1024 * 1024))
  })

  static readonly layer = Layer.effect(AppConfig, Effect.map(AppConfig.config, (c) => AppConfig.of(c)))

  static readonly layerWith = (overrides: Partial<AppConfigShape>) =>
    Layer.effect(AppConfig, Effect.map(AppConfig.config, (c) => AppConfig.of({ ...c, ...overrides })))
}
