/**
 * The node's own pages, outside `/v1`: the console at `/console` and the public verify page at
 * `/verify` (SPEC 9), each with its Content-Security-Policy (web/assets.ts), and `/verify/config.json`
 * (the public JSON-RPC endpoints the verify page may call from the visitor's browser).
 *
 * The files are the committed build (web/console/console.js, web/verify/verify.js: nothing is built
 * at install or start; test/web/assets.test.ts keeps them fresh), read once at start. Caching: every
 * file carries a strong ETag (its SHA-256) and `Cache-Control: no-cache`, so a browser keeps its copy
 * and asks each time whether it is still current (304 Not Modified, no body): never a stale script
 * after an upgrade, and no hashed names to rewrite into the pages.
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { consolePageAssets, consolePageCsp, consolePageHeaders, VERIFY_CONFIG_PATH, verifyPageAssets, verifyPageCsp, verifyPageHeaders,
  type WebAsset } from "../../web/assets.ts"
import { errorBody } from "../api/errors.ts"
import { EvmNetworks } from "../evm/config.ts"

interface Page {
  readonly body: Uint8Array
  readonly etag: string
  readonly headers: Readonly<Record<string, string>>
}

const etagOf = (body: Uint8Array) => `"${Crypto.hash("sha256", body, "base64url").slice(0, 32)}"`

const page = (body: Uint8Array, contentType: string, headers: Readonly<Record<string, string>>): Page => ({
  body,
  etag: etagOf(body),
  headers: { "content-type": contentType, "cache-control": "no-cache", ...headers }
})

/** Whether `If-None-Match` names this ETag (a list, or `*`). */
const notModified = (request: HttpServerRequest.HttpServerRequest, etag: string) => {
  const header = request.headers["if-none-match"]
  if (header === undefined) return false
  return header.trim() === "*" || header.split(",").some((t) => t.trim().replace(/^W\//, "") === etag)
}

const serve = (p: Page) => (request: HttpServerRequest.HttpServerRequest) => {
  if (request.method !== "GET" && request.method !== "HEAD") {
    return Effect.succeed(HttpServerResponse.jsonUnsafe(errorBody("METHOD_NOT_ALLOWED", `Method ${request.method} is not allowed here`), {
      status: 405,
      headers: { allow: "GET, HEAD" }
    }))
  }
  const headers = { ...p.headers, etag: p.etag }
  if (notModified(request, p.etag)) return Effect.succeed(HttpServerResponse.empty({ status: 304, headers }))
  return Effect.succeed(
    request.method === "HEAD"
      ? HttpServerResponse.empty({ status: 200, headers: { ...headers, "content-length": String(p.body.byteLength) } })
      : HttpServerResponse.uint8Array(p.body, { headers })
  )
}

const filePages = (assets: ReadonlyArray<WebAsset>, headers: Readonly<Record<string, string>>) =>
  assets.map((a) => [a.urlPath, page(Fs.readFileSync(a.file), a.contentType, headers)] as const)

/** The verify page's network list: EVM networks that configure a public JSON-RPC URL (never the signer's). */
export const verifyPageConfig = (networks: ReadonlyArray<{
  readonly networkId: string
  readonly chainId: number
  readonly publicRpcUrl: string | undefined
  readonly explorerUrl: string | undefined
}>) => ({
  networks: networks.flatMap((n) =>
    n.publicRpcUrl === undefined ? [] : [{
      networkId: n.networkId,
      chainType: "evm" as const,
      chainId: n.chainId,
      rpcUrl: n.publicRpcUrl,
      ...(n.explorerUrl === undefined ? {} : { explorerUrl: n.explorerUrl })
    }]
  )
})

export const PagesLayer = Layer.unwrap(Effect.gen(function*() {
  const { networks } = yield* EvmNetworks
  const config = verifyPageConfig(networks)
  // The listed endpoints, and any https endpoint a visitor enters (the page holds no secret and sends
  // nothing to this server; plain http endpoints other than the listed ones stay refused).
  const verifyCsp = verifyPageCsp([...config.networks.map((n) => n.rpcUrl), "https:"])
  const verifyHeaders = { "content-security-policy": verifyCsp, ...verifyPageHeaders }
  const pages: Array<readonly [string, Page]> = [
    ...filePages(consolePageAssets, { "content-security-policy": consolePageCsp, ...consolePageHeaders }),
    ...filePages(verifyPageAssets, verifyHeaders),
    [VERIFY_CONFIG_PATH, page(new TextEncoder().encode(JSON.stringify(config)), "application/json", verifyHeaders)]
  ]
  // The router treats `/console` and `/console/` as one route.
  const unique = new Map(pages.map(([path, p]) => [path.replace(/(.)\/$/, "$1"), p]))
  return HttpRouter.addAll([...unique].map(([path, p]) => HttpRouter.route("*", path as `/${string}`, serve(p))))
}))
