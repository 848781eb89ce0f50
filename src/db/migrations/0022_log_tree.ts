import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Every batch cut from now on also gets an RFC 9162 tree over the same record hashes
 * (src/anchoring/rfc9162.ts), whose root the chain commits in the same transaction as the OpenZeppelin
 * root (AnchorRegistry.anchorWithLogRoot, the chaincode's `anchor` with a fourth argument), so a record
 * can be proved with an RFC 9942 COSE Receipt (`GET /v1/records/{id}/receipt`, docs/proof-format.md).
 *
 * - `anchor_batches.log_root`: that root, `0x` + 64 hex; NULL for batches cut before (they have no
 *   receipt) and for batches sent to a contract without `anchorWithLogRoot` (the writer clears it).
 * - `anchors.log_index` / `log_proof`: the record's leaf index in that tree and its inclusion proof,
 *   the sibling hashes concatenated (32 bytes each, bytea: half the size of hex text); `failed_anchors`
 *   keeps them like the other anchor columns.
 *
 * Nullable columns without a default: adding them rewrites nothing.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE anchor_batches ADD COLUMN log_root text`
  yield* sql`ALTER TABLE anchors ADD COLUMN log_index integer, ADD COLUMN log_proof bytea`
  yield* sql`ALTER TABLE failed_anchors ADD COLUMN log_index integer, ADD COLUMN log_proof bytea`
})
