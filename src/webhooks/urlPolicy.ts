/**
 * Per-request `webhookUrl` rules (SPEC 5.6): live keys need HTTPS and a host that does not resolve to
 * loopback, private, link-local, CGNAT, multicast or cloud-metadata addresses; test keys may use
 * http:// and loopback. The dispatcher checks again at delivery time, since DNS can change.
 */
import * as Dns from "node:dns/promises"
import * as Net from "node:net"

export type UrlVerdict = { readonly ok: true } | { readonly ok: false; readonly reason: string }

const v4Blocked: ReadonlyArray<readonly [string, number]> = [
  ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16], ["172.16.0.0", 12],
  ["192.0.0.0", 24], ["192.168.0.0", 16], ["198.18.0.0", 15], ["224.0.0.0", 4], ["240.0.0.0", 4]
]

const v4ToInt = (ip: string) => ip.split(".").reduce((acc, part) => (acc * 256) + Number(part), 0)

export const isBlockedAddress = (address: string): boolean => {
  if (Net.isIPv4(address)) {
    const value = v4ToInt(address)
    return v4Blocked.some(([base, bits]) => {
      const size = 2 ** (32 - bits)
      const start = v4ToInt(base)
      return value >= start && value < start + size
    })
  }
  const lower = address.toLowerCase()
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower)
  if (mapped) return isBlockedAddress(mapped[1])
  return lower === "::" || lower === "::1" || lower.startsWith("fe8") || lower.startsWith("fe9") ||
    lower.startsWith("fea") || lower.startsWith("feb") || lower.startsWith("fc") || lower.startsWith("fd") ||
    lower.startsWith("ff") || lower.startsWith("fd00:ec2")
}

const METADATA_HOSTS = new Set(["metadata.google.internal", "metadata", "instance-data", "metadata.azure.com"])

export const checkWebhookUrl = async (raw: string, environment: "test" | "live"): Promise<UrlVerdict> => {
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
