/**
 * The SQL of the transparency log's store (./LogStore.ts), one statement each, through SqlSchema. Sizes and
 * stored-hash indexes travel as float8 (exact far past the 2^48 leaves src/tlog handles), hashes as bytea.
 */
import { Schema } from "effect"
import { type SqlClient, SqlSchema } from "effect/sql"

const Hash = Schema.Uint8Array

const HeadRow = Schema.Struct({ size: Schema.Number, root: Hash })
export const RangeRow = Schema.Struct({
  batchId: Schema.String,
  networkId: Schema.String,
  start: Schema.Number,
  leafCount: Schema.Number,
  rootAfter: Hash,
  published: Schema.Boolean
})
const HashRow = Schema.Struct({ i: Schema.Number, h: Hash })
const EntryRow = Schema.Struct({ i: Schema.Number, hash: Schema.String })
const IdRow = Schema.Struct({ batchId: Schema.String })
export const CheckpointRow = Schema.Struct({
  networkId: Schema.String,
  size: Schema.Number,
  root: Hash,
  batchId: Schema.String,
  note: Schema.NullOr(Schema.String),
  createdAt: Schema.Date
})

const rangeColumns = (sql: SqlClient.SqlClient) => sql`batch_id::text AS batch_id, network_id, start::float8 AS start, leaf_count, root_after, published`

export const statements = (sql: SqlClient.SqlClient) => ({
  /** Makes the network's head (empty) if it has none; then locks it for the transaction. */
  ensureHead: SqlSchema.void({
    Request: Schema.Struct({ networkId: Schema.String, emptyRoot: Hash }),
    execute: ({ emptyRoot, networkId }) =>
      sql`INSERT INTO log_heads (network_id, size, root) VALUES (${networkId}, 0, ${emptyRoot}) ON CONFLICT (network_id) DO NOTHING`
  }),
  lockHead: SqlSchema.findOne({
    Request: Schema.String,
    Result: HeadRow,
    execute: (networkId) => sql`SELECT size::float8 AS size, root FROM log_heads WHERE network_id = ${networkId} FOR UPDATE`
  }),
  head: SqlSchema.findOneOption({
    Request: Schema.String,
    Result: HeadRow,
    execute: (networkId) => sql`SELECT size::float8 AS size, root FROM log_heads WHERE network_id = ${networkId}`
  }),
  setHead: SqlSchema.void({
    Request: Schema.Struct({ networkId: Schema.String, size: Schema.Number, root: Hash }),
    execute: ({ networkId, root, size }) => sql`UPDATE log_heads SET size = ${size}, root = ${root}, updated_at = now() WHERE network_id = ${networkId}`
  }),
  range: SqlSchema.findOneOption({
    Request: Schema.String,
    Result: RangeRow,
    execute: (batchId) => sql`SELECT ${rangeColumns(sql)} FROM log_batches WHERE batch_id = ${batchId}::bigint`
  }),
  /** The range that ends where `size` does (the batch whose checkpoint has that size). */
  rangeEndingAt: SqlSchema.findOneOption({
    Request: Schema.Struct({ networkId: Schema.String, size: Schema.Number }),
    Result: RangeRow,
    execute: ({ networkId, size }) => sql`SELECT ${rangeColumns(sql)} FROM log_batches WHERE network_id = ${networkId} AND start + leaf_count = ${size}::bigint`
  }),
  insertRange: SqlSchema.void({
    Request: Schema.Struct({
      batchId: Schema.String,
      networkId: Schema.String,
      start: Schema.Number,
      leafCount: Schema.Number,
      firstIndex: Schema.Number,
      hashes: Schema.Uint8Array,
      rootAfter: Hash
    }),
    execute: (r) =>
      sql`
      INSERT INTO log_batches (batch_id, network_id, start, leaf_count, first_index, hashes, root_after)
      VALUES (${r.batchId}::bigint, ${r.networkId}, ${r.start}, ${r.leafCount}, ${r.firstIndex}, ${r.hashes}, ${r.rootAfter})`
  }),
  /** Ranges from `start` on, deleted (newest last); a published one among them is refused by the caller first. */
  deleteFrom: SqlSchema.findAll({
    Request: Schema.Struct({ networkId: Schema.String, start: Schema.Number }),
    Result: IdRow,
    execute: ({ networkId, start }) =>
      sql`
      WITH gone AS (DELETE FROM log_batches WHERE network_id = ${networkId} AND start >= ${start} RETURNING batch_id, start)
      SELECT batch_id::text AS batch_id FROM gone ORDER BY start`
  }),
  publishedFrom: SqlSchema.findAll({
    Request: Schema.Struct({ networkId: Schema.String, start: Schema.Number }),
    Result: IdRow,
    execute: ({ networkId, start }) =>
      sql`SELECT batch_id::text AS batch_id FROM log_batches WHERE network_id = ${networkId} AND start >= ${start} AND published`
  }),
  /**
   * The stored hashes at these indexes: each from the batch whose run of stored indexes holds it (the one with the
   * largest first_index not above it). `substring` of an uncompressed out-of-line bytea reads only its chunk.
   */
  hashes: SqlSchema.findAll({
    Request: Schema.Struct({ networkId: Schema.String, indexes: Schema.Array(Schema.Number) }),
    Result: HashRow,
    execute: ({ indexes, networkId }) =>
      sql`
      SELECT x.i::float8 AS i, substring(b.hashes FROM ((x.i - b.first_index) * 32 + 1)::int FOR 32) AS h
      FROM unnest(${indexes}::bigint[]) AS x(i)
      CROSS JOIN LATERAL (
        SELECT first_index, hashes FROM log_batches
        WHERE network_id = ${networkId} AND first_index <= x.i ORDER BY first_index DESC LIMIT 1
      ) b
      WHERE x.i < b.first_index + octet_length(b.hashes) / 32`
  }),
  /** A batch's leaves: its records' hashes by their index in its RFC 9162 tree (records that joined it share them). */
  batchLeaves: SqlSchema.findAll({
    Request: Schema.String,
    Result: EntryRow,
    execute: (batchId) =>
      sql`
      SELECT DISTINCT ON (a.log_index) a.log_index::float8 AS i, r.hash
      FROM anchors a JOIN records r ON r.id = a.record_id
      WHERE a.batch_id = ${batchId}::bigint AND a.log_index IS NOT NULL
      ORDER BY a.log_index`
  }),
  /** The log's leaves [start, end), found through the batches whose ranges cover them. */
  entries: SqlSchema.findAll({
    Request: Schema.Struct({ networkId: Schema.String, start: Schema.Number, end: Schema.Number }),
    Result: EntryRow,
    execute: ({ end, networkId, start }) =>
      sql`
      SELECT DISTINCT ON (lb.start + a.log_index) (lb.start + a.log_index)::float8 AS i, r.hash
      FROM log_batches lb
      JOIN anchors a ON a.batch_id = lb.batch_id
      JOIN records r ON r.id = a.record_id
      WHERE lb.network_id = ${networkId} AND lb.start < ${end} AND lb.start + lb.leaf_count > ${start}
        AND lb.start + a.log_index >= ${start} AND lb.start + a.log_index < ${end}
      ORDER BY lb.start + a.log_index`
  }),
  markPublished: SqlSchema.findOneOption({
    Request: Schema.String,
    Result: RangeRow,
    execute: (batchId) => sql`UPDATE log_batches SET published = true WHERE batch_id = ${batchId}::bigint RETURNING ${rangeColumns(sql)}`
  }),
  insertCheckpoint: SqlSchema.void({
    Request: Schema.Struct({ networkId: Schema.String, size: Schema.Number, root: Hash, batchId: Schema.String, note: Schema.NullOr(Schema.String) }),
    execute: (c) =>
      sql`
      INSERT INTO log_checkpoints (network_id, size, root, batch_id, note)
      VALUES (${c.networkId}, ${c.size}, ${c.root}, ${c.batchId}::bigint, ${c.note}) ON CONFLICT (network_id, size) DO NOTHING`
  }),
  /** A network's whole log, for a chain that was reset (dev chain): its checkpoints are gone with it. */
  forget: SqlSchema.void({
    Request: Schema.String,
    execute: (networkId) =>
      sql`
      WITH b AS (DELETE FROM log_batches WHERE network_id = ${networkId}), c AS (DELETE FROM log_checkpoints WHERE network_id = ${networkId})
      DELETE FROM log_heads WHERE network_id = ${networkId}`
  }),
  latestCheckpoint: SqlSchema.findOneOption({
    Request: Schema.String,
    Result: CheckpointRow,
    execute: (networkId) =>
      sql`
      SELECT network_id, size::float8 AS size, root, batch_id::text AS batch_id, note, created_at
      FROM log_checkpoints WHERE network_id = ${networkId} ORDER BY size DESC LIMIT 1`
  }),
  checkpointAt: SqlSchema.findOneOption({
    Request: Schema.Struct({ networkId: Schema.String, size: Schema.Number }),
    Result: CheckpointRow,
    execute: ({ networkId, size }) =>
      sql`
      SELECT network_id, size::float8 AS size, root, batch_id::text AS batch_id, note, created_at
      FROM log_checkpoints WHERE network_id = ${networkId} AND size = ${size}`
  })
})
