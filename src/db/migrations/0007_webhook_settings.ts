import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * An account's webhook settings and secrets move out of `accounts` into `webhook_settings`, a table
 * the webhooks capability owns (src/webhooks/WebhookSettingsStore.ts): the global webhook (`url`,
 * `events`, `payload_format`, `enabled`), the signing `secret` and the rotation state
 * (`previous_secret`, `rotated_at`).
 *
 * Every account has exactly one row, from the statement that creates it on: an AFTER INSERT trigger
 * on `accounts` inserts it, with a new secret from `anchord_webhook_secret()`. So nothing that signs a
 * delivery (per-record `webhookUrl` deliveries are signed too) can find an account without a secret,
 * nothing has to create the row lazily (and race a concurrent render for it), and the account's own
 * code (src/auth) knows nothing of webhooks. docs/webhooks.md, "How it works", says the same.
 *
 * The deliveries trigger of 0003 reads the global webhook from the new table.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // No account may be created between the copy below and the trigger that covers new ones.
  yield* sql`LOCK TABLE accounts IN SHARE ROW EXCLUSIVE MODE`
  // `whsec_` + 32 bytes in base64url (43 characters, SPEC 5.5). The bytes are SHA-256 over three version 4
  // UUIDs (366 bits from the server's strong random source, pg_strong_random): core PostgreSQL (13+), no
  // pgcrypto needed. The one generator of secrets: new accounts (trigger below) and rotations use it.
  yield* sql.unsafe(`
    CREATE FUNCTION anchord_webhook_secret() RETURNS text LANGUAGE plpgsql VOLATILE AS $$
    DECLARE
      body text;
    BEGIN
      -- Drawn again until it has no '+' or '/': then it is base64url and standard base64 at once, which the
      -- Standard Webhooks libraries require (npm standardwebhooks refuses '-' and '_'). ~4 draws on average.
      LOOP
        body := rtrim(encode(sha256(
          uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid())
        ), 'base64'), '=');
        EXIT WHEN strpos(body, '+') = 0 AND strpos(body, '/') = 0;
      END LOOP;
      RETURN 'whsec_' || body;
    END
    $$`)
  yield* sql`
    CREATE TABLE webhook_settings (
      account_id      text PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
      -- the global webhook (SPEC 5.2): used for events of records without their own webhookUrl
      url             text,
      events          text[] NOT NULL DEFAULT ARRAY['anchor.confirmed', 'anchor.failed', 'record.updated', 'record.deleted'],
      payload_format  text NOT NULL DEFAULT 'multichain' CHECK (payload_format IN ('multichain', 'envelope')),
      enabled         boolean NOT NULL DEFAULT false,
      -- the newest secret; during a rotation overlap (24 h after rotated_at, until confirmed) the
      -- previous one still signs x-webhook-signature and this one x-webhook-signature-next
      secret          text NOT NULL DEFAULT anchord_webhook_secret(),
      previous_secret text,
      rotated_at      timestamptz
    )`
  yield* sql`
    INSERT INTO webhook_settings (account_id, url, events, payload_format, enabled, secret, previous_secret, rotated_at)
    SELECT id, webhook_url, webhook_events, webhook_format, webhook_enabled, webhook_secret, webhook_secret_previous,
           webhook_secret_rotated_at
    FROM accounts`
  yield* sql.unsafe(`
    CREATE FUNCTION anchord_webhook_settings() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO webhook_settings (account_id) SELECT id FROM new_accounts ON CONFLICT (account_id) DO NOTHING;
      RETURN NULL;
    END
    $$`)
  yield* sql`
    CREATE TRIGGER accounts_webhook_settings AFTER INSERT ON accounts
    REFERENCING NEW TABLE AS new_accounts
    FOR EACH STATEMENT EXECUTE FUNCTION anchord_webhook_settings()`
  // 0003's function, reading the global webhook from webhook_settings instead of accounts.
  yield* sql.unsafe(`
    CREATE OR REPLACE FUNCTION anchord_webhook_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      created integer;
    BEGIN
      INSERT INTO webhook_deliveries (id, event_seq, event_id, account_id, record_id, environment, target, url, host, next_attempt_at)
      SELECT 'dlv_' || replace(gen_random_uuid()::text, '-', ''), t.id, t.event_id, t.account_id, t.record_id, t.environment,
             t.target, t.url, COALESCE(lower(substring(t.url FROM '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?([^/?#]+)')), ''), now()
      FROM (
        SELECT e.id, e.event_id, e.account_id, e.record_id, r.environment,
               CASE WHEN NULLIF(r.webhook_url, '') IS NOT NULL THEN 'record' ELSE 'account' END AS target,
               COALESCE(NULLIF(r.webhook_url, ''), s.url) AS url
        FROM new_events e
        JOIN records r ON r.id = e.record_id
        JOIN webhook_settings s ON s.account_id = e.account_id
        WHERE NULLIF(r.webhook_url, '') IS NOT NULL
           OR (s.enabled AND NULLIF(s.url, '') IS NOT NULL AND e.kind = ANY (s.events))
      ) t
      ORDER BY t.id;
      GET DIAGNOSTICS created = ROW_COUNT;
      -- Delivered to listeners only after COMMIT (and never for a rolled-back transaction).
      IF created > 0 THEN
        PERFORM pg_notify('anchord_webhooks', '');
      END IF;
      RETURN NULL;
    END
    $$`)
  yield* sql`
    ALTER TABLE accounts
      DROP COLUMN webhook_url,
      DROP COLUMN webhook_events,
      DROP COLUMN webhook_format,
      DROP COLUMN webhook_enabled,
      DROP COLUMN webhook_secret,
      DROP COLUMN webhook_secret_previous,
      DROP COLUMN webhook_secret_rotated_at`
})
