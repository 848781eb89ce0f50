/**
 * Per-request `webhookUrl` rules (SPEC 5.6): live keys need HTTPS and a host that does not resolve to
 * loopback, private, link-local, CGNAT, multicast or cloud-metadata addresses; test keys may use
 * http:// and loopback. The dispatcher checks again at delivery time, since DNS can change.
 */
import * as Dns from "node:dns/promises"
import * as Net from "node:net"

export type UrlVerdict = { readonly ok: true } | { readonly ok: false; readonly reason: string }

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

/**
 * The rules that need no DNS: scheme, credentials, length, and (live) https and the forbidden host
 * names. Returns the host to resolve (lowercase, without brackets) when they pass.
 */
export const staticVerdict = (raw: string, environment: "test" | "live"): UrlVerdict & { readonly host?: string } => {
  // The URL parser would drop or escape them, but the URL is stored and shown as given.
  if (/[\u0000-\u001f\u007f]/.test(raw)) return { ok: false, reason: "webhookUrl must not contain control characters" }
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return { ok: false, reason: "webhookUrl is not a valid absolute URL" }
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    return { ok: false, reason: "webhookUrl must use https (or http with a test key)" }
  }
  if (url.username !== "" || url.password !== "") return { ok: false, reason: "webhookUrl must not carry credentials" }
  if (raw.length > 2048) return { ok: false, reason: "webhookUrl is longer than 2048 characters" }
  if (environment === "test") return { ok: true }
  if (url.protocol !== "https:") return { ok: false, reason: "webhookUrl must use https with a live key" }
  const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase()
  if (METADATA_HOSTS.has(host) || host === "localhost" || host.endsWith(".localhost") || host.endsWith(".internal")) {
    return { ok: false, reason: `webhookUrl host ${host} is not allowed with a live key` }
  }
  return { ok: true, host }
}

export const checkWebhookUrl = async (raw: string, environment: "test" | "live"): Promise<UrlVerdict> => {
  const first = staticVerdict(raw, environment)
  if (!first.ok || environment === "test" || first.host === undefined) return first.ok ? { ok: true } : first
  const host = first.host
  let addresses: Array<string>
  if (Net.isIP(host)) {
    addresses = [host]
  } else {
    try {
      addresses = (await Dns.lookup(host, { all: true, verbatim: true })).map((a) => a.address)
    } catch {
      return { ok: false, reason: `webhookUrl host ${host} does not resolve` }
    }
  }
  const blocked = addresses.find(isBlockedAddress)
  if (blocked !== undefined) {
    return { ok: false, reason: `webhookUrl resolves to a loopback, private, link-local or metadata address (${blocked})` }
  }
  return { ok: true }
}
