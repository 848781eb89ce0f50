import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The console (SPEC 9, src/console/): its users, their sessions, one-time links (invitations and
 * sign-in links) and the sign-in throttle; when each API key was last used; webhook test events.
 *
 * - `console_users`: operators (every account) and account members (`admin` or `viewer` of one
 *   account). One row per email (case-insensitive). `password_hash` is scrypt with a per-user salt
 *   (`scrypt$<N>$<r>$<p>$<salt>$<hash>`); NULL for a user who signs in by one-time links only (the dev
 *   operator of `npm start`).
 * - `console_sessions`: server-side sessions. The cookie holds a random token; only its SHA-256 is
 *   stored, so a copy of this table signs no one in. Idle and absolute expiry are checked against
 *   `last_seen_at` and `expires_at` at the Clock's time (src/console/Sessions.ts).
 * - `console_links`: one-time links, stored as digests too: an invitation (makes a user and signs them
 *   in) or a sign-in link (signs an existing user in). `used_at` makes them one-time.
 * - `console_sign_in_failures`: failed sign-ins per email and per client address in fixed windows,
 *   in PostgreSQL so the throttle holds across restarts and across nodes.
 * - `api_keys.last_used_at`: written at most once a minute per key, off the request path
 *   (src/auth/Accounts.ts).
 * - `events.kind` admits `webhook.test`: the console's "send test event" goes through the outbox and
 *   the dispatcher like every event (src/webhooks/TestEvents.ts), so it is signed, retried, logged and
 *   redeliverable like the others. It belongs to no record (`record_id` is '').
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE console_users (
      id            text PRIMARY KEY,
      email         text NOT NULL,
      password_hash text,
      operator      boolean NOT NULL DEFAULT false,
      account_id    text REFERENCES accounts (id) ON DELETE CASCADE,
      role          text CHECK (role IN ('admin', 'viewer')),
      created_at    timestamptz NOT NULL,
      CHECK ((operator AND account_id IS NULL AND role IS NULL) OR (NOT operator AND account_id IS NOT NULL AND role IS NOT NULL))
    )`
  yield* sql`CREATE UNIQUE INDEX console_users_email ON console_users (lower(email))`
  yield* sql`CREATE INDEX console_users_account ON console_users (account_id)`
  yield* sql`
    CREATE TABLE console_sessions (
      digest       bytea PRIMARY KEY,
      user_id      text NOT NULL REFERENCES console_users (id) ON DELETE CASCADE,
      created_at   timestamptz NOT NULL,
      last_seen_at timestamptz NOT NULL,
      expires_at   timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX console_sessions_user ON console_sessions (user_id)`
  yield* sql`
    CREATE TABLE console_links (
      digest      bytea PRIMARY KEY,
      kind        text NOT NULL CHECK (kind IN ('invitation', 'sign-in')),
      email       text NOT NULL,
      operator    boolean NOT NULL DEFAULT false,
      account_id  text REFERENCES accounts (id) ON DELETE CASCADE,
      role        text CHECK (role IN ('admin', 'viewer')),
      created_by  text,
      created_at  timestamptz NOT NULL,
      expires_at  timestamptz NOT NULL,
      used_at     timestamptz
    )`
  yield* sql`
    CREATE TABLE console_sign_in_failures (
      key              text PRIMARY KEY,
      window_starts_at timestamptz NOT NULL,
      failures         integer NOT NULL
    )`
  yield* sql`ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz`
  yield* sql`ALTER TABLE events DROP CONSTRAINT events_kind_check`
  yield* sql`
    ALTER TABLE events ADD CONSTRAINT events_kind_check
      CHECK (kind IN ('anchor.confirmed', 'anchor.failed', 'record.updated', 'record.deleted', 'webhook.test'))`
})
