import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Accounts, API keys, records, usage, idempotency and the event outbox. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE accounts (
      id              text PRIMARY KEY,
      name            text NOT NULL,
      email           text,
      plan            text NOT NULL CHECK (plan IN ('FREE', 'STARTUP', 'SCALE', 'ENTERPRISE')),
      status          text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'ACTIVE', 'SUSPENDED')),
      -- ENTERPRISE: custom per-second limit; NULL means the plan's own number
      rate_per_second integer CHECK (rate_per_second IS NULL OR rate_per_second > 0),
      default_chain   text NOT NULL DEFAULT 'evm' CHECK (default_chain IN ('evm', 'fabric', 'hybrid')),
      webhook_url     text,
      webhook_events  text[] NOT NULL DEFAULT ARRAY['anchor.confirmed', 'anchor.failed', 'record.updated', 'record.deleted'],
      webhook_format  text NOT NULL DEFAULT 'multichain' CHECK (webhook_format IN ('multichain', 'envelope')),
      webhook_enabled boolean NOT NULL DEFAULT false,
      webhook_secret  text NOT NULL,
      created_at      timestamptz NOT NULL DEFAULT now(),
      activated_at    timestamptz
    )`
  yield* sql`
    CREATE TABLE api_keys (
      id           text PRIMARY KEY,
      account_id   text NOT NULL REFERENCES accounts (id),
      environment  text NOT NULL CHECK (environment IN ('test', 'live')),
      digest       bytea NOT NULL UNIQUE,
      display      text NOT NULL,
      name         text,
      created_at   timestamptz NOT NULL DEFAULT now(),
      expires_at   timestamptz,
      revoked_at   timestamptz
    )`
  yield* sql`CREATE INDEX api_keys_account ON api_keys (account_id)`
  yield* sql`
    CREATE TABLE records (
      id             text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{24}$'),
      account_id     text NOT NULL REFERENCES accounts (id),
      environment    text NOT NULL CHECK (environment IN ('test', 'live')),
      hash           text NOT NULL CHECK (hash ~ '^[0-9a-f]{64}$'),
      status         text NOT NULL DEFAULT 'QUEUED' CHECK (status IN ('QUEUED', 'BATCHING', 'ANCHORED', 'FAILED')),
      chain_type     text NOT NULL CHECK (chain_type IN ('evm', 'fabric', 'hybrid')),
      network_id     text NOT NULL,
      package_mode   text NOT NULL CHECK (package_mode IN ('SEPARATED', 'IN_PLACE', 'MANAGED')),
      source         text NOT NULL CHECK (source IN ('data', 'encrypted', 'hash')),
      -- the RFC 8785 canonical JSON that was hashed (NULL when discarded, encrypted or hash-only)
      data_jcs       text,
      ciphertext     bytea,
      nonce          bytea,
      auth_tag       bytea,
      metadata       jsonb NOT NULL DEFAULT '{}'::jsonb,
      webhook_url    text,
      created_at     timestamptz NOT NULL DEFAULT now(),
      updated_at     timestamptz NOT NULL DEFAULT now(),
      anchored_at    timestamptz,
      deleted_at     timestamptz,
      hard_deleted   boolean NOT NULL DEFAULT false
    )`
  yield* sql`CREATE INDEX records_list ON records (account_id, environment, id DESC)`
  yield* sql`CREATE INDEX records_hash ON records (account_id, environment, hash)`
  yield* sql`CREATE INDEX records_queued ON records (network_id, id) WHERE status = 'QUEUED'`
  yield* sql`
    CREATE TABLE usage_monthly (
      account_id text NOT NULL REFERENCES accounts (id),
      month      date NOT NULL,
      used       bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (account_id, month)
    )`
  yield* sql`
    CREATE TABLE idempotency_keys (
      account_id    text NOT NULL REFERENCES accounts (id),
      environment   text NOT NULL,
      key           text NOT NULL,
      request_hash  text NOT NULL,
      status        integer NOT NULL,
      body          text NOT NULL,
      created_at    timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (account_id, environment, key)
    )`
  // The outbox: every state change that clients hear about writes its event in the same transaction.
  yield* sql`
    CREATE TABLE events (
      id          bigserial PRIMARY KEY,
      event_id    text NOT NULL UNIQUE,
      account_id  text NOT NULL REFERENCES accounts (id),
      record_id   text NOT NULL,
      kind        text NOT NULL CHECK (kind IN ('anchor.confirmed', 'anchor.failed', 'record.updated', 'record.deleted')),
      payload     jsonb NOT NULL,
      created_at  timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX events_record ON events (record_id)`
})
