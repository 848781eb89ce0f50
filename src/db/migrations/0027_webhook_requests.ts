import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The request log of batched deliveries (docs/webhooks.md, "The request log"): one row per HTTP request that
 * carried a batch, with the events it carried and what the receiver answered. The deliveries keep each event's own
 * state and attempts; this is what a receiver saw on the wire, found by the owner's newest first, by the request's
 * id (its webhook-id, the same for a retry of the same events) or by a record or event it carried.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE webhook_requests (
      seq bigserial PRIMARY KEY,
      id text NOT NULL,
      account_id text NOT NULL,
      environment text NOT NULL,
      url text NOT NULL,
      kind text NOT NULL,
      event_ids text[] NOT NULL,
      record_ids text[] NOT NULL,
      started_at timestamptz NOT NULL,
      status_code integer,
      latency_ms integer NOT NULL,
      error text,
      failed_event_ids text[] NOT NULL DEFAULT '{}',
      node_id text NOT NULL
    )`
  yield* sql`CREATE INDEX webhook_requests_account ON webhook_requests (account_id, environment, seq DESC)`
  yield* sql`CREATE INDEX webhook_requests_id ON webhook_requests (id)`
  yield* sql`CREATE INDEX webhook_requests_keys ON webhook_requests USING gin ((record_ids || event_ids))`
})
