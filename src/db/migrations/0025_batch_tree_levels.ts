import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Each batch's two trees stored once, on its row, instead of two proofs on every anchor (docs/design/per-batch-model.md,
 * section 3: ~1.6 KB of proof per record at 2,000 records per batch, the same hashes repeated across its rows).
 *
 * - `anchor_batches.merkle_levels` / `log_levels`: the OpenZeppelin and RFC 9162 trees, 32 bytes per node, leaves
 *   first (the layout is in src/anchoring/batchTrees.ts). NULL for batches cut before: their anchors keep their proofs.
 *   STORAGE EXTERNAL: hashes do not compress, and uncompressed out-of-line values are read in slices (a proof's
 *   `substring`s fetch only their TOAST chunks).
 * - `anchors.merkle_index` (and `failed_anchors`'): the record's leaf position in the OpenZeppelin tree (sorted
 *   leaves; `leaf_index` is its place in the cut, which clients see). With `log_index`, what derives its proofs.
 * - `merkle_proof` nullable (`log_proof` is already): NULL on anchors cut from now on.
 *
 * Nullable columns without a default, a dropped NOT NULL and a storage mode: nothing is rewritten or scanned.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE anchor_batches ADD COLUMN merkle_levels bytea, ADD COLUMN log_levels bytea`
  yield* sql`ALTER TABLE anchor_batches ALTER COLUMN merkle_levels SET STORAGE EXTERNAL, ALTER COLUMN log_levels SET STORAGE EXTERNAL`
  yield* sql`ALTER TABLE anchors ALTER COLUMN merkle_proof DROP NOT NULL, ADD COLUMN merkle_index integer`
  yield* sql`ALTER TABLE failed_anchors ALTER COLUMN merkle_proof DROP NOT NULL, ADD COLUMN merkle_index integer`
})
