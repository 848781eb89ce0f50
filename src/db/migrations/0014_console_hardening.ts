import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** src/console/Users.ts `normalizeEmail` as of this migration (a migration keeps its own copy: it must not change with the code). */
const normalizeEmail = (email: string) => email.trim().normalize("NFKC").toLowerCase().normalize("NFKC")

/**
 * Console hardening (docs/console.md):
 *
 * - Emails in one spelling (`normalizeEmail`: NFKC, lower-cased once): `console_users.email` and
 *   `console_links.email` are rewritten, and the unique index is on the stored value, not on
 *   PostgreSQL's `lower()` (whose rules differ from JavaScript's). Two users whose emails become one
 *   spelling cannot both keep it: the migration stops and names them, and the operator decides which
 *   one goes (nothing is merged or renamed behind anyone's back).
 * - Invitations have an id (to list and revoke them) and die with their maker: `created_by` references
 *   `console_users` (ON DELETE CASCADE: removing an admin removes the links they made); a trigger
 *   voids the unused invitations of a user who stops being an admin of that account, and those that
 *   members made for an account when it is suspended. Acceptance checks the same again
 *   (src/console/Links.ts).
 * - The sign-in throttle's counters (src/console/SignInThrottle.ts) replace
 *   `console_sign_in_failures`: per email, per client address and per (email, address), with the time
 *   of the last failure and, for a pair, of its last success.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  const users = yield* sql<{ id: string; email: string; createdAt: Date }>`SELECT id, email, created_at FROM console_users ORDER BY created_at, id`
  const byEmail = new Map<string, Array<string>>()
  for (const u of users) byEmail.set(normalizeEmail(u.email), [...byEmail.get(normalizeEmail(u.email)) ?? [], u.id])
  const collisions = [...byEmail].filter(([, ids]) => ids.length > 1)
  if (collisions.length > 0) {
    return yield* Effect.die(new Error(
      "migration 0014: console users whose emails are one address once normalized (NFKC, lower case): " +
        collisions.map(([email, ids]) => `${email}: ${ids.join(", ")}`).join("; ") +
        ". Keep one user per address: remove the others (DELETE FROM console_users WHERE id = '<id>') and start again."
    ))
  }
  yield* sql`DROP INDEX console_users_email`
  for (const u of users) {
    const email = normalizeEmail(u.email)
    if (email !== u.email) yield* sql`UPDATE console_users SET email = ${email} WHERE id = ${u.id}`
  }
  yield* sql`CREATE UNIQUE INDEX console_users_email ON console_users (email)`

  const links = yield* sql<{ digest: Uint8Array; email: string }>`SELECT digest, email FROM console_links`
  for (const l of links) {
    const email = normalizeEmail(l.email)
    if (email !== l.email) yield* sql`UPDATE console_links SET email = ${email} WHERE digest = ${l.digest}`
  }
  yield* sql`ALTER TABLE console_links ADD COLUMN id text`
  yield* sql`UPDATE console_links SET id = 'lnk_' || encode(substring(digest FROM 1 FOR 10), 'hex')`
  yield* sql`ALTER TABLE console_links ALTER COLUMN id SET NOT NULL`
  yield* sql`CREATE UNIQUE INDEX console_links_id ON console_links (id)`
  yield* sql`CREATE INDEX console_links_account ON console_links (account_id) WHERE used_at IS NULL`
  // Links of makers already gone would have been void: they go now, so the reference can hold.
  yield* sql`DELETE FROM console_links WHERE created_by IS NOT NULL AND created_by NOT IN (SELECT id FROM console_users)`
  yield* sql`
    ALTER TABLE console_links ADD CONSTRAINT console_links_created_by_fkey
      FOREIGN KEY (created_by) REFERENCES console_users (id) ON DELETE CASCADE`
  yield* sql`CREATE INDEX console_links_created_by ON console_links (created_by)`

  // A user who is no longer an admin of the account (another role, another account, none): the
  // invitations they made and nobody used yet are void.
  yield* sql`
    CREATE FUNCTION console_void_invitations_of_user() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM console_links
      WHERE created_by = NEW.id AND used_at IS NULL AND kind = 'invitation'
        AND NOT (NEW.operator OR (NEW.role = 'admin' AND account_id IS NOT DISTINCT FROM NEW.account_id));
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER console_users_void_invitations AFTER UPDATE OF role, account_id, operator ON console_users
      FOR EACH ROW EXECUTE FUNCTION console_void_invitations_of_user()`
  // A suspended account: the invitations its members made are void (an operator's stay, and are
  // refused while the account is suspended).
  yield* sql`
    CREATE FUNCTION console_void_invitations_of_account() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM console_links l
      USING console_users u
      WHERE l.account_id = NEW.id AND l.used_at IS NULL AND l.kind = 'invitation'
        AND u.id = l.created_by AND NOT u.operator;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER accounts_void_invitations AFTER UPDATE OF status ON accounts
      FOR EACH ROW WHEN (NEW.status = 'SUSPENDED' AND OLD.status IS DISTINCT FROM 'SUSPENDED')
      EXECUTE FUNCTION console_void_invitations_of_account()`

  yield* sql`DROP TABLE console_sign_in_failures`
  yield* sql`
    CREATE TABLE console_sign_in_counters (
      key             text PRIMARY KEY,
      failures        integer NOT NULL DEFAULT 0,
      last_failure_at timestamptz,
      succeeded_at    timestamptz
    )`
})
