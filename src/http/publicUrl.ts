/**
 * The node's public base URL, for links it hands out (certificates' QR codes, console invitations,
 * the verify page's address): PUBLIC_URL when set (set it in production: it is the one trusted answer),
 * else as this request reached the node: its Host header, over https when the connection says so
 * (X-Forwarded-Proto only with TRUST_PROXY).
 */
import { Option } from "effect"
import type { HttpServerRequest } from "effect/http"
import type { AppConfigShape } from "../config.ts"
import { forwardedHttps } from "./forwarded.ts"

const HOST = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/

/** Whether the request came over HTTPS: a TLS connection, or X-Forwarded-Proto from a trusted proxy (src/http/forwarded.ts). */
export const requestIsHttps = (request: HttpServerRequest.HttpServerRequest, config: Pick<AppConfigShape, "trustProxy">): boolean => {
  if (forwardedHttps(Option.getOrUndefined(request.remoteAddress), request.headers["x-forwarded-proto"], config.trustProxy)) return true
  return (request.source as { socket?: { encrypted?: boolean } } | undefined)?.socket?.encrypted === true
}

export const publicBaseUrl = (request: HttpServerRequest.HttpServerRequest, config: Pick<AppConfigShape, "baseUrl" | "host" | "port" | "trustProxy">): string => {
  if (Option.isSome(config.baseUrl)) return config.baseUrl.value.replace(/\/+$/, "")
  const host = request.headers.host
  const scheme = requestIsHttps(request, config) ? "https" : "http"
  // A Host header that is not a plain host[:port] is not echoed into links.
  return host !== undefined && HOST.test(host) ? `${scheme}://${host}` : `${scheme}://${config.host}:${config.port}`
}
