/**
 * One-time links (`console_links`, migration 0009): an **invitation** (an account admin or an operator
 * invites an email as `admin` or `viewer` of an account, or as an operator; the link lets them choose a
 * password, which makes their user) and a **sign-in link** (signs an existing user in once: the dev
 * operator of `npm start`, or an operator's link for a user). Only the token's SHA-256 is stored; the
 * token travels in the URL's fragment (`/console/#/invite/<token>`, `/console/#/link/<token>`), which
 * browsers never send to a server. Using a link marks it used in the same statement that reads it, so
 * it works once even when two requests race.
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { decodeFirst } from "../db/rows.ts"
import { ConsoleConfig } from "./config.ts"
import { InvalidLink } from "./errors.ts"
import { isToken, newToken, tokenDigest } from "./tokens.ts"
import { normalizeEmail, Role } from "./Users.ts"

export const LinkKind = Schema.Literals(["invitation", "sign-in"])
export type LinkKind = typeof LinkKind.Type

export const LinkRow = Schema.Struct({
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

type Sql<A, E = never> = Effect.Effect<A, E | SqlError.SqlError>

export class ConsoleLinks extends Context.Service<ConsoleLinks, {
  /** A new link: its token (shown once, to whoever creates it) and when it expires. */
  readonly create: (link: NewLink) => Sql<{ readonly token: string; readonly expiresAt: Date }>
  /** What an unused, unexpired link is for (the invitation page shows it), or InvalidLink. */
  readonly inspect: (token: string) => Sql<LinkRow, InvalidLink>
  /** Uses the link (once), or InvalidLink; call inside the transaction that acts on it. */
  readonly consume: (token: string, kind: LinkKind) => Sql<LinkRow, InvalidLink>
}>()("anchord/console/ConsoleLinks") {
  static readonly layer = Layer.effect(ConsoleLinks, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* ConsoleConfig
    const first = decodeFirst(LinkRow)
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
    const columns = sql`kind, email, operator, account_id, role, created_by, created_at, expires_at, used_at`

    return ConsoleLinks.of({
      create: Effect.fn("ConsoleLinks.create")(function*(link) {
        const at = yield* now
        const token = newToken()
        const expiresAt = new Date(at.getTime() + (link.kind === "invitation" ? config.invitationMillis : config.signInLinkMillis))
        yield* sql`
          INSERT INTO console_links (digest, kind, email, operator, account_id, role, created_by, created_at, expires_at)
          VALUES (${tokenDigest(token)}, ${link.kind}, ${normalizeEmail(link.email)}, ${link.operator},
                  ${link.operator ? null : link.accountId}, ${link.operator ? null : link.role}, ${link.createdBy ?? null},
                  ${at}, ${expiresAt})`
        return { token, expiresAt }
      }),

      inspect: Effect.fn("ConsoleLinks.inspect")(function*(token) {
        if (!isToken(token)) return yield* new InvalidLink()
        const row = yield* sql`SELECT ${columns} FROM console_links WHERE digest = ${tokenDigest(token)}`.pipe(Effect.flatMap(first))
        if (row === undefined || row.usedAt !== null || row.expiresAt <= (yield* now)) return yield* new InvalidLink()
        return row
      }),

      consume: Effect.fn("ConsoleLinks.consume")(function*(token, kind) {
        if (!isToken(token)) return yield* new InvalidLink()
        const at = yield* now
        const row = yield* sql`
          UPDATE console_links SET used_at = ${at}
          WHERE digest = ${tokenDigest(token)} AND kind = ${kind} AND used_at IS NULL AND expires_at > ${at}
          RETURNING ${columns}`.pipe(Effect.flatMap(first))
        if (row === undefined) return yield* new InvalidLink()
        return row
      })
    })
  }))
}
