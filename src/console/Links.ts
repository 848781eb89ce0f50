/**
 * One-time links (`console_links`): an **invitation** (an account admin or an operator
 * invites an email as `admin` or `viewer` of an account, or as an operator; the link lets them choose a
 * password, which makes their user) and a **sign-in link** (signs an existing user in once: the dev
 * operator of `npm start`, or an operator's link for a user). Only the token's SHA-256 is stored; the
 * token travels in the URL's fragment (`/console/#/invite/<token>`, `/console/#/link/<token>`), which
 * browsers never send to a server. Using a link marks it used in the same statement that reads it, so
 * it works once even when two requests race.
 *
 * An invitation is only as good as its maker's right to make it: it is void once its maker is
 * removed (`created_by` references the user, ON DELETE CASCADE), stops being an admin of the account
 * (a trigger deletes it), or when the account is suspended (a trigger deletes those members made; none
 * is accepted while the account is suspended). `VALID` says the same in every statement that reads or
 * uses a link, so a path the triggers miss still finds the invitation void. An account's admins list
 * and revoke its pending invitations.
 */
import * as Crypto from "node:crypto"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { rowDefects, type SqlEffect } from "../db/rows.ts"
import { ConsoleConfig } from "./config.ts"
import { InvalidLink } from "./errors.ts"
import { isToken, newToken, tokenDigest } from "./tokens.ts"
import { normalizeEmail, Role } from "./Users.ts"

export const LinkKind = Schema.Literals(["invitation", "sign-in"])
export type LinkKind = typeof LinkKind.Type

export const LinkRow = Schema.Struct({
  id: Schema.String,
  kind: LinkKind,
  email: Schema.String,
  operator: Schema.Boolean,
  accountId: Schema.NullOr(Schema.String),
  role: Schema.NullOr(Role),
  createdBy: Schema.NullOr(Schema.String),
  createdAt: Schema.Date,
  expiresAt: Schema.Date,
  usedAt: Schema.NullOr(Schema.Date)
})
export type LinkRow = typeof LinkRow.Type

export type NewLink = {
  readonly kind: LinkKind
  readonly email: string
  readonly createdBy?: string | undefined
} & ({ readonly operator: true } | { readonly operator: false; readonly accountId: string; readonly role: Role })

/** The path (under the console) a link opens: the token in the fragment. */
export const linkPath = (kind: LinkKind, token: string) => `/console/#/${kind === "invitation" ? "invite" : "link"}/${token}`

export class ConsoleLinks extends Context.Service<ConsoleLinks, {
  /** A new link: its token (shown once, to whoever creates it) and when it expires. */
  readonly create: (link: NewLink) => SqlEffect<{ readonly token: string; readonly expiresAt: Date }>
  /** What an unused, unexpired link is for (the invitation page shows it), or InvalidLink. */
  readonly inspect: (token: string) => SqlEffect<LinkRow, InvalidLink>
  /** Uses the link (once), or InvalidLink; call inside the transaction that acts on it. */
  readonly consume: (token: string, kind: LinkKind) => SqlEffect<LinkRow, InvalidLink>
  /** The account's invitations that can still be accepted, newest first. */
  readonly pendingInvitations: (accountId: string) => SqlEffect<ReadonlyArray<LinkRow>>
  /** Revokes a pending invitation of the account; whether there was one. */
  readonly revokeInvitation: (accountId: string, id: string) => SqlEffect<boolean>
}>()("anchord/console/ConsoleLinks") {
  static readonly layer = Layer.effect(ConsoleLinks, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* ConsoleConfig
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
    const columns = sql`id, kind, email, operator, account_id, role, created_by, created_at, expires_at, used_at`
    /**
     * A link (`console_links` as `l`) its maker may still make: a sign-in link always (only operators
     * make them); an invitation when the account (if any) is not suspended and its maker is the
     * operator's CLI (NULL), an operator, or an admin of that account.
     */
    const VALID = sql`(l.kind <> 'invitation' OR (
      NOT EXISTS (SELECT 1 FROM accounts a WHERE a.id = l.account_id AND a.status = 'SUSPENDED')
      AND (l.created_by IS NULL OR EXISTS (
        SELECT 1 FROM console_users u
        WHERE u.id = l.created_by AND (u.operator OR (NOT l.operator AND u.account_id = l.account_id AND u.role = 'admin'))))))`

    const insertLink = SqlSchema.void({
      // a new link: the row's fields but its use, and the digest of its token (never read back)
      Request: LinkRow.mapFields(({ usedAt: _, ...fields }) => ({ ...fields, digest: Schema.Uint8Array })),
      execute: (l) =>
        sql`
          INSERT INTO console_links (id, digest, kind, email, operator, account_id, role, created_by, created_at, expires_at)
          VALUES (${l.id}, ${l.digest}, ${l.kind}, ${l.email}, ${l.operator}, ${l.accountId}, ${l.role}, ${l.createdBy}, ${l.createdAt}, ${l.expiresAt})`
    })
    const findLink = SqlSchema.findOneOption({
      Request: Schema.Uint8Array,
      Result: LinkRow,
      execute: (digest) => sql`SELECT ${columns} FROM console_links l WHERE digest = ${digest} AND ${VALID}`
    })
    const useLink = SqlSchema.findOneOption({
      Request: Schema.Struct({ digest: Schema.Uint8Array, kind: LinkKind, at: Schema.Date }),
      Result: LinkRow,
      execute: ({ at, digest, kind }) =>
        sql`
          UPDATE console_links l SET used_at = ${at}
          WHERE digest = ${digest} AND kind = ${kind} AND used_at IS NULL AND expires_at > ${at} AND ${VALID}
          RETURNING ${columns}`
    })
    const findPending = SqlSchema.findAll({
      Request: Schema.Struct({ accountId: Schema.String, at: Schema.Date }),
      Result: LinkRow,
      execute: ({ accountId, at }) =>
        sql`
          SELECT ${columns} FROM console_links l
          WHERE account_id = ${accountId} AND kind = 'invitation' AND used_at IS NULL AND expires_at > ${at} AND ${VALID}
          ORDER BY created_at DESC, id`
    })
    // By its unique id behind a fence, then by the primary key: on a fresh database the account's
    // open links (console_links_account) were the plan, whatever their number.
    const deletePending = SqlSchema.findOneOption({
      Request: Schema.Struct({ accountId: Schema.String, id: Schema.String }),
      Result: Schema.Struct({ id: Schema.String }),
      execute: ({ accountId, id }) =>
        sql`
            DELETE FROM console_links WHERE digest = (
              SELECT l.digest FROM (SELECT digest, account_id, kind, used_at FROM console_links WHERE id = ${id} OFFSET 0) l
              WHERE l.account_id = ${accountId} AND l.kind = 'invitation' AND l.used_at IS NULL)
            RETURNING id`
    })

    return ConsoleLinks.of({
      create: Effect.fn("ConsoleLinks.create")(function*(link) {
        const at = yield* now
        const token = newToken()
        const expiresAt = new Date(at.getTime() + (link.kind === "invitation" ? config.invitationMillis : config.signInLinkMillis))
        yield* rowDefects(insertLink({
          id: `lnk_${Crypto.randomBytes(10).toString("hex")}`,
          digest: tokenDigest(token),
          kind: link.kind,
          email: normalizeEmail(link.email),
          operator: link.operator,
          accountId: link.operator ? null : link.accountId,
          role: link.operator ? null : link.role,
          createdBy: link.createdBy ?? null,
          createdAt: at,
          expiresAt
        }))
        return { token, expiresAt }
      }),

      inspect: Effect.fn("ConsoleLinks.inspect")(function*(token) {
        if (!isToken(token)) return yield* new InvalidLink()
        const row = Option.getOrUndefined(yield* rowDefects(findLink(tokenDigest(token))))
        if (row === undefined || row.usedAt !== null || row.expiresAt <= (yield* now)) return yield* new InvalidLink()
        return row
      }),

      consume: Effect.fn("ConsoleLinks.consume")(function*(token, kind) {
        if (!isToken(token)) return yield* new InvalidLink()
        const at = yield* now
        const row = yield* rowDefects(useLink({ digest: tokenDigest(token), kind, at }))
        if (Option.isNone(row)) return yield* new InvalidLink()
        return row.value
      }),

      pendingInvitations: Effect.fn("ConsoleLinks.pendingInvitations")(function*(accountId) {
        const at = yield* now
        return yield* rowDefects(findPending({ accountId, at }))
      }),

      revokeInvitation: Effect.fn("ConsoleLinks.revokeInvitation")((accountId, id) => Effect.map(rowDefects(deletePending({ accountId, id })), Option.isSome))
    })
  }))
}
