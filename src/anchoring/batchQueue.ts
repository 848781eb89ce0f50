/**
 * A network's queue as the batcher reads it: which records it claims (`claimScope`), where the queue starts
 * (its cursor in `queue_cursors`), its head (a look at its size, or the rows a cut claims) and where the
 * cursor moves after a cut. Statements built once per layer from its `SqlClient` (`batchQueue`).
 */
import { Effect, Option, Schema } from "effect"
import { type SqlClient, SqlSchema } from "effect/sql"
import { rowDefects } from "../db/rows.ts"
import { Environment } from "./model.ts"

/**
 * The records a network's batcher claims: its own; with `hybridEnvironment` (the Fabric network of an
 * environment), also that environment's hybrid records, whose `network_id` is their EVM network.
 */
const claimScope = (sql: SqlClient.SqlClient, networkId: string, hybridEnvironment: Environment | undefined) =>
  hybridEnvironment === undefined
    ? sql`r.network_id = ${networkId}`
    : sql`(r.network_id = ${networkId} OR (r.chain_type = 'hybrid' AND r.environment = ${hybridEnvironment}))`

/**
 * The queue's records not yet in a batch of this network, as a per-row probe of `anchors`. Written as a
 * scalar subquery, not NOT EXISTS: PostgreSQL turns NOT EXISTS into an anti-join, and once `anchors`
 * and the queue are large (a backlog) it chose a merge anti-join over the whole `records` primary key
 * and all of the network's anchors, so one look at the queue took 0.5 s to 49 s and the batcher
 * stalled. The probe keeps the statement walking the queue index in id order, reading only the rows
 * it returns (docs/benchmarks.md, 2026-11-25 night).
 */
const notYetInBatchOf = (sql: SqlClient.SqlClient, networkId: string) =>
  sql`(SELECT true FROM anchors a WHERE a.record_id = r.id AND a.network_id = ${networkId}) IS NULL`

/**
 * Where a network's queue starts (`queue_cursors`): records before it, in
 * (insert_xid, id) order, are in a batch of the network or not in its scope. Records are never updated
 * when cut, so the queue is read from here, in the order of the index `records_queue`, each record probed
 * for the network's anchor; the cursor then moves to where the cut stopped (`nextCursor`).
 */
interface Cursor {
  readonly xid: string
  readonly id: string
}
const CursorRow = Schema.Struct({ xid: Schema.String, id: Schema.String })

/** The first `max` records of a network's queue, in the order a cut takes them: the look and the claim read the same rows. */
const queueHead = (sql: SqlClient.SqlClient, networkId: string, max: number, hybridEnvironment: Environment | undefined, from: Cursor) =>
  sql`FROM records r
    WHERE r.status = 'QUEUED' AND (r.insert_xid, r.id) >= (${from.xid}::numeric, ${from.id})
      AND ${claimScope(sql, networkId, hybridEnvironment)} AND ${notYetInBatchOf(sql, networkId)}
    ORDER BY r.insert_xid, r.id LIMIT ${max}`

/**
 * Where the queue starts after a cut that took `claimed` (in queue order) of at most `max`, its snapshot
 * having every transaction before `horizon` finished: all it saw before its last record was taken. Never
 * past `horizon`: a record of a transaction still in flight then commits later, behind the records taken.
 */
export const nextCursor = (claimed: ReadonlyArray<{ readonly xid: string; readonly id: string }>, max: number, horizon: string): Cursor => {
  const last = claimed[claimed.length - 1]
  if (last === undefined || claimed.length < max || BigInt(last.xid) >= BigInt(horizon)) return { xid: horizon, id: "" }
  return { xid: last.xid, id: last.id }
}

const QueueRow = Schema.Struct({ count: Schema.Number, oldest: Schema.NullOr(Schema.Date) })
const ClaimedRow = Schema.Struct({ id: Schema.String, hash: Schema.String, xid: Schema.String, horizon: Schema.String })

/** The head of a network's queue from a cursor (`queueHead`): its size and oldest, or the rows a cut claims. */
const QueueRequest = Schema.Struct({
  networkId: Schema.String,
  max: Schema.Number,
  hybridEnvironment: Schema.optional(Environment),
  from: CursorRow
})

/** The queue's statements over the layer's client, built once by the layer that runs them. */
export const batchQueue = (sql: SqlClient.SqlClient) => {
  const ensureCursor = SqlSchema.void({
    Request: Schema.Struct({ networkId: Schema.String, hybridEnvironment: Schema.optional(Environment) }),
    execute: ({ hybridEnvironment, networkId }) =>
      sql`
    INSERT INTO queue_cursors (network_id, after_xid, after_id)
    SELECT ${networkId}, q.x, q.id FROM (
      (SELECT r.insert_xid AS x, r.id FROM records r
       WHERE r.status = 'QUEUED' AND ${claimScope(sql, networkId, hybridEnvironment)} AND ${notYetInBatchOf(sql, networkId)}
       ORDER BY r.insert_xid, r.id LIMIT 1)
      UNION ALL SELECT pg_snapshot_xmin(pg_current_snapshot())::text::numeric, ''
      ORDER BY 1, 2 LIMIT 1) q
    WHERE NOT EXISTS (SELECT 1 FROM queue_cursors WHERE network_id = ${networkId})
    ON CONFLICT (network_id) DO NOTHING`
  })
  const findCursor = SqlSchema.findOneOption({
    Request: Schema.Struct({ networkId: Schema.String, lock: Schema.Boolean }),
    Result: CursorRow,
    execute: ({ lock, networkId }) =>
      sql`SELECT after_xid::text AS xid, after_id AS id FROM queue_cursors WHERE network_id = ${networkId}
          ${lock ? sql`FOR UPDATE` : sql``}`
  })
  const moveCursor = SqlSchema.void({
    Request: Schema.Struct({ networkId: Schema.String, to: CursorRow }),
    execute: ({ networkId, to }) => sql`UPDATE queue_cursors SET after_xid = ${to.xid}::numeric, after_id = ${to.id} WHERE network_id = ${networkId}`
  })
  const findQueue = SqlSchema.findOne({
    Request: QueueRequest,
    Result: QueueRow,
    execute: ({ from, hybridEnvironment, max, networkId }) =>
      sql`
          SELECT count(*)::int AS count, min(created_at) AS oldest FROM (
            SELECT r.created_at ${queueHead(sql, networkId, max, hybridEnvironment, from)}
          ) q`
  })
  const findClaimed = SqlSchema.findAll({
    Request: QueueRequest,
    Result: ClaimedRow,
    execute: ({ from, hybridEnvironment, max, networkId }) =>
      sql`
            SELECT r.id, r.hash, r.insert_xid::text AS xid, pg_snapshot_xmin(pg_current_snapshot())::text AS horizon
            ${queueHead(sql, networkId, max, hybridEnvironment, from)}`
  })
  return {
    /**
     * A network's queue cursor, made if it has none: at its first queued record (one walk of the index,
     * once in the database's life), never past a transaction in flight. Made at a batcher's first look,
     * and at every node's start for the networks its ingest assigns (src/records/Ingest.ts): records of a
     * network no batcher serves then still count as QUEUED (`mayBeQueued`, src/anchoring/recordState.ts).
     */
    ensureCursor: (networkId: string, hybridEnvironment?: Environment) => rowDefects(ensureCursor({ networkId, hybridEnvironment })),
    /** The network's cursor (`lock`: FOR UPDATE); the queue's start when it has none. */
    readCursor: (networkId: string, lock: boolean) =>
      findCursor({ networkId, lock }).pipe(
        rowDefects,
        Effect.map(Option.getOrElse((): Cursor => ({ xid: "0", id: "" })))
      ),
    moveCursor: (networkId: string, to: Cursor) => rowDefects(moveCursor({ networkId, to })),
    /** The size and oldest record of the queue's head from `from`. */
    look: (request: typeof QueueRequest.Type) => rowDefects(findQueue(request)),
    /** The records of the queue's head from `from`, in queue order, with the snapshot's horizon. */
    claim: (request: typeof QueueRequest.Type) => rowDefects(findClaimed(request))
  }
}
