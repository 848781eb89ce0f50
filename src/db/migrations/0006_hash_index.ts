import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * `records_hash` (GET /v1/proof/{hash}) becomes a hash index on `hash` alone, in place of a B-tree
 * on (account_id, environment, hash). The lookup stays one index probe: the index finds the rows
 * with that hash (one, nearly always, as record hashes are SHA-256 digests), and account and
 * environment are checked on them.
 *
 * Why: every ingested row inserts into this index at a random position (its hash), so the B-tree
 * touched a random leaf of a large index per row; its entries carried the account id, the
 * environment and 64 characters. A hash index entry is a 4-byte hash code and a row pointer.
 * Measured on this project's machine (PostgreSQL 17, 32-row group inserts of 1 KB records, see
 * docs/api.md): at 2.2 M rows, 47 µs of PostgreSQL CPU per row with the B-tree, 39 with the hash
 * index (31 with neither), and an index of 80-120 MB instead of 340-390 MB; on a fresh table,
 * 32.5 vs 29 µs.
 *
 * On a large existing table the rebuild takes a while at the first start of this version (about
 * 10 s per million rows here).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP INDEX records_hash`
  yield* sql`CREATE INDEX records_hash ON records USING hash (hash)`
})
