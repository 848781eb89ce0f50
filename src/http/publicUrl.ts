/**
 * The node's public base URL, for links it hands out (certificates' QR codes, console invitations,
 * the verify page's address, the console's `publicUrl`): PUBLIC_URL when set (required by `anchord start`
 * on a HOST other than loopback), else the listener's http://HOST:PORT (https:// when the node serves TLS
 * itself, TLS_CERT_FILE). Whether a request came over
 * HTTPS (the console cookie's Secure flag) is a separate question, answered per request.
 */
import { Option } from "effect"
import type { HttpServerRequest } from "effect/http"
import { type AppConfigShape, parseIpLiteral } from "../config.ts"
import { forwardedHttps } from "./forwarded.ts"

/** Whether the request came over HTTPS: a TLS connection, or X-Forwarded-Proto from a trusted proxy (src/http/forwarded.ts). */
export const requestIsHttps = (request: HttpServerRequest.HttpServerRequest, config: Pick<AppConfigShape, "trustProxy">): boolean => {
  if (forwardedHttps(Option.getOrUndefined(request.remoteAddress), request.headers["x-forwarded-proto"], config.trustProxy)) return true
  return (request.source as { socket?: { encrypted?: boolean } } | undefined)?.socket?.encrypted === true
}

/** The listener's own URL, as `anchord start` prints it: http(s)://HOST:PORT (an IPv6 HOST in brackets). */
export const listenerUrl = (host: string, port: number, https = false): string =>
  `${https ? "https" : "http"}://${host.includes(":") ? `[${host}]` : host}:${port}`

/** Whether the node serves HTTPS itself (TLS_CERT_FILE / TLS_KEY_FILE). */
export const servesTls = (config: Pick<AppConfigShape, "tls">): boolean => Option.isSome(config.tls)

/**
 * The base of every link the node hands out: PUBLIC_URL, else the listener (http://HOST:PORT, PORT as
 * bound when it was 0). Never the request's Host header: a client could otherwise have the node sign
 * in, invite or certify with links to a host of its choosing.
 */
export const publicBaseUrl = (
  request: HttpServerRequest.HttpServerRequest,
  config: Pick<AppConfigShape, "baseUrl" | "host" | "port" | "tls">
): string => {
  if (Option.isSome(config.baseUrl)) return config.baseUrl.value.replace(/\/+$/, "")
  const bound = (request.source as { socket?: { localPort?: number } } | undefined)?.socket?.localPort
  return listenerUrl(config.host, config.port === 0 && bound !== undefined ? bound : config.port, servesTls(config))
}

/**
 * `anchord start` on a HOST reachable from elsewhere needs PUBLIC_URL: links (sign-in, invitations,
 * certificates' QR codes) are built from it and never from a request's Host header, and the listener's
 * own address (0.0.0.0, a private address behind a proxy) is rarely the one people use. A node on
 * loopback only, and `anchord dev`, fall back to http://HOST:PORT.
 */
export const publicUrlRefusal = (config: { readonly host: string; readonly baseUrl: Option.Option<string> }): string | undefined => {
  if (Option.isSome(config.baseUrl) || isLoopbackHost(config.host)) return undefined
  return `PUBLIC_URL is required when HOST (${config.host}) is not a loopback address: set it to the address people ` +
    `and proxies reach this node at (e.g. PUBLIC_URL=https://anchord.example.com): sign-in and invitation links ` +
    `and certificates' QR codes are built from it`
}

const isLoopbackHost = (host: string) => {
  if (host.toLowerCase() === "localhost") return true
  const ip = parseIpLiteral(host.replace(/^\[(.*)\]$/, "$1"))
  return ip !== undefined && ip.range() === "loopback"
}
