/**
 * Who the client is, and whether it came over HTTPS, behind the proxies TRUST_PROXY names (src/config.ts).
 *
 * A proxy appends the address it was reached from to `X-Forwarded-For`; what stands left of the
 * entries our own proxies appended was written by the client and proves nothing. So the client is
 * found from the right: the chain is the header's entries followed by the connection's peer, and
 * each address a trusted proxy vouches for is stepped over until one is not trusted (ranges) or
 * the hop count is used up (hops). An entry that is not an IP address stops the walk at the proxy
 * that wrote it: that proxy is then the address counted (never the garbage, never what lies left of it).
 *
 * `X-Forwarded-Proto` is believed only from a trusted peer, and only its right-most entry: the one
 * the proxy in front of the node set or appended.
 */
import type ipaddr from "ipaddr.js"
import { parseIpLiteral, type TrustProxy } from "../config.ts"

/** An address as counted: IPv4-mapped IPv6 (`::ffff:1.2.3.4`, how dual-stack sockets report IPv4) as IPv4. */
const normalize = (ip: ipaddr.IPv4 | ipaddr.IPv6): string => ip.toString()

/**
 * One X-Forwarded-For entry as an address: `1.2.3.4`, `1.2.3.4:5678`, `2001:db8::1`, `[2001:db8::1]`,
 * `[2001:db8::1]:5678` (some proxies add the port); undefined for anything else.
 */
export const parseForwardedEntry = (entry: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined => {
  const text = entry.trim()
  if (text.length > 64) return undefined
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(text)
  if (bracketed) return bracketed[1]!.includes(":") ? parseIpLiteral(bracketed[1]!) : undefined
  const v4port = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(text)
  return parseIpLiteral(v4port ? v4port[1]! : text)
}

const inRanges = (ip: ipaddr.IPv4 | ipaddr.IPv6, ranges: ReadonlyArray<readonly [ipaddr.IPv4 | ipaddr.IPv6, number]>) =>
  ranges.some(([range, bits]) => range.kind() === ip.kind() && ip.match(range as never, bits))

/** Whether the connection's peer is one of the proxies TRUST_PROXY trusts. */
export const peerIsTrusted = (peer: string | undefined, trust: TrustProxy): boolean => {
  switch (trust._tag) {
    case "Off":
      return false
    case "Hops":
      return trust.hops > 0 && peer !== undefined
    case "Ranges": {
      const ip = peer === undefined ? undefined : parseForwardedEntry(peer)
      return ip !== undefined && inRanges(ip, trust.ranges)
    }
  }
}

/**
 * The client's address: the connection's peer (`peer`, as the socket reports it) or, behind trusted
 * proxies, the right-most address of `X-Forwarded-For` + peer that they do not vouch for.
 */
export const forwardedClient = (peer: string | undefined, forwardedFor: string | undefined, trust: TrustProxy): string => {
  if (peer === undefined) return "unknown"
  // Off: the socket's address as it reports it, nothing parsed (this runs on every request).
  if (trust._tag === "Off") return peer
  const peerIp = parseForwardedEntry(peer)
  const peerText = peerIp === undefined ? peer : normalize(peerIp)
  if (peerIp === undefined || forwardedFor === undefined || forwardedFor === "") return peerText
  const entries = forwardedFor.split(",")
  // Position 0 is the peer, 1 the right-most entry, and so on leftwards.
  let current = peerIp
  for (let step = 0; step < entries.length; step++) {
    const vouched = trust._tag === "Hops" ? step < trust.hops : inRanges(current, trust.ranges)
    if (!vouched) break
    const next = parseForwardedEntry(entries[entries.length - 1 - step]!)
    if (next === undefined) break // a trusted proxy wrote something that is no address: count that proxy
    current = next
  }
  return normalize(current)
}

/** Whether the request reached the front proxy over HTTPS, as a trusted peer says (`X-Forwarded-Proto`). */
export const forwardedHttps = (peer: string | undefined, forwardedProto: string | undefined, trust: TrustProxy): boolean => {
  if (forwardedProto === undefined || !peerIsTrusted(peer, trust)) return false
  return forwardedProto.split(",").at(-1)!.trim().toLowerCase() === "https"
}
