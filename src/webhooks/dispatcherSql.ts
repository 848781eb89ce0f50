/**
 * SQL pieces shared by the dispatcher's statements (./DeliveryClaims.ts and the files it composes: the claim
 * path, rendering inputs, the fan-out, chunk outcomes). Built once per layer from its `SqlClient`.
 */
import { Clock, Effect, Schema } from "effect"
import type { SqlClient, Statement } from "effect/sql"

/** The Clock's time as a Date: leases, the ladder and the rotation overlap read it, not PostgreSQL's now(). */
export const clockNow = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

/** `text[]` columns read as JSON text (`array_to_json(…)::text`) and parsed once, here. */
export const TextArrayJson = Schema.fromJsonString(Schema.Array(Schema.String))

/**
 * The receiver's authority (host[:port], lowercase) of a URL: the triggers' own function (`anchord_url_host`),
 * for the deliveries the node inserts itself.
 */
export const hostPortSql = (sql: SqlClient.SqlClient, url: Statement.Fragment): Statement.Fragment => sql`anchord_url_host(${url})`

export const makeDispatcherSql = (sql: SqlClient.SqlClient) => ({
  sql,
  /**
   * Claims and outcomes commit without waiting for the WAL flush: a claim lost in a crash only
   * delays an attempt until its lease would have expired anyway, and a lost outcome only means
   * the delivery is sent again (at-least-once). Bodies and signatures (saveRendered) stay durable.
   */
  asyncCommit: sql`SELECT set_config('synchronous_commit', 'off', true)`,
  /** Seqs as one `bigint[]` parameter (its text form): one statement text whatever their number. */
  seqArray: (seqs: ReadonlyArray<string>) => sql`${`{${seqs.join(",")}}`}::bigint[]`,
  /** A fan-out row's arrays from JSON text (a jsonb parameter), as the columns take them. */
  textArray: (values: ReadonlyArray<string>) => sql`ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(values)}::jsonb))`
})

/** The client and the shared pieces, as each part of DeliveryClaims takes them. */
export type DispatcherSql = ReturnType<typeof makeDispatcherSql>
