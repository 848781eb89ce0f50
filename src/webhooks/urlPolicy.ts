/**
 * The webhook egress policy, the one place its rules live (docs/webhooks.md, "Egress policy"). Used
 * when a URL is set (`webhookUrl` on POST /v1/anchor* and PATCH /v1/records/{id} in src/records, `url`
 * on PUT /v1/webhooks and the console's webhook through ./views.ts) and again when a delivery connects
 * (./sender.ts, on the address actually connected to), since DNS answers change. The same rules for
 * test and live keys:
 *
 *  - http:// or https:// only (live keys: https only), no credentials, no control characters, at
 *    most 2,048 characters;
 *  - only public unicast addresses, as ipaddr.js classifies them (its `range()` is "unicast", and for
 *    IPv6 inside 2000::/3, IANA's global unicast space): no loopback, private, link-local, CGNAT,
 *    multicast, broadcast, unspecified, reserved / documentation / benchmark, unique-local, 6to4,
 *    NAT64, Teredo, IPv4-mapped / -translated / -compatible forms; names must resolve only to such
 *    addresses, and localhost, *.localhost, *.internal and the metadata names are refused by name;
 *  - except what the operator opens with WEBHOOK_ALLOW_PRIVATE (CIDRs, addresses, host names,
 *    `loopback`): `anchord dev` opens loopback unless the variable is set.
 */
import * as Dns from "node:dns"
import * as Net from "node:net"
import ipaddr from "ipaddr.js"
import { Config, Context, Effect, Layer, Option } from "effect"
import type { Environment } from "../api/recordSchemas.ts"
import { WebhookConfigError } from "./errors.ts"

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

/** What WEBHOOK_ALLOW_PRIVATE means when it is not set: nothing (`anchord start`); `anchord dev` provides "loopback". */
export const AllowPrivateDefault = Context.Reference<string>("anchord/webhooks/AllowPrivateDefault", {
  defaultValue: () => ""
})

/** At most this many characters of a host (or entry) in a reason: the input is not echoed unbounded. */
const EXCERPT = 80
const excerpt = (text: string) => text.length <= EXCERPT ? text : `${text.slice(0, EXCERPT)}…`

// ---- address classification ----

/**
 * IANA's global unicast IPv6 space. ipaddr.js calls every IPv6 address it has no name for "unicast",
 * which includes IPv4-compatible addresses (::/96, e.g. [::127.0.0.1]) and the rest of ::/8.
 */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR("2000::/3")

const CLASS_NAMES: Record<string, string> = {
  loopback: "loopback",
  private: "private",
  linkLocal: "link-local",
  carrierGradeNat: "CGNAT",
  uniqueLocal: "unique-local",
  multicast: "multicast",
  broadcast: "broadcast",
  unspecified: "unspecified",
  reserved: "reserved or documentation",
  benchmarking: "benchmarking",
  ipv4Mapped: "IPv4-mapped",
  rfc6145: "IPv4-translated",
  rfc6052: "NAT64",
  "6to4": "6to4",
  teredo: "Teredo",
  "non-global": "non-global IPv6 (IPv4-compatible or unassigned)"
}

/** Never opened by the allowlist: not a host one delivers to (0.0.0.0 reaches this machine, though). */
const NEVER = new Set(["unspecified", "broadcast", "multicast"])

/**
 * An address Node accepts (Net.isIP), parsed. ipaddr.js reads the dotted IPv6 spelling "::a.b.c.d"
 * (IPv4-compatible) as IPv4-mapped "::ffff:a.b.c.d": dotted IPv6 forms are first put in the canonical
 * hex form by the URL parser (URLs and resolvers give that form anyway).
 */
const parseIp = (address: string) => {
  if (Net.isIPv6(address) && address.includes(".")) {
    try {
      return ipaddr.parse(new URL(`http://[${address}]/`).hostname.slice(1, -1))
    } catch {
      // a zone index: as it is
    }
  }
  return ipaddr.parse(address)
}

/** An IPv4-mapped address as the IPv4 address it carries, any other as itself. */
const unmapped = (address: string) => {
  const ip = parseIp(address)
  return ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress() ? (ip as ipaddr.IPv6).toIPv4Address() : ip
}

/** "public", or the name of the range the address is in (an ipaddr.js range name, "non-global", or "invalid"). */
export const classifyAddress = (address: string): string => {
  if (Net.isIP(address) === 0) return "invalid"
  const ip = parseIp(address)
  const range = ip.range()
  if (range !== "unicast") return range
  if (ip.kind() === "ipv6" && !ip.match(GLOBAL_UNICAST_V6)) return "non-global"
  return "public"
}

const describeClass = (range: string) => CLASS_NAMES[range] ?? "special-purpose"

// ---- the operator's allowlist (WEBHOOK_ALLOW_PRIVATE) ----

/** Cloud metadata services' names: refused by name (with localhost, *.localhost, *.internal). */
const METADATA_HOSTS = new Set(["metadata.google.internal", "metadata", "instance-data", "metadata.azure.com"])

export interface Allowlist {
  /** The entries as given, normalized, for the banner and the logs. */
  readonly entries: ReadonlyArray<string>
  readonly networks: ReadonlyArray<readonly [ipaddr.IPv4 | ipaddr.IPv6, number]>
  /** Exact host names (lowercase, no trailing dot). */
  readonly hosts: ReadonlySet<string>
  /** `*.example.internal` entries, as ".example.internal". */
  readonly suffixes: ReadonlyArray<string>
}

export const EMPTY_ALLOWLIST: Allowlist = { entries: [], networks: [], hosts: new Set(), suffixes: [] }

/** `loopback`: what a developer's receivers listen on. */
const LOOPBACK = ["127.0.0.0/8", "::1", "localhost"]

const HOST_NAME = /^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/

/** A host as compared: lowercase, without the brackets of an IPv6 literal or a trailing dot. */
const normalizeHost = (host: string) => host.replace(/^\[|\]$/g, "").replace(/\.$/, "").toLowerCase()

/**
 * WEBHOOK_ALLOW_PRIVATE: comma-separated CIDRs (`10.0.0.0/8`, `fd00::/8`), addresses (`10.1.2.3`,
 * `::1`), host names (`hooks.corp.example`, `*.svc.cluster.local`) and the keyword `loopback`
 * (127.0.0.0/8, ::1, localhost); `none` alone (or empty): nothing private. Anything else is an error
 * (the node does not start).
 */
export const parseAllowlist = (raw: string): { readonly ok: true; readonly allowlist: Allowlist } | { readonly ok: false; readonly message: string } => {
  const entries: Array<string> = []
  const networks: Array<readonly [ipaddr.IPv4 | ipaddr.IPv6, number]> = []
  const hosts = new Set<string>()
  const suffixes: Array<string> = []
  const items = raw.split(",").map((s) => s.trim()).filter((s) => s !== "")
  // `none` says "nothing" where an empty variable would mean "unset" (the config reads "" as absent).
  if (items.some((s) => s.toLowerCase() === "none")) {
    return items.length === 1 ? { ok: true, allowlist: EMPTY_ALLOWLIST } : { ok: false, message: `"none" cannot be combined with other entries` }
  }
  for (const item of items.flatMap((s) => s.toLowerCase() === "loopback" ? LOOPBACK : [s])) {
    const slash = item.indexOf("/")
    if (slash >= 0) {
      const base = item.slice(0, slash)
      const bits = item.slice(slash + 1)
      const family = Net.isIP(base)
      const max = family === 4 ? 32 : 128
      if (family === 0 || !/^\d{1,3}$/.test(bits) || Number(bits) > max) {
        return { ok: false, message: `"${excerpt(item)}" is not a CIDR (address/prefix, e.g. 10.0.0.0/8 or fd00::/8)` }
      }
      networks.push([parseIp(base), Number(bits)])
      entries.push(`${parseIp(base).toString()}/${bits}`)
    } else if (Net.isIP(item.replace(/^\[|\]$/g, "")) !== 0) {
      const ip = unmapped(item.replace(/^\[|\]$/g, ""))
      networks.push([ip, ip.kind() === "ipv4" ? 32 : 128])
      entries.push(ip.toString())
    } else {
      const host = normalizeHost(item)
      const wildcard = host.startsWith("*.")
      const name = wildcard ? host.slice(2) : host
      // Digits and dots only: an address Node would not parse (e.g. 10.1.2), not a name.
      if (!HOST_NAME.test(name) || /^[\d.]+$/.test(name)) {
        return { ok: false, message: `"${excerpt(item)}" is neither an address, a CIDR, a host name, *.domain nor "loopback"` }
      }
      if (wildcard) suffixes.push(`.${name}`)
      else hosts.add(name)
      entries.push(host)
    }
  }
  return { ok: true, allowlist: { entries: [...new Set(entries)], networks, hosts, suffixes } }
}

/** One line for the banner and the logs. */
export const describeAllowlist = (allowlist: Allowlist) =>
  allowlist.entries.length === 0 ? "public addresses only" : `public addresses and ${allowlist.entries.join(", ")}`

/** A name the operator opened; a cloud metadata name only by itself, not by a `*.internal`-style entry. */
const hostAllowed = (allowlist: Allowlist, host: string) => {
  const h = normalizeHost(host)
  return allowlist.hosts.has(h) || (!METADATA_HOSTS.has(h) && allowlist.suffixes.some((s) => h.endsWith(s)))
}

/** An address the operator opened (IPv4-mapped forms compared as the IPv4 address they carry). */
const networkAllowed = (allowlist: Allowlist, address: string) => {
  if (allowlist.networks.length === 0) return false
  const ip = unmapped(address)
  return allowlist.networks.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net, bits))
}

// ---- the checks ----

/** The URL's host as connected to: lowercase, without the brackets of an IPv6 literal. */
export const connectHostname = (url: URL) => url.hostname.replace(/^\[|\]$/g, "").toLowerCase()

/**
 * An address connected to (or a literal host): public, or opened by the allowlist (the address, or
 * the host name it was resolved from). `subject` names it in the reason.
 */
export const addressVerdict = (allowlist: Allowlist, address: string, subject: string, viaHost?: string): UrlVerdict => {
  const range = classifyAddress(address)
  if (range === "public") return { ok: true }
  const openable = range !== "invalid" && !NEVER.has(range) && !NEVER.has(unmapped(address).range())
  if (openable && (networkAllowed(allowlist, address) || (viaHost !== undefined && hostAllowed(allowlist, viaHost)))) return { ok: true }
  return { ok: false, reason: `${subject} is not a public address (${describeClass(range)})` }
}

/**
 * The addresses a name resolved to: every one must pass (a name that answers with one internal
 * address among public ones is refused). The reason names the range, not the address: the delivery
 * log must not tell a tenant what internal names resolve to.
 */
export const addressesVerdict = (allowlist: Allowlist, host: string, addresses: ReadonlyArray<string>, subject = excerpt(host)): UrlVerdict => {
  for (const address of addresses) {
    const verdict = addressVerdict(allowlist, address, "", host)
    if (!verdict.ok) {
      return { ok: false, reason: `${subject} resolves to an address that is not public (${describeClass(classifyAddress(address))})` }
    }
  }
  return { ok: true }
}

/**
 * The rules that need no DNS: scheme, credentials, length, https for live keys, the forbidden host
 * names, IP-literal hosts. Returns the host name to resolve when there is one left to check (a name
 * the allowlist does not open). `field` names the URL in the reason (the request member that carried it).
 */
export const staticVerdict = (
  raw: string,
  environment: Environment,
  allowlist: Allowlist,
  field = "webhookUrl"
): UrlVerdict & { readonly resolve?: string } => {
  if (raw.length > 2048) return { ok: false, reason: `${field} is longer than 2048 characters` }
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
  if (environment === "live" && url.protocol !== "https:") return { ok: false, reason: `${field} must use https with a live key` }
  // The WHATWG parser has already turned 2130706433, 0x7f.1, 0177.0.0.1, 127.1 into 127.0.0.1.
  const host = connectHostname(url)
  if (Net.isIP(host) !== 0) return addressVerdict(allowlist, host, `${field} host ${excerpt(host)}`)
  if (hostAllowed(allowlist, host)) return { ok: true }
  const name = normalizeHost(host)
  if (METADATA_HOSTS.has(name) || name === "localhost" || name.endsWith(".localhost") || name.endsWith(".internal")) {
    return { ok: false, reason: `${field} host ${excerpt(name)} is a local or metadata name` }
  }
  return { ok: true, resolve: host }
}

/** A request waits at most this long for the set-time lookup (the system resolver's own retries take longer). */
const RESOLVE_TIMEOUT_MS = 5_000

class ResolveTimeout extends Error {}

/** Every wait on a dependency is bounded: DNS too. */
const boundedResolve = (resolve: Resolve, host: string, millis: number): Promise<ReadonlyArray<ResolvedAddress>> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  return Promise.race([
    resolve(host),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ResolveTimeout()), millis)
    })
  ]).finally(() => clearTimeout(timer))
}

/**
 * The check when a URL is set: the static rules, then where its host name resolves now (bounded), by
 * `resolve`: the node's WebhookResolver (tests stand in for DNS there), never the system's behind its back.
 */
export const checkWebhookUrl = async (
  raw: string,
  environment: Environment,
  options: { readonly resolve: Resolve; readonly field?: string; readonly allowlist?: Allowlist; readonly resolveTimeoutMillis?: number }
): Promise<UrlVerdict> => {
  const field = options.field ?? "webhookUrl"
  const allowlist = options.allowlist ?? EMPTY_ALLOWLIST
  const first = staticVerdict(raw, environment, allowlist, field)
  if (!first.ok || first.resolve === undefined) return first.ok ? { ok: true } : first
  const host = first.resolve
  let addresses: ReadonlyArray<string>
  try {
    addresses = (await boundedResolve(options.resolve, host, options.resolveTimeoutMillis ?? RESOLVE_TIMEOUT_MS))
      .map((a) => a.address)
  } catch (error) {
    return { ok: false, reason: `${field} host ${excerpt(host)} ${error instanceof ResolveTimeout ? "did not resolve in time" : "does not resolve"}` }
  }
  if (addresses.length === 0) return { ok: false, reason: `${field} host ${excerpt(host)} does not resolve` }
  return addressesVerdict(allowlist, host, addresses, `${field} host ${excerpt(host)}`)
}

/**
 * The node's egress policy: the allowlist read once at start (WEBHOOK_ALLOW_PRIVATE, else
 * AllowPrivateDefault) and the resolver, for the set-time checks and the sender alike.
 */
export class WebhookEgress extends Context.Service<WebhookEgress, {
  readonly allowlist: Allowlist
  readonly resolve: Resolve
  /** The set-time check (400 INVALID_WEBHOOK_URL with the reason when it fails). */
  readonly check: (raw: string, environment: Environment, field?: string) => Effect.Effect<UrlVerdict>
}>()("anchord/webhooks/WebhookEgress") {
  static readonly layer = Layer.effect(WebhookEgress, Effect.gen(function*() {
    // Set: as given; unset (or empty): the default of this command.
    const configured = yield* Config.option(Config.String("WEBHOOK_ALLOW_PRIVATE"))
    const parsed = parseAllowlist(Option.isSome(configured) ? configured.value : yield* AllowPrivateDefault)
    if (!parsed.ok) return yield* new WebhookConfigError({ message: `WEBHOOK_ALLOW_PRIVATE: ${parsed.message}` })
    const resolve = yield* WebhookResolver
    const allowlist = parsed.allowlist
    // What an operator opened is worth a line at start (nothing opened is the quiet default).
    if (allowlist.entries.length > 0) yield* Effect.logInfo("webhook egress: non-public targets opened", { targets: describeAllowlist(allowlist) })
    return WebhookEgress.of({
      allowlist,
      resolve,
      check: (url, environment, field) => Effect.promise(() => checkWebhookUrl(url, environment, { field, resolve, allowlist }))
    })
  }))
}
