import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * One append-only transparency log per anchoring network (docs/design/transparency-log.md, src/translog/):
 * stored per batch, never per record.
 *
 * - `log_heads`: the network's tentative head, what the chain will hold once every sent batch executes. Its
 *   row is the lock a batch's range is assigned under (SELECT … FOR UPDATE).
 * - `log_batches`: a batch's range [start, start + leaf_count) and the tree hashes appending its leaves
 *   stored (Go's sumdb/tlog layout: the contiguous stored-hash indexes [first_index, first_index +
 *   octet_length(hashes) / 32)), as one bytea of 32-byte hashes kept uncompressed out of line (STORAGE
 *   EXTERNAL) so reading one hash fetches one TOAST chunk. `root_after`: the log's root with the batch.
 *   `published`: its checkpoint was confirmed on chain. The leaves themselves are the batch's record hashes
 *   in its RFC 9162 order (`anchors.log_index`), not stored again.
 * - `log_checkpoints`: the checkpoints confirmed on chain (what is served), with their signed note.
 *
 * New tables only: nothing an older node reads changes.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE log_heads (
      network_id  text PRIMARY KEY,
      size        bigint NOT NULL CHECK (size >= 0),
      root        bytea NOT NULL CHECK (octet_length(root) = 32),
      updated_at  timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE log_batches (
      batch_id     bigint PRIMARY KEY REFERENCES anchor_batches (id),
      network_id   text NOT NULL,
      start        bigint NOT NULL CHECK (start >= 0),
      leaf_count   integer NOT NULL CHECK (leaf_count > 0),
      first_index  bigint NOT NULL CHECK (first_index >= 0),
      hashes       bytea NOT NULL CHECK (octet_length(hashes) > 0 AND octet_length(hashes) % 32 = 0),
      root_after   bytea NOT NULL CHECK (octet_length(root_after) = 32),
      published    boolean NOT NULL DEFAULT false,
      created_at   timestamptz NOT NULL DEFAULT now(),
      UNIQUE (network_id, start),
      UNIQUE (network_id, first_index)
    )`
  yield* sql`ALTER TABLE log_batches ALTER COLUMN hashes SET STORAGE EXTERNAL`
  yield* sql`
    CREATE TABLE log_checkpoints (
      network_id  text NOT NULL,
      size        bigint NOT NULL CHECK (size > 0),
      root        bytea NOT NULL CHECK (octet_length(root) = 32),
      batch_id    bigint NOT NULL REFERENCES anchor_batches (id),
      note        text,
      created_at  timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (network_id, size)
    )`
})
