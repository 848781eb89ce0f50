import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * RFC 3161 time-stamp tokens (src/tsa/, docs/timestamping.md).
 *
 * - `timestamp_serials`: serial numbers unique across every node on the database. A node takes a block
 *   of 256 at a time (one `nextval` per 256 tokens, not one round trip per token); a block a node did
 *   not use up (it stopped) is skipped, which RFC 3161 allows (serials are unique, not contiguous).
 * - `timestamp_tokens`: each token as issued (the DER ContentInfo), with the hash-only record that
 *   anchors it, written in the same transaction as that record (src/records/IngestWriter.ts).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE SEQUENCE timestamp_serials AS bigint START WITH 1 INCREMENT BY 256`
  yield* sql`
    CREATE TABLE timestamp_tokens (
      serial          bigint PRIMARY KEY,
      account_id      text NOT NULL REFERENCES accounts (id),
      environment     text NOT NULL CHECK (environment IN ('test', 'live')),
      record_id       text NOT NULL REFERENCES records (id),
      hash_algorithm  text NOT NULL CHECK (hash_algorithm IN ('sha256', 'sha384', 'sha512')),
      message_imprint bytea NOT NULL,
      gen_time        timestamptz NOT NULL,
      token           bytea NOT NULL
    )`
  yield* sql`CREATE INDEX timestamp_tokens_record ON timestamp_tokens (record_id)`
})
