import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A hard delete that erases, and salted commitments for encrypted records.
 *
 * - `webhook_deliveries.erased`: the delivery belongs to a record erased by a hard delete
 *   (src/records/RecordStore.ts `remove`). Its body is gone; once it is finished (SUCCEEDED, FAILED)
 *   a per-record URL (`target = 'record'`, the record's own webhookUrl) is cut down to its origin
 *   (`scheme://host[:port]`) by the trigger below, and it cannot be redelivered. The record.deleted of
 *   the hard delete itself keeps the full URL only until it is delivered (or its ladder ends): the
 *   trigger runs on that last state change, so no code path has to remember to do it. The WHEN clause
 *   makes the trigger free for every other delivery (no function call).
 * - `records.salted`: the record's hash is the salted commitment of docs/verifying.md
 *   (`sha256(JCS({"data": data, "salt": salt}))`, the salt inside the ciphertext); false for every
 *   record written before (their hash is `sha256(JCS(data))`, unchanged). A constant default: adding
 *   the column rewrites nothing.
 * - `idempotency_keys_created`: a hard delete finds the stored Idempotency-Key answers that hold the
 *   record (created with it: ingest stores them at the record's createdAt) without reading every
 *   answer of the account.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE webhook_deliveries ADD COLUMN erased boolean NOT NULL DEFAULT false`
  yield* sql.unsafe(`
    CREATE FUNCTION anchord_erased_delivery_url() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      NEW.url := COALESCE(substring(NEW.url FROM '^[A-Za-z][A-Za-z0-9+.-]*://'), '') || NEW.host;
      RETURN NEW;
    END
    $$`)
  yield* sql`
    CREATE TRIGGER webhook_deliveries_erased_url BEFORE UPDATE ON webhook_deliveries
    FOR EACH ROW WHEN (NEW.erased AND NEW.state <> 'PENDING' AND NEW.target = 'record')
    EXECUTE FUNCTION anchord_erased_delivery_url()`
  yield* sql`ALTER TABLE records ADD COLUMN salted boolean NOT NULL DEFAULT false`
  yield* sql`CREATE INDEX idempotency_keys_created ON idempotency_keys (account_id, environment, created_at)`
})
