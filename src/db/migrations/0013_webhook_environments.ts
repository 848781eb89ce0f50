import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Webhook settings per (account, environment). One row per account let a test
 * key change where the account's live events went (`PUT /v1/webhooks`), and read and rotate the secret
 * that signs live deliveries. Now each environment has its own row: global webhook, secret and rotation.
 * A key acts on its own environment's row; a delivery is routed and signed with its record's.
 *
 * Upgrade: the existing row becomes the live one and is copied, secret and rotation included, to test.
 * Every receiver keeps verifying (both environments' deliveries are signed as before), at the cost
 * that the two environments share one secret until one of them rotates: a secret a test-key holder may
 * already have read. docs/webhooks.md ("Test and live") advises rotating the live secret after the
 * upgrade when test keys were held by anyone who must not sign live deliveries.
 *
 * New accounts get both rows, each with its own new secret (the trigger of 0007).
 *
 * The two triggers that choose a global webhook (the events trigger, last in 0012, and the fan-out
 * trigger of batch_events, 0012) are re-created whole with the record's environment in the join:
 * a migration holds the function as of its version, so the chain replays the same on any database.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // No account may be created between the copy and the new trigger (its statement would get one row).
  yield* sql`LOCK TABLE accounts IN SHARE ROW EXCLUSIVE MODE`
  yield* sql`
    ALTER TABLE webhook_settings
      ADD COLUMN environment text NOT NULL DEFAULT 'live' CHECK (environment IN ('test', 'live')),
      DROP CONSTRAINT webhook_settings_pkey,
      ADD PRIMARY KEY (account_id, environment)`
  // Every row is named with its environment from now on.
  yield* sql`ALTER TABLE webhook_settings ALTER COLUMN environment DROP DEFAULT`
  yield* sql`
    INSERT INTO webhook_settings (account_id, environment, url, events, payload_format, enabled, secret, previous_secret, rotated_at)
    SELECT account_id, 'test', url, events, payload_format, enabled, secret, previous_secret, rotated_at
    FROM webhook_settings WHERE environment = 'live'`
  // 0007's function: a row per environment, each with its own secret (the column's default, drawn per row).
  yield* sql.unsafe(`
    CREATE OR REPLACE FUNCTION anchord_webhook_settings() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO webhook_settings (account_id, environment)
      SELECT a.id, v.environment FROM new_accounts a CROSS JOIN (VALUES ('test'), ('live')) AS v(environment)
      ON CONFLICT (account_id, environment) DO NOTHING;
      RETURN NULL;
    END
    $$`)
  // 0012's function: the global webhook of the record's environment.
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
        JOIN webhook_settings s ON s.account_id = e.account_id AND s.environment = r.environment
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
  // 0012's function: the global webhook of each record's environment.
  yield* sql.unsafe(`
    CREATE OR REPLACE FUNCTION anchord_batch_event_fanouts() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      fanned integer;
    BEGIN
      INSERT INTO webhook_fanouts (batch_event_id, record_ids, hosts)
      SELECT t.be, array_agg(t.record_id ORDER BY t.ord), array_agg(t.host ORDER BY t.ord) FROM (
        SELECT e.id AS be, x.record_id, x.ord, (row_number() OVER (PARTITION BY e.id ORDER BY x.ord) - 1) / 128 AS part,
               COALESCE(lower(substring(COALESCE(NULLIF(r.webhook_url, ''), s.url)
                 FROM '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?([^/?#]+)')), '') AS host
        FROM new_batch_events e
        CROSS JOIN LATERAL unnest(e.record_ids) WITH ORDINALITY AS x(record_id, ord)
        JOIN records r ON r.id = x.record_id
        JOIN webhook_settings s ON s.account_id = e.account_id AND s.environment = r.environment
        WHERE NULLIF(r.webhook_url, '') IS NOT NULL
           OR (s.enabled AND NULLIF(s.url, '') IS NOT NULL AND 'anchor.confirmed' = ANY (s.events))
      ) t
      GROUP BY t.be, t.part ORDER BY t.be, t.part;
      GET DIAGNOSTICS fanned = ROW_COUNT;
      IF fanned > 0 THEN
        PERFORM pg_notify('anchord_webhooks', '');
      END IF;
      RETURN NULL;
    END
    $$`)
})
