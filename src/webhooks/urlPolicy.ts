/**
 * The webhook URL policy (SPEC 5.6), the one place its rules live. Used when a URL is set (`webhookUrl`
 * on POST /v1/anchor* and PATCH /v1/records/{id} in src/records, `url` on PUT /v1/webhooks in ./http.ts)
 * and again at delivery time (./sender.ts), since DNS answers change:
 *
 *  - http:// or https:// only, no credentials, no control characters, at most 2,048 characters;
 *  - live keys: https only, no loopback / private / link-local / CGNAT / multicast / reserved /
 *    cloud-metadata hosts or addresses (IPv4-mapped IPv6 forms included);
 *  - test keys may use http:// and loopback.
 */
import * as Dns from "node:dns"
import * as Net from "node:net"
import { Context } from "effect"
import type { Environment } from "../api/recordSchemas.ts"

export type UrlVerdict = { readonly ok: true } | { readonly ok: false; readonly reason: string }

export interface ResolvedAddress {
  readonly address: string
  readonly family: number
}

/** Name resolution of the policy and of deliveries (a Reference so tests can stand in for DNS). */
export type Resolve = (hostname: string) => Promise<ReadonlyArray<ResolvedAddress>>

export const systemResolve: Resolve = (hostname) => Dns.promises.lookup(hostname, { all: true, verbatim: true })

export const WebhookResolver = Context.Reference<Resolve>("anchord/webhooks/WebhookResolver", {
  defaultValue: () => systemResolve
})

/** Loopback, private, link-local, CGNAT, benchmark, multicast, reserved; IPv4-mapped IPv6 included. */
const blocked = new Net.BlockList()
for (const [base, bits] of [
  ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16], ["172.16.0.0", 12],
  ["192.0.0.0", 24], ["192.168.0.0", 16], ["198.18.0.0", 15], ["224.0.0.0", 4], ["240.0.0.0", 4]
] as const) blocked.addSubnet(base, bits, "ipv4")
for (const [base, bits] of [
  ["::", 128], ["::1", 128], ["fe80::", 10], ["fc00::", 7], ["ff00::", 8], ["64:ff9b::", 96], ["2001:db8::", 32]
] as const) blocked.addSubnet(base, bits, "ipv6")

export const isBlockedAddress = (address: string): boolean =>
  Net.isIPv4(address) ? blocked.check(address, "ipv4") : Net.isIPv6(address) ? blocked.check(address, "ipv6") : true

const METADATA_HOSTS = new Set(["metadata.google.internal", "metadata", "instance-data", "metadata.azure.com"])

/** The URL's host as connected to: lowercase, without the brackets of an IPv6 literal. */
export const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, "").toLowerCase()

/**
 * The rules that need no DNS: scheme, credentials, length, and (live) https and the forbidden host
 * names. Returns the host to resolve when they pass. `field` names the URL in the reason (the member
 * of the request that carried it).
 */
export const staticVerdict = (
  raw: string,
  environment: Environment,
  field = "webhookUrl"
): UrlVerdict & { readonly host?: string } => {
  // The URL parser would drop or escape them, but the URL is stored and shown as given.
  if (/[\u0000-\u001f\u007f]/.test(raw)) return { ok: false, reason: `${field} must not contain control characters` }
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return { ok: false, reason: `${field} is not a valid absolute URL` }
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    return { ok: false, reason: `${field} must use https (or http with a test key)` }
  }
  if (url.username !== "" || url.password !== "") return { ok: false, reason: `${field} must not carry credentials` }
  if (raw.length > 2048) return { ok: false, reason: `${field} is longer than 2048 characters` }
  if (environment === "test") return { ok: true }
  if (url.protocol !== "https:") return { ok: false, reason: `${field} must use https with a live key` }
  const host = hostOf(url)
  if (METADATA_HOSTS.has(host) || host === "localhost" || host.endsWith(".localhost") || host.endsWith(".internal")) {
    return { ok: false, reason: `${field} host ${host} is not allowed with a live key` }
  }
  return { ok: true, host }
}

/** An IP literal host (live): refused when it is in a blocked range. */
export const literalVerdict = (address: string): UrlVerdict =>
  isBlockedAddress(address) ? { ok: false, reason: `${address} is a loopback, private, link-local or metadata address` } : { ok: true }

/**
 * The addresses a name resolved to (live): refused when any of them is in a blocked range. `subject`
 * is what the reason names (the request member at set time, the host name at delivery time).
 */
export const addressesVerdict = (subject: string, addresses: ReadonlyArray<string>): UrlVerdict => {
  const hit = addresses.find(isBlockedAddress)
  return hit === undefined
    ? { ok: true }
    : { ok: false, reason: `${subject} resolves to a loopback, private, link-local or metadata address (${hit})` }
}

/** The check when a URL is set: the static rules, then (live) where the host resolves now. */
export const checkWebhookUrl = async (
  raw: string,
  environment: Environment,
  options: { readonly field?: string; readonly resolve?: Resolve } = {}
): Promise<UrlVerdict> => {
  const field = options.field ?? "webhookUrl"
  const first = staticVerdict(raw, environment, field)
  if (!first.ok || environment === "test" || first.host === undefined) return first.ok ? { ok: true } : first
  const host = first.host
  let addresses: ReadonlyArray<string>
  if (Net.isIP(host)) {
    addresses = [host]
  } else {
    try {
      addresses = (await (options.resolve ?? systemResolve)(host)).map((a) => a.address)
    } catch {
      return { ok: false, reason: `${field} host ${host} does not resolve` }
    }
  }
  return addressesVerdict(field, addresses)
}
