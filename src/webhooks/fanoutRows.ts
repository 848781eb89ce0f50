/**
 * The statements on `webhook_fanouts`, the rows the `batch_events` trigger writes (a batch event and up to 128 of its
 * records with a receiver, each with its host): the fan-out (./fanOut.ts) reads and leases them, the chunk outcomes
 * (./chunkOutcomes.ts) check the lease and delete the row.
 */
import { Schema } from "effect"
import { SqlSchema } from "effect/sql"
import { type DispatcherSql, TextArrayJson } from "./dispatcherSql.ts"

/** Fan-out rows one step looks at. */
const FANOUT_ROWS = 8

/** A `webhook_fanouts` row one fan-out step looks at. */
export const FanoutRow = Schema.Struct({ id: Schema.String, batchEventId: Schema.String, recordIds: TextArrayJson, hosts: TextArrayJson })
export type FanoutRow = typeof FanoutRow.Type

const IdRow = Schema.Struct({ id: Schema.String })

const FanoutRecords = { id: Schema.String, recordIds: Schema.Array(Schema.String), hosts: Schema.Array(Schema.String) }
const Lease = { until: Schema.Date, nodeId: Schema.String, token: Schema.String }

export const makeFanoutRows = ({ sql, textArray }: DispatcherSql) => {
  // Several rows: the records of receivers at their cap stay in their rows (in order) while those
  // of the others, in rows behind them, go on. Leased rows are skipped until their lease expires.
  const leasableFanouts = SqlSchema.findAll({
    Request: Schema.Date,
    Result: FanoutRow,
    execute: (now) =>
      sql`
        SELECT id::text AS id, batch_event_id::text AS batch_event_id, array_to_json(record_ids)::text AS record_ids,
          array_to_json(hosts)::text AS hosts
        FROM webhook_fanouts WHERE locked_until IS NULL OR locked_until <= ${now}
        ORDER BY webhook_fanouts.id LIMIT ${FANOUT_ROWS} FOR UPDATE SKIP LOCKED`
  })

  const deleteFanout = SqlSchema.void({
    Request: Schema.String,
    execute: (id) => sql`DELETE FROM webhook_fanouts WHERE id = ${id}::bigint`
  })

  /** A fan-out row whose records are all taken: leased whole, as the chunk. */
  const leaseFanout = SqlSchema.void({
    Request: Schema.Struct({ ...FanoutRecords, ...Lease }),
    execute: ({ hosts, id, nodeId, recordIds, token, until }) =>
      sql`
        UPDATE webhook_fanouts SET record_ids = ${textArray(recordIds)}, hosts = ${textArray(hosts)},
          locked_until = ${until}, locked_by = ${nodeId}, claim_token = ${token}
        WHERE id = ${id}::bigint`
  })

  /** A fan-out row keeps the records that wait (their receivers at their cap). */
  const keepInFanout = SqlSchema.void({
    Request: Schema.Struct(FanoutRecords),
    execute: ({ hosts, id, recordIds }) =>
      sql`UPDATE webhook_fanouts SET record_ids = ${textArray(recordIds)}, hosts = ${textArray(hosts)} WHERE id = ${id}::bigint`
  })

  /** The records taken from a row of which others wait: a row of their own, leased, the chunk. */
  const splitFanout = SqlSchema.findOne({
    Request: Schema.Struct({ batchEventId: Schema.String, recordIds: FanoutRecords.recordIds, hosts: FanoutRecords.hosts, ...Lease }),
    Result: IdRow,
    execute: ({ batchEventId, hosts, nodeId, recordIds, token, until }) =>
      sql`
        INSERT INTO webhook_fanouts (batch_event_id, record_ids, hosts, locked_until, locked_by, claim_token)
        VALUES (${batchEventId}::bigint, ${textArray(recordIds)}, ${textArray(hosts)}, ${until}, ${nodeId}, ${token})
        RETURNING id::text AS id`
  })

  /** The records still leased to us (a hard delete takes its record out of the row; a lost lease, all). */
  const heldRecords = SqlSchema.findOneOption({
    Request: Schema.Struct({ fanoutId: Schema.String, token: Schema.String }),
    Result: Schema.Struct({ recordIds: TextArrayJson }),
    execute: ({ fanoutId, token }) =>
      sql`
        SELECT array_to_json(record_ids)::text AS record_ids FROM webhook_fanouts
        WHERE id = ${fanoutId}::bigint AND claim_token = ${token} FOR UPDATE`
  })

  return { leasableFanouts, deleteFanout, leaseFanout, keepInFanout, splitFanout, heldRecords }
}

export type FanoutRows = ReturnType<typeof makeFanoutRows>
