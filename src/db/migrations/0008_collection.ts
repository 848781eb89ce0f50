import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * `records.collection` (SPEC 3: the seed service's optional grouping field, not hashed, immutable).
 *
 * A nullable column without a default: adding it rewrites nothing, and a row without a collection
 * stores only its null bit. The index behind `GET /v1/records?collection=` is partial, so records
 * without a collection (the common case of the ingest hot path) are not written into it.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE records ADD COLUMN collection text`
  yield* sql`
    CREATE INDEX records_collection ON records (account_id, environment, collection, id DESC)
    WHERE collection IS NOT NULL`
})
