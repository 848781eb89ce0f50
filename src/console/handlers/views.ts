/** What the console's handlers send: accounts, keys, users, invitations and webhooks as the page shows them. */
import type { NetworkState } from "../../anchoring/NetworkHealth.ts"
import type { CurrentSessionShape } from "../../api/console.ts"
import type { Account, ApiKeyInfo } from "../../auth/Accounts.ts"
import type { WebhookSettingsRow } from "../../webhooks/rows.ts"
import { settingsView } from "../../webhooks/views.ts"
import type { LinkRow } from "../Links.ts"
import type { ConsoleUserInfo } from "../Users.ts"

export const iso = (d: Date | null | undefined) => d === null || d === undefined ? null : d.toISOString()

/** A successful answer's envelope. */
export const ok = <A>(data: A) => ({ success: true as const, data })

/** The start (UTC) of a `YYYY-MM-DD` day. */
export const dayStart = (day: string) => new Date(`${day}T00:00:00.000Z`)

/** A network's state as this node sees it: a follower's, or its leader's endpoint. */
export const networkStatus = (s: NetworkState) =>
  !s.leader ? "follower" as const : s.rpc === "down" ? "unreachable" as const : s.rpc === "up" ? "up" as const : "starting" as const

export const accountView = (a: Account) => ({
  id: a.id,
  name: a.name,
  email: a.email,
  plan: a.plan,
  status: a.status,
  ratePerSecond: a.ratePerSecond,
  defaultChain: a.defaultChain,
  createdAt: a.createdAt.toISOString(),
  activatedAt: iso(a.activatedAt)
})

export const keyView = (k: ApiKeyInfo, now: number) => ({
  id: k.id,
  name: k.name,
  environment: k.environment,
  display: k.display,
  status: k.revokedAt !== null ? "revoked" as const : k.expiresAt !== null && k.expiresAt.getTime() <= now ? "expired" as const : "active" as const,
  createdAt: k.createdAt.toISOString(),
  lastUsedAt: iso(k.lastUsedAt),
  expiresAt: iso(k.expiresAt),
  revokedAt: iso(k.revokedAt)
})

export const userView = (u: ConsoleUserInfo | CurrentSessionShape["user"], accountName: string | null) => ({
  id: u.id,
  email: u.email,
  operator: u.operator,
  accountId: u.accountId,
  accountName,
  role: u.role,
  createdAt: u.createdAt.toISOString()
})

/** A pending invitation as its account's admins see it (never its token: only its digest is stored). */
export const invitationView = (l: LinkRow) => ({
  id: l.id,
  email: l.email,
  role: l.role ?? "viewer" as const,
  createdBy: l.createdBy,
  createdAt: l.createdAt.toISOString(),
  expiresAt: l.expiresAt.toISOString()
})

/** The secret's first characters only: enough to tell two apart, nothing to sign with. */
const secretPreview = (secret: string) => `${secret.slice(0, 10)}…`

/**
 * A webhook URL as a viewer sees it: its origin only. Receivers' URLs often carry a credential in their
 * path or query (a token, a signed path), and viewers see no secret.
 */
export const redactUrl = <U extends string | null>(url: U): U => {
  if (url === null) return url
  try {
    const u = new URL(url)
    return (u.pathname === "/" && u.search === "" && u.username === "" ? u.origin : `${u.origin}/…`) as U
  } catch {
    return "…" as U
  }
}

export const webhookView = (row: WebhookSettingsRow, hideSecrets: boolean) => {
  const { secret, ...view } = settingsView(row)
  return { ...view, url: hideSecrets ? redactUrl(view.url) : view.url, secretPreview: hideSecrets ? "whsec_…" : secretPreview(secret) }
}
