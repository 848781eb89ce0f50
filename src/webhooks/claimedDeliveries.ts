/**
 * The claim path of `webhook_deliveries` (./DeliveryClaims.ts composes it): claiming due deliveries under a lease
 * with a per-host cap, storing first renderings, recording outcomes on the retry ladder, and when the next
 * delivery or fan-out is due. The rows created by the `events` trigger and the failed first attempts of chunks
 * take this path.
 */
import { Clock, Effect, Schema } from "effect"
import { type SqlError, SqlSchema } from "effect/sql"
import { clockNow, type DispatcherSql } from "./dispatcherSql.ts"
import { StableHeaders } from "./payload.ts"
import { inOverlap } from "./rotation.ts"
import { rowDefects } from "../db/rows.ts"
import { DeliveryMode, DeliveryState, Environment } from "./rows.ts"

/** A claimed delivery, ready to send once rendered (`seq` is the table's key as text). */
export const Claimed = Schema.Struct({
  seq: Schema.String,
  id: Schema.String,
  accountId: Schema.String,
  /** Its event's record (none for a webhook.test event). */
  recordId: Schema.NullOr(Schema.String),
  url: Schema.String,
  /** The receiver (host[:port], lowercase): the unit of the per-host cap. */
  host: Schema.String,
  environment: Environment,
  attempts: Schema.Number,
  round: Schema.Number,
  body: Schema.NullOr(Schema.String),
  signature: Schema.NullOr(Schema.String),
  signatureNext: Schema.NullOr(Schema.String),
  headers: Schema.NullOr(StableHeaders),
  /**
   * The secrets of the delivery's environment as of this claim, for the Standard Webhooks signature (made per attempt, over
   * the attempt's timestamp): the newest, and the previous one during a rotation overlap.
   */
  secret: Schema.String,
  secretPrevious: Schema.NullOr(Schema.String),
  /** How the delivery's environment sends (./batch.ts): one by one, or batched with its receiver's other events. */
  deliveryMode: DeliveryMode,
  batchMaxEvents: Schema.Number,
  batchMaxWaitMs: Schema.Number
})
export type Claimed = typeof Claimed.Type

/** A delivery's first rendering, as stored on its row. */
export const Rendering = Schema.Struct({
  seq: Schema.String,
  body: Schema.String,
  signature: Schema.String,
  signatureNext: Schema.NullOr(Schema.String),
  headers: StableHeaders
})
export type Rendering = typeof Rendering.Type

/** The outcome of a claimed attempt. */
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

/** A claimed delivery's state after an outcome. */
const CompletionResult = Schema.Struct({ seq: Schema.String, state: DeliveryState, nextAttemptAt: Schema.NullOr(Schema.Date) })
export type CompletionResult = typeof CompletionResult.Type

const WaitRow = Schema.Struct({ wait: Schema.NullOr(Schema.Number) })

/** DeliveryClaims' claim, saveRendered, complete and nextDueMillis (documented on its interface). */
export const makeClaimedDeliveries = ({ asyncCommit, seqArray, sql }: DispatcherSql) => {
  const claimDue = SqlSchema.findAll({
    Request: Schema.Struct({
      limit: Schema.Number,
      nodeId: Schema.String,
      token: Schema.String,
      perHost: Schema.Number,
      now: Schema.Date,
      until: Schema.Date
    }),
    Result: Claimed,
    execute: ({ limit, nodeId, now, perHost, token, until }) =>
      sql`
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
        FROM async_commit, webhook_settings s
        -- ARRAY(...): primary-key lookups, never a join that scans the whole (ever-growing) table;
        -- the secrets of the delivery's environment
        WHERE d.seq = ANY (ARRAY(SELECT seq FROM due)) AND s.account_id = d.account_id AND s.environment = d.environment
        RETURNING d.seq::text AS seq, d.id, d.account_id, d.record_id, d.url, d.host, d.environment, d.attempts, d.round, d.body, d.signature,
          d.signature_next, d.headers, s.secret, s.delivery_mode, s.batch_max_events, s.batch_max_wait_ms,
          -- the rotation overlap rule of rotation.ts, on the Clock's time
          CASE WHEN ${inOverlap(sql, now, "s")} THEN s.previous_secret END AS secret_previous`
  })

  // A batch goes as one jsonb parameter (`values`, built by the method from its typed items) and its seqs as
  // one bigint[] (`seqs`): one statement text whatever the batch's size, and no per-item encoding pass.
  const storeRendered = SqlSchema.findAll({
    Request: Schema.Struct({ values: Schema.String, seqs: Schema.Array(Schema.String) }),
    Result: Rendering,
    execute: ({ seqs, values }) =>
      sql`
        UPDATE webhook_deliveries d SET
          body = COALESCE(d.body, v.body),
          signature = CASE WHEN d.body IS NULL THEN v.signature ELSE d.signature END,
          signature_next = CASE WHEN d.body IS NULL THEN v.signature_next ELSE d.signature_next END,
          headers = COALESCE(d.headers, v.headers)
        FROM jsonb_to_recordset(${values}::jsonb) AS v(seq bigint, body text, signature text, signature_next text, headers jsonb)
        WHERE d.seq = v.seq AND d.seq = ANY (${seqArray(seqs)})
          -- a delivery cancelled by a hard delete while it was being rendered keeps no body (and is not sent)
          AND NOT (d.erased AND d.state <> 'PENDING')
        RETURNING d.seq::text AS seq, d.body, d.signature, d.signature_next, d.headers`
  })

  const recordOutcomes = SqlSchema.findAll({
    Request: Schema.Struct({ values: Schema.String, seqs: Schema.Array(Schema.String), nodeId: Schema.String, now: Schema.Date }),
    Result: CompletionResult,
    execute: ({ nodeId, now, seqs, values }) =>
      sql`
        WITH async_commit AS (${asyncCommit}), v AS (
          SELECT v.* FROM async_commit, jsonb_to_recordset(${values}::jsonb) AS v(seq bigint, token text, round int, attempt int, started_at timestamptz, status_code int,
            latency_ms int, error text, ok boolean, retry_ms bigint)
        ), moved AS (
          UPDATE webhook_deliveries d SET
            attempts = v.attempt + 1,
            state = CASE WHEN v.ok THEN 'SUCCEEDED' WHEN v.retry_ms IS NULL THEN 'FAILED' ELSE 'PENDING' END,
            next_attempt_at = CASE WHEN v.ok OR v.retry_ms IS NULL THEN NULL
              ELSE ${now}::timestamptz + v.retry_ms * interval '1 millisecond' END,
            last_status_code = v.status_code, last_error = v.error,
            locked_until = NULL, locked_by = NULL, claim_token = NULL,
            delivered_at = CASE WHEN v.ok THEN ${now}::timestamptz ELSE d.delivered_at END,
            -- the successful attempt lives here, not in webhook_attempts (which logs failures only)
            success_started_at = CASE WHEN v.ok THEN v.started_at END,
            success_latency_ms = CASE WHEN v.ok THEN v.latency_ms END,
            success_node_id = CASE WHEN v.ok THEN ${nodeId} END,
            updated_at = ${now}
          FROM v
          -- Primary-key lookups only. Written d.state = 'PENDING' the test matched the predicate of the
          -- partial index webhook_deliveries_due, which the planner then walked whole (every PENDING row: all
          -- nodes' claims in flight, waiting retries, dead entries not yet vacuumed) to filter by seq: a cost
          -- per statement that grew with the backlog, not with the outcomes (docs/benchmarks.md).
          -- IS TRUE keeps the test without implying that predicate. (The token alone would do: every
          -- statement moving a row out of PENDING clears it.)
          WHERE d.seq = v.seq AND d.seq = ANY (${seqArray(seqs)})
            AND d.claim_token = v.token AND (d.state = 'PENDING') IS TRUE
          RETURNING d.seq, d.state, d.next_attempt_at
        ), logged AS (
          -- failed attempts, and any attempt whose claim was lost (it happened; the row did not take it)
          INSERT INTO webhook_attempts (delivery_seq, round, attempt, started_at, status_code, latency_ms, error, retry_in_ms, node_id)
          SELECT seq, round, attempt, started_at, status_code, latency_ms, error, CASE WHEN ok THEN NULL ELSE retry_ms END, ${nodeId}
          FROM v WHERE NOT v.ok OR v.seq NOT IN (SELECT seq FROM moved)
        )
        SELECT seq::text AS seq, state, next_attempt_at FROM moved`
  })

  const nextDue = SqlSchema.findOne({
    Request: Schema.Date,
    Result: WaitRow,
    execute: (now) =>
      sql`
        -- events waiting to be fanned out are due now; a leased chunk is due when its lease expires (a crashed
        -- node's); LEAST ignores NULL, and without either the answer is null, not 0 ("due now")
        SELECT CASE WHEN EXISTS (SELECT 1 FROM webhook_fanouts WHERE locked_until IS NULL OR locked_until <= ${now}) THEN 0
          WHEN x.m IS NOT NULL THEN GREATEST(0, CEIL(EXTRACT(EPOCH FROM (x.m - ${now}::timestamptz)) * 1000))::int END AS wait
        FROM (SELECT LEAST((SELECT min(next_attempt_at) FROM webhook_deliveries WHERE state = 'PENDING'),
          (SELECT min(locked_until) FROM webhook_fanouts)) AS m) x`
  })

  const claim = Effect.fnUntraced(function*(limit: number, leaseMillis: number, nodeId: string, token: string, perHost: number) {
    const ms = yield* Clock.currentTimeMillis
    return yield* rowDefects(claimDue({ limit, nodeId, token, perHost, now: new Date(ms), until: new Date(ms + leaseMillis) }))
  })

  const saveRendered = Effect.fnUntraced(function*(items: ReadonlyArray<Rendering>) {
    if (items.length === 0) return []
    const values = JSON.stringify(items.map((item) => ({
      seq: item.seq,
      body: item.body,
      signature: item.signature,
      signature_next: item.signatureNext,
      headers: item.headers
    })))
    return yield* rowDefects(storeRendered({ values, seqs: items.map((item) => item.seq) }))
  })

  const complete = Effect.fnUntraced(function*(items: ReadonlyArray<Completion>, nodeId: string) {
    if (items.length === 0) return []
    const now = yield* clockNow
    const values = JSON.stringify(items.map((item) => ({
      seq: item.seq,
      token: item.token,
      round: item.round,
      attempt: item.attempt,
      started_at: item.startedAt.toISOString(),
      status_code: item.statusCode,
      latency_ms: item.latencyMs,
      error: item.error,
      ok: item.ok,
      retry_ms: item.retryInMillis
    })))
    return yield* rowDefects(recordOutcomes({ values, seqs: items.map((item) => item.seq), nodeId, now }))
  })

  const nextDueMillis: Effect.Effect<number | null, SqlError.SqlError> = Effect.flatMap(clockNow, (now) =>
    nextDue(now).pipe(
      // an aggregate's one row
      Effect.catchTag("NoSuchElementError", Effect.die),
      rowDefects,
      Effect.map((row) => row.wait)
    ))

  return { claim, saveRendered, complete, nextDueMillis }
}
