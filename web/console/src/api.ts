/**
 * The console's calls to its node (`/console/api`, same origin): JSON in and out, the session cookie
 * sent by the browser, the session's CSRF token on every change. A 401 means the session is gone
 * (signed out, expired): the console goes back to the sign-in page with the node's message.
 */
import type { AccountList, AccountView, ConsoleConfigView, ConsoleWebhookView, CreatedKey, CreatedLink, InvitationList, InvitationView, KeyList, KeyView,
  LinkView, MemberList, NetworkList, OverviewView, RevealedSecret, SessionView, SignOutResult } from "../../../src/api/consoleSchemas.ts"
import type { ProofBundle } from "../../../src/api/proofBundle.ts"
import type { RecordList, RecordView } from "../../../src/api/recordSchemas.ts"
import type { DeliveryList, DeliveryView, RequestList, RequestRedelivery, RequestView, RotationResult } from "../../../src/api/webhookSchemas.ts"

export type Session = typeof SessionView.Type
export type Account = typeof AccountView.Type
export type Overview = typeof OverviewView.Type
export type Key = typeof KeyView.Type
export type Webhook = typeof ConsoleWebhookView.Type
export type Delivery = typeof DeliveryView.Type
export type WebhookRequest = typeof RequestView.Type
export type Record_ = typeof RecordView.Type
export type Bundle = typeof ProofBundle.Type
export type Network = (typeof NetworkList.Type)["networks"][number]
export type Config = typeof ConsoleConfigView.Type
export type Link = typeof LinkView.Type
export type Environment = "test" | "live"

const BASE = "/console/api"

export class ApiError extends Error {
  readonly status: number
  readonly code: string
  constructor(status: number, code: string, message: string) {
    super(message)
    this.status = status
    this.code = code
  }
}

let csrfToken = ""
export const setCsrfToken = (token: string) => {
  csrfToken = token
}

/** Called with the node's message when a request finds no session (401). */
let onSignedOut: (message: string) => void = () => {}
export const whenSignedOut = (f: (message: string) => void) => {
  onSignedOut = f
}

const call = async <A>(method: string, path: string, body?: unknown, options: { signedOutIsError?: boolean } = {}): Promise<A> => {
  const headers: Record<string, string> = { accept: "application/json" }
  if (method !== "GET") {
    headers["content-type"] = "application/json"
    if (csrfToken !== "") headers["x-csrf-token"] = csrfToken
  }
  let response: Response
  try {
    response = await fetch(BASE + path, {
      method,
      headers,
      credentials: "same-origin",
      cache: "no-store",
      body: method === "GET" || method === "DELETE" ? undefined : JSON.stringify(body ?? {})
    })
  } catch {
    throw new ApiError(0, "NETWORK", "The node did not answer: check your connection and try again.")
  }
  const json = await response.json().catch(() => undefined) as { success?: boolean; data?: A; error?: string; errorCode?: string } | undefined
  if (response.ok && json?.success === true) return json.data as A
  const error = new ApiError(response.status, json?.errorCode ?? "UNKNOWN", json?.error ?? `HTTP ${response.status}`)
  if (response.status === 401 && !options.signedOutIsError) onSignedOut(error.message)
  throw error
}

const q = (params: Record<string, string | undefined>) => {
  const s = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") s.set(k, v)
  const text = s.toString()
  return text === "" ? "" : `?${text}`
}

const acct = (accountId: string) => `/accounts/${encodeURIComponent(accountId)}`

export const api = {
  session: () => call<Session>("GET", "/session", undefined, { signedOutIsError: true }),
  signIn: (email: string, password: string) => call<Session>("POST", "/session", { email, password }, { signedOutIsError: true }),
  redeemLink: (token: string) => call<Session>("POST", "/links/redeem", { token }, { signedOutIsError: true }),
  inspectInvitation: (token: string) => call<Link>("POST", "/invitations/inspect", { token }, { signedOutIsError: true }),
  acceptInvitation: (token: string, password: string) => call<Session>("POST", "/invitations/accept", { token, password }, { signedOutIsError: true }),
  signOut: () => call<typeof SignOutResult.Type>("DELETE", "/session"),
  signOutEverywhere: () => call<typeof SignOutResult.Type>("POST", "/session/everywhere", {}),
  config: () => call<Config>("GET", "/config"),

  accounts: () => call<typeof AccountList.Type>("GET", "/accounts"),
  createAccount: (body: { name: string; email?: string; plan: string; activate?: boolean }) => call<Account>("POST", "/accounts", body),
  activate: (id: string) => call<Account>("POST", `${acct(id)}/activate`, {}),
  suspend: (id: string) => call<Account>("POST", `${acct(id)}/suspend`, {}),
  changePlan: (id: string, plan: string) => call<Account>("POST", `${acct(id)}/plan`, { plan }),
  networks: () => call<typeof NetworkList.Type>("GET", "/networks"),

  account: (id: string) => call<Account>("GET", acct(id)),
  overview: (id: string, environment: Environment) => call<Overview>("GET", `${acct(id)}/overview${q({ environment })}`),
  keys: (id: string) => call<typeof KeyList.Type>("GET", `${acct(id)}/keys`),
  createKey: (id: string, body: { name: string; environment: Environment; expiresInDays?: number }) =>
    call<typeof CreatedKey.Type>("POST", `${acct(id)}/keys`, body),
  revokeKey: (id: string, keyId: string) => call<Key>("POST", `${acct(id)}/keys/${encodeURIComponent(keyId)}/revoke`, {}),

  // The webhook, its secret and rotation are per environment (docs/webhooks.md, "Test and live").
  webhook: (id: string, environment: Environment) => call<Webhook>("GET", `${acct(id)}/webhook${q({ environment })}`),
  saveWebhook: (id: string, environment: Environment, body: {
    url: string | null
    events: Array<string>
    payloadFormat: string
    enabled: boolean
    delivery: { mode: string; maxEvents: number; maxWaitMs: number }
  }) => call<Webhook>("PUT", `${acct(id)}/webhook${q({ environment })}`, body),
  revealSecret: (id: string, environment: Environment) =>
    call<typeof RevealedSecret.Type>("POST", `${acct(id)}/webhook/secret/reveal${q({ environment })}`, {}),
  rotateSecret: (id: string, environment: Environment) =>
    call<typeof RotationResult.Type>("POST", `${acct(id)}/webhook/secret/rotate${q({ environment })}`, {}),
  confirmSecret: (id: string, environment: Environment) => call<Webhook>("POST", `${acct(id)}/webhook/secret/confirm${q({ environment })}`, {}),
  testWebhook: (id: string, environment: Environment) => call<Delivery>("POST", `${acct(id)}/webhook/test`, { environment }),

  deliveries: (id: string, params: Record<string, string | undefined>) => call<typeof DeliveryList.Type>("GET", `${acct(id)}/deliveries${q(params)}`),
  delivery: (id: string, environment: Environment, deliveryId: string) =>
    call<Delivery>("GET", `${acct(id)}/deliveries/${encodeURIComponent(deliveryId)}${q({ environment })}`),
  redeliver: (id: string, environment: Environment, deliveryId: string) =>
    call<Delivery>("POST", `${acct(id)}/deliveries/${encodeURIComponent(deliveryId)}/redeliver${q({ environment })}`, {}),
  requests: (id: string, params: Record<string, string | undefined>) => call<typeof RequestList.Type>("GET", `${acct(id)}/requests${q(params)}`),
  redeliverRequest: (id: string, environment: Environment, requestId: string) =>
    call<typeof RequestRedelivery.Type>("POST", `${acct(id)}/requests/${encodeURIComponent(requestId)}/redeliver${q({ environment })}`, {}),

  records: (id: string, params: Record<string, string | undefined>) => call<typeof RecordList.Type>("GET", `${acct(id)}/records${q(params)}`),
  record: (id: string, environment: Environment, recordId: string) =>
    call<Record_>("GET", `${acct(id)}/records/${encodeURIComponent(recordId)}${q({ environment })}`),
  proof: (id: string, environment: Environment, recordId: string) =>
    call<Bundle>("GET", `${acct(id)}/records/${encodeURIComponent(recordId)}/proof${q({ environment })}`),
  certificateUrl: (id: string, environment: Environment, recordId: string) =>
    `${BASE}${acct(id)}/records/${encodeURIComponent(recordId)}/certificate${q({ environment })}`,

  members: (id: string) => call<typeof MemberList.Type>("GET", `${acct(id)}/members`),
  invite: (id: string, email: string, role: string) => call<typeof CreatedLink.Type>("POST", `${acct(id)}/members/invite`, { email, role }),
  invitations: (id: string) => call<typeof InvitationList.Type>("GET", `${acct(id)}/invitations`),
  revokeInvitation: (id: string, invitationId: string) =>
    call<typeof InvitationView.Type>("POST", `${acct(id)}/invitations/${encodeURIComponent(invitationId)}/revoke`, {}),
  removeMember: (id: string, userId: string) => call<typeof SignOutResult.Type>("POST", `${acct(id)}/members/${encodeURIComponent(userId)}/remove`, {})
}
