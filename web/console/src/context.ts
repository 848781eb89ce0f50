/** What every page gets: who is signed in, which account and environment, the route's parameters. */
import type { Config, Environment, Session } from "./api.ts"

export interface PageContext {
  readonly session: Session
  readonly config: Config
  /** The account the page is about (a member's own; the one an operator opened). */
  readonly accountId: string
  readonly environment: Environment
  /** Switches the console's environment (the header's switch) and renders the page again. */
  readonly setEnvironment: (environment: Environment) => void
  /** Path segments after the page's name (e.g. a record id). */
  readonly rest: ReadonlyArray<string>
  readonly query: URLSearchParams
  /** Whether the user may change things in this account (operators, the account's admins). */
  readonly canChange: boolean
  readonly navigate: (hash: string) => void
  /** Renders the current route again (after a change). */
  readonly refresh: () => void
}

export type Page = (ctx: PageContext) => Promise<Node>

/** `#/a/<account>/<page>/<rest>?<query>` */
export const accountHash = (accountId: string, page: string, query?: Record<string, string | undefined>) => {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== "") q.set(k, v)
  const text = q.toString()
  return `#/a/${encodeURIComponent(accountId)}/${page}${text ? `?${text}` : ""}`
}
