import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Batched webhook deliveries, opt in per environment (docs/webhooks.md, "Batched delivery"): how the
 * environment's deliveries go out (`single`: one event per request, as before; `batch`: up to
 * batch_max_events events of one kind per request, a partial batch held at most batch_max_wait_ms).
 * Columns with constant defaults: no table rewrite, safe while older nodes run (they send one by one).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    ALTER TABLE webhook_settings
      ADD COLUMN delivery_mode text NOT NULL DEFAULT 'single' CHECK (delivery_mode IN ('single', 'batch')),
      ADD COLUMN batch_max_events integer NOT NULL DEFAULT 100 CHECK (batch_max_events BETWEEN 1 AND 1000),
      ADD COLUMN batch_max_wait_ms integer NOT NULL DEFAULT 0 CHECK (batch_max_wait_ms BETWEEN 0 AND 10000)`
})
