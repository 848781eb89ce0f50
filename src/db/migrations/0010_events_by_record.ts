import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A record's events in order: rendering record.updated / record.deleted looks up the record's latest
 * anchor.confirmed before the event (`record_id = … AND id < … ORDER BY id DESC LIMIT 1`). With
 * (record_id) alone PostgreSQL combined it with a range scan of the primary key over every older event —
 * a cost that grew with the table. This index answers it in one descent and replaces the old one.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX events_record_id ON events (record_id, id)`
  yield* sql`DROP INDEX events_record`
})
