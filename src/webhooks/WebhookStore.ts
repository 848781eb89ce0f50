/**
 * The webhook tables: global settings and secrets of an account, the delivery log, and the
 * dispatcher's claims. SQL errors are defects here (the gateway answers 503 for an outage).
 *
 * Why a table of our own rather than `PersistedQueue`: deliveries are created by a trigger on the
 * `events` outbox (same transaction as any producer's state change, producers need no code), and
 * the delivery log the API serves is the same row that carries the retry state.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { PgClient } from "@effect/sql-pg"
import type { Environment } from "../auth/apiKeys.ts"
import { parseStrictJson } from "../records/canonical/strictJson.ts"
import type { EventKind, RenderInput, StableHeaders } from "./payload.ts"
import { newWebhookSecret } from "./standard.ts"

/** LISTEN/NOTIFY channel of the dispatcher (the deliveries trigger of migration 0003 notifies it too). */
export const WEBHOOK_CHANNEL = "anchord_webhooks"

export { newWebhookSecret }

/** The old secret keeps signing x-webhook-signature this long after a rotation, unless confirmed. */
export const ROTATION_OVERLAP_SQL = "interval '24 hours'"

export interface WebhookSettingsRow {
  readonly url: string | null
  readonly events: ReadonlyArray<string>
  readonly payloadFormat: "multichain" | "envelope"
  readonly enabled: boolean
  readonly secret: string
  readonly rotationStartedAt: Date | null
  readonly previousSecretExpiresAt: Date | null
}

export interface DeliveryRow {
  readonly seq: string
  readonly id: string
  readonly eventId: string
  readonly kind: EventKind
  readonly recordId: string
  readonly environment: Environment
  readonly target: "record" | "account"
  readonly url: string
  readonly state: "PENDING" | "SUCCEEDED" | "FAILED"
  readonly round: number
  readonly attempts: number
  readonly nextAttemptAt: Date | null
  readonly lastStatusCode: number | null
  readonly lastError: string | null
  readonly createdAt: Date
  readonly deliveredAt: Date | null
}

export interface AttemptRow {
  readonly deliverySeq: string
  readonly round: number
  readonly attempt: number
  readonly startedAt: Date
  readonly statusCode: number | null
  readonly latencyMs: number
  readonly error: string | null
  readonly retryInMs: number | null
}

/** A claimed delivery, ready to send once rendered. */
export interface Claimed {
  readonly seq: string
  readonly id: string
  readonly url: string
  readonly environment: Environment
  readonly attempts: number
  readonly round: number
  readonly body: string | null
  readonly signature: string | null
  readonly signatureNext: string | null
  readonly headers: StableHeaders | null
  /**
   * The account's secrets as of this claim, for the Standard Webhooks signature (made per attempt, over
   * the attempt's timestamp): the newest, and the previous one during a rotation overlap.
   */
  readonly secret: string
  readonly secretPrevious: string | null
}

export interface Rendering {
  readonly seq: string
  readonly body: string
  readonly signature: string
  readonly signatureNext: string | null
  readonly headers: StableHeaders
}

export interface Completion {
  readonly seq: string
  readonly token: string
  readonly round: number
  readonly attempt: number
  readonly startedAt: Date
  readonly statusCode: number | null
  readonly latencyMs: number
  readonly error: string | null
  readonly ok: boolean
  /** Delay before the next attempt when this one failed and another remains. */
  readonly retryInMillis: number | null
}

export interface CompletionResult {
  readonly seq: string
  readonly state: "PENDING" | "SUCCEEDED" | "FAILED"
  readonly nextAttemptAt: Date | null
}

const parseObject = (text: string | null): Record<string, unknown> | null => {
  if (text === null) return null
  let value: unknown
  try {
    // PostgreSQL's own jsonb output: deep nesting allowed (metadata inside `changes` adds levels).
    value = parseStrictJson(text, { maxDepth: 10_000 })
  } catch {
    value = JSON.parse(text)
  }
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : null
}

/** Whether an account (columns prefixed by `t`) is inside a rotation overlap at `now`, a placeholder of the Clock's time. */
const inOverlap = (now: string, t = "") =>
  `${t}webhook_secret_previous IS NOT NULL AND ${t}webhook_secret_rotated_at > ${now}::timestamptz - ${ROTATION_OVERLAP_SQL}`

const settingsColumns = (now: string) => `
  webhook_url AS url, webhook_events AS events, webhook_format AS payload_format, webhook_enabled AS enabled,
  webhook_secret AS secret,
  CASE WHEN ${inOverlap(now)} THEN webhook_secret_rotated_at END AS rotation_started_at,
  CASE WHEN ${inOverlap(now)} THEN webhook_secret_rotated_at + ${ROTATION_OVERLAP_SQL} END AS previous_secret_expires_at`

const deliveryColumns = `
  d.seq::text AS seq, d.id, d.event_id, e.kind, d.record_id, d.environment, d.target, d.url, d.state, d.round, d.attempts,
  d.next_attempt_at, d.last_status_code, d.last_error, d.created_at, d.delivered_at`

export class WebhookStore extends Context.Service<WebhookStore, {
  readonly settings: (accountId: string) => Effect.Effect<WebhookSettingsRow>
  readonly updateSettings: (accountId: string, patch: {
    readonly url?: string | null | undefined
    readonly events?: ReadonlyArray<string> | undefined
    readonly payloadFormat?: "multichain" | "envelope" | undefined
    readonly enabled?: boolean | undefined
  }) => Effect.Effect<WebhookSettingsRow>
  /** A new secret; the current one keeps signing x-webhook-signature for the overlap. */
  readonly rotate: (accountId: string) => Effect.Effect<WebhookSettingsRow>
  /** Ends the overlap now: the newest secret signs x-webhook-signature from the next delivery on. */
  readonly confirmRotation: (accountId: string) => Effect.Effect<WebhookSettingsRow>
  readonly listDeliveries: (owner: { accountId: string; environment: Environment }, options: {
    readonly limit: number
    readonly before?: string | undefined
    readonly state?: string | undefined
    readonly recordId?: string | undefined
    readonly eventId?: string | undefined
  }) => Effect.Effect<ReadonlyArray<DeliveryRow>>
  readonly getDelivery: (owner: { accountId: string; environment: Environment }, id: string) => Effect.Effect<DeliveryRow | undefined>
  readonly attemptsOf: (seqs: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<AttemptRow>>
  /** A new round of attempts (0..5) starting now, re-rendered with the account's current settings. */
  readonly redeliver: (owner: { accountId: string; environment: Environment }, id: string) => Effect.Effect<DeliveryRow | undefined>
  /**
   * Retention: deletes up to `limit` finished deliveries (SUCCEEDED / FAILED, not claimed) last changed
   * before `before`, with their attempt logs, in one statement. The number deleted. Events stay: they
   * are the records' history and later payloads are rendered from them.
   */
  readonly purgeFinished: (before: Date, limit: number) => Effect.Effect<number>
  /**
   * Claims up to `limit` due deliveries, skipping receivers (host:port) that already have `perHost`
   * attempts in flight across all nodes (a soft cap: one claim may add up to `limit` more).
   */
  readonly claim: (limit: number, leaseMillis: number, nodeId: string, token: string, perHost: number) => Effect.Effect<ReadonlyArray<Claimed>>
  readonly renderInputs: (seqs: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<RenderInput & { readonly seq: string }>>
  /** Stores bodies rendered for the first time; returns what is stored (a concurrent render may have won). */
  readonly saveRendered: (items: ReadonlyArray<Rendering>) => Effect.Effect<ReadonlyArray<Rendering>>
  readonly complete: (items: ReadonlyArray<Completion>, nodeId: string) => Effect.Effect<ReadonlyArray<CompletionResult>>
  /** Milliseconds until the earliest pending delivery is due (0 if one is due now), null if none. */
  readonly nextDueMillis: Effect.Effect<number | null>
}>()("anchord/webhooks/WebhookStore") {
  static readonly layer = Layer.effect(
    WebhookStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const pg = yield* PgClient.PgClient

      /**
       * Claims and outcomes commit without waiting for the WAL flush: a claim lost in a crash only
       * delays an attempt until its lease would have expired anyway, and a lost outcome only means
       * the delivery is sent again (at-least-once). Bodies and signatures (saveRendered) stay durable.
       */
      const asyncCommit = sql`SELECT set_config('synchronous_commit', 'off', true)`

      /**
       * Leases, the retry ladder and the rotation overlap read time through Effect's Clock (passed to
       * the statements), not PostgreSQL's now(): one clock for the node and its tests (TestClock).
       * Nodes sharing a database must keep their clocks in sync (NTP): a skew shifts leases by as much.
       */
      const clockNow = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

      const settings = (accountId: string) =>
        Effect.flatMap(clockNow, (now) =>
          sql.unsafe<WebhookSettingsRow>(`SELECT ${settingsColumns("$2")} FROM accounts WHERE id = $1`, [accountId, now])).pipe(
          Effect.map((rows) => rows[0]),
          Effect.orDie
        )

      const getDelivery = (owner: { accountId: string; environment: Environment }, id: string) =>
        sql.unsafe<DeliveryRow>(
          `SELECT ${deliveryColumns} FROM webhook_deliveries d JOIN events e ON e.id = d.event_seq
           WHERE d.id = $1 AND d.account_id = $2 AND d.environment = $3`,
          [id, owner.accountId, owner.environment]
        ).pipe(Effect.map((rows) => rows[0]), Effect.orDie)

      return WebhookStore.of({
        settings,

        updateSettings: Effect.fn("WebhookStore.updateSettings")(function*(accountId, patch) {
          yield* sql.unsafe(`
            UPDATE accounts SET
              webhook_url = CASE WHEN $2 THEN $3 ELSE webhook_url END,
              webhook_events = CASE WHEN $4 THEN string_to_array($5, ',') ELSE webhook_events END,
              webhook_format = COALESCE($6, webhook_format),
              webhook_enabled = COALESCE($7::boolean, webhook_enabled)
            WHERE id = $1`, [
            accountId,
            patch.url !== undefined,
            patch.url ?? null,
            patch.events !== undefined,
            (patch.events ?? []).join(","),
            patch.payloadFormat ?? null,
            patch.enabled ?? null
          ]).pipe(Effect.orDie)
          return yield* settings(accountId)
        }),

        rotate: Effect.fn("WebhookStore.rotate")(function*(accountId) {
          // Inside an unconfirmed overlap the signing (previous) secret stays and the pending one is replaced;
          // the overlap is not extended.
          const now = yield* clockNow
          yield* sql.unsafe(`
            UPDATE accounts SET
              webhook_secret_previous = CASE WHEN ${inOverlap("$3")} THEN webhook_secret_previous ELSE webhook_secret END,
              webhook_secret_rotated_at = CASE WHEN ${inOverlap("$3")} THEN webhook_secret_rotated_at ELSE $3::timestamptz END,
              webhook_secret = $2
            WHERE id = $1`, [accountId, newWebhookSecret(), now]).pipe(Effect.orDie)
          return yield* settings(accountId)
        }),

        confirmRotation: Effect.fn("WebhookStore.confirmRotation")(function*(accountId) {
          yield* sql`
            UPDATE accounts SET webhook_secret_previous = NULL, webhook_secret_rotated_at = NULL
            WHERE id = ${accountId}`.pipe(Effect.orDie)
          return yield* settings(accountId)
        }),

        listDeliveries: (owner, options) => {
          const params: Array<unknown> = [owner.accountId, owner.environment, options.limit]
          const where: Array<string> = []
          const add = (clause: (n: number) => string, value: unknown) => {
            params.push(value)
            where.push(clause(params.length))
          }
          if (options.before !== undefined) add((n) => `d.seq < $${n}::bigint`, options.before)
          if (options.state !== undefined) add((n) => `d.state = $${n}`, options.state)
          if (options.recordId !== undefined) add((n) => `d.record_id = $${n}`, options.recordId)
          if (options.eventId !== undefined) add((n) => `d.event_id = $${n}`, options.eventId)
          return sql.unsafe<DeliveryRow>(
            `SELECT ${deliveryColumns} FROM webhook_deliveries d JOIN events e ON e.id = d.event_seq
             WHERE d.account_id = $1 AND d.environment = $2 ${where.map((w) => `AND ${w}`).join(" ")}
             ORDER BY d.seq DESC LIMIT $3`,
            params
          ).pipe(Effect.orDie)
        },

        getDelivery,

        attemptsOf: (seqs) =>
          seqs.length === 0
            ? Effect.succeed([])
            : sql.unsafe<AttemptRow>(
              `SELECT delivery_seq::text AS delivery_seq, round, attempt, started_at, status_code, latency_ms, error, retry_in_ms::float8 AS retry_in_ms
               FROM webhook_attempts WHERE delivery_seq = ANY(string_to_array($1, ',')::bigint[]) ORDER BY id`,
              [seqs.join(",")]
            ).pipe(Effect.orDie),

        purgeFinished: (before, limit) =>
          sql<{ n: number }>`
            WITH old AS (
              SELECT seq FROM webhook_deliveries
              WHERE state IN ('SUCCEEDED', 'FAILED') AND updated_at < ${before} AND locked_until IS NULL
              ORDER BY seq LIMIT ${limit}
              FOR UPDATE SKIP LOCKED
            ), attempts AS (
              DELETE FROM webhook_attempts WHERE delivery_seq IN (SELECT seq FROM old)
            ), gone AS (
              DELETE FROM webhook_deliveries WHERE seq IN (SELECT seq FROM old) RETURNING 1
            )
            SELECT count(*)::int AS n FROM gone`.pipe(Effect.map((rows) => rows[0]?.n ?? 0), Effect.orDie),

        redeliver: Effect.fn("WebhookStore.redeliver")(function*(owner, id) {
          const now = yield* clockNow
          const rows = yield* sql`
            UPDATE webhook_deliveries SET
              state = 'PENDING', round = round + 1, attempts = 0, next_attempt_at = ${now},
              locked_until = NULL, locked_by = NULL, claim_token = NULL,
              body = NULL, signature = NULL, signature_next = NULL, headers = NULL, updated_at = ${now}
            WHERE id = ${id} AND account_id = ${owner.accountId} AND environment = ${owner.environment}
            RETURNING id`.pipe(Effect.orDie)
          if (rows.length === 0) return undefined
          // The answer is the delivery as re-queued; read it before waking the dispatchers, which may
          // otherwise have sent it already by the time we read.
          const requeued = yield* getDelivery(owner, id)
          yield* pg.notify(WEBHOOK_CHANNEL, "").pipe(Effect.orDie)
          return requeued
        }),

        claim: (limit, leaseMillis, nodeId, token, perHost) =>
          Effect.flatMap(Clock.currentTimeMillis, (ms) => {
            const now = new Date(ms)
            const until = new Date(ms + leaseMillis)
            return sql<Claimed>`
            WITH async_commit AS (${asyncCommit}), busy AS (
              -- receivers already at their in-flight cap (claims of every node count)
              SELECT host FROM webhook_deliveries
              WHERE locked_until IS NOT NULL AND locked_until > ${now} AND state = 'PENDING'
              GROUP BY host HAVING count(*) >= ${perHost}
            ), due AS (
              SELECT seq FROM webhook_deliveries
              WHERE state = 'PENDING' AND next_attempt_at <= ${now} AND host NOT IN (SELECT host FROM busy)
              ORDER BY next_attempt_at
              LIMIT ${limit}
              FOR UPDATE SKIP LOCKED
            )
            UPDATE webhook_deliveries d SET
              next_attempt_at = ${until}, locked_until = ${until},
              locked_by = ${nodeId}, claim_token = ${token}, updated_at = ${now}
            FROM async_commit, accounts a
            -- ARRAY(...): primary-key lookups, never a join that scans the whole (ever-growing) table
            WHERE d.seq = ANY (ARRAY(SELECT seq FROM due)) AND a.id = d.account_id
            RETURNING d.seq::text AS seq, d.id, d.url, d.environment, d.attempts, d.round, d.body, d.signature,
              d.signature_next, d.headers, a.webhook_secret AS secret,
              CASE WHEN a.webhook_secret_previous IS NOT NULL
                AND a.webhook_secret_rotated_at > ${now}::timestamptz - ${sql.unsafe(ROTATION_OVERLAP_SQL)}
                THEN a.webhook_secret_previous END AS secret_previous`
          }).pipe(Effect.orDie),

        renderInputs: (seqs) =>
          Effect.flatMap(clockNow, (now) => sql.unsafe<{
            seq: string; eventId: string; kind: EventKind; payloadText: string; eventCreatedAt: Date
            format: "multichain" | "envelope"; secret: string; previous: string | null; overlap: boolean
            hash: string | null; packageMode: string | null; chainType: string | null; networkId: string | null
            metadataText: string | null; status: string | null; anchorPayloadText: string | null
          }>(`
            SELECT d.seq::text AS seq, e.event_id, e.kind, e.payload::text AS payload_text, e.created_at AS event_created_at,
              a.webhook_format AS format, a.webhook_secret AS secret, a.webhook_secret_previous AS previous,
              (${inOverlap("$2", "a.")}) AS overlap,
              r.hash, r.package_mode, r.chain_type, r.network_id, r.metadata::text AS metadata_text, r.status,
              prior.payload::text AS anchor_payload_text
            FROM webhook_deliveries d
            JOIN events e ON e.id = d.event_seq
            JOIN accounts a ON a.id = d.account_id
            LEFT JOIN records r ON r.id = e.record_id
            LEFT JOIN LATERAL (
              SELECT p.payload FROM events p
              WHERE p.record_id = e.record_id AND p.kind = 'anchor.confirmed' AND p.id < e.id
              ORDER BY p.id DESC LIMIT 1
            ) prior ON e.kind IN ('record.updated', 'record.deleted')
            WHERE d.seq = ANY(string_to_array($1, ',')::bigint[])`, [seqs.join(","), now])).pipe(
            // jsonb as text, parsed here: the client's name transform would otherwise rewrite the keys of
            // the client's own metadata (my_key → myKey).
            Effect.map((rows) =>
              rows.map((row) => {
                const useNext = row.overlap && row.previous !== null
                return {
                  seq: row.seq,
                  eventId: row.eventId,
                  kind: row.kind,
                  payload: parseObject(row.payloadText) ?? {},
                  eventCreatedAt: row.eventCreatedAt,
                  format: row.format,
                  signingSecret: useNext ? row.previous! : row.secret,
                  nextSecret: useNext ? row.secret : null,
                  record: {
                    hash: row.hash,
                    packageMode: row.packageMode,
                    chainType: row.chainType,
                    networkId: row.networkId,
                    metadata: parseObject(row.metadataText),
                    status: row.status
                  },
                  anchorPayload: parseObject(row.anchorPayloadText)
                }
              })
            ),
            Effect.orDie
          ),

        saveRendered: (items) =>
          items.length === 0 ? Effect.succeed([]) : sql<Rendering>`
            UPDATE webhook_deliveries d SET
              body = COALESCE(d.body, v.body),
              signature = CASE WHEN d.body IS NULL THEN v.signature ELSE d.signature END,
              signature_next = CASE WHEN d.body IS NULL THEN v.signature_next ELSE d.signature_next END,
              headers = COALESCE(d.headers, v.headers)
            FROM jsonb_to_recordset(${JSON.stringify(items.map((i) => ({
              seq: i.seq, body: i.body, signature: i.signature, signature_next: i.signatureNext, headers: i.headers
            })))}::jsonb) AS v(seq bigint, body text, signature text, signature_next text, headers jsonb)
            WHERE d.seq = v.seq AND d.seq = ANY (${`{${items.map((i) => i.seq).join(",")}}`}::bigint[])
            RETURNING d.seq::text AS seq, d.body, d.signature, d.signature_next, d.headers`.pipe(Effect.orDie),

        complete: (items, nodeId) =>
          items.length === 0 ? Effect.succeed([]) : Effect.flatMap(clockNow, (now) => sql<CompletionResult>`
            WITH async_commit AS (${asyncCommit}), v AS (
              SELECT v.* FROM async_commit, jsonb_to_recordset(${JSON.stringify(items.map((i) => ({
                seq: i.seq, token: i.token, round: i.round, attempt: i.attempt, started_at: i.startedAt.toISOString(),
                status_code: i.statusCode, latency_ms: i.latencyMs, error: i.error, ok: i.ok, retry_ms: i.retryInMillis
              })))}::jsonb) AS v(seq bigint, token text, round int, attempt int, started_at timestamptz, status_code int,
                latency_ms int, error text, ok boolean, retry_ms bigint)
            ), logged AS (
              INSERT INTO webhook_attempts (delivery_seq, round, attempt, started_at, status_code, latency_ms, error, retry_in_ms, node_id)
              SELECT seq, round, attempt, started_at, status_code, latency_ms, error, CASE WHEN ok THEN NULL ELSE retry_ms END, ${nodeId} FROM v
            )
            UPDATE webhook_deliveries d SET
              attempts = v.attempt + 1,
              state = CASE WHEN v.ok THEN 'SUCCEEDED' WHEN v.retry_ms IS NULL THEN 'FAILED' ELSE 'PENDING' END,
              next_attempt_at = CASE WHEN v.ok OR v.retry_ms IS NULL THEN NULL
                ELSE ${now}::timestamptz + v.retry_ms * interval '1 millisecond' END,
              last_status_code = v.status_code, last_error = v.error,
              locked_until = NULL, locked_by = NULL, claim_token = NULL,
              delivered_at = CASE WHEN v.ok THEN ${now}::timestamptz ELSE d.delivered_at END,
              updated_at = ${now}
            FROM v
            WHERE d.seq = v.seq AND d.seq = ANY (${`{${items.map((i) => i.seq).join(",")}}`}::bigint[])
              AND d.claim_token = v.token AND d.state = 'PENDING'
            RETURNING d.seq::text AS seq, d.state, d.next_attempt_at`).pipe(Effect.orDie),

        nextDueMillis: Effect.flatMap(clockNow, (now) => sql<{ wait: number | null }>`
          -- GREATEST ignores NULL: without pending deliveries it would answer 0 ("due now") instead of null
          SELECT CASE WHEN min(next_attempt_at) IS NOT NULL
            THEN GREATEST(0, CEIL(EXTRACT(EPOCH FROM (min(next_attempt_at) - ${now}::timestamptz)) * 1000))::int END AS wait
          FROM webhook_deliveries WHERE state = 'PENDING'`).pipe(
          Effect.map((rows) => rows[0]?.wait ?? null),
          Effect.orDie
        )
      })
    })
  )
}
