/**
 * The public verify page's files and headers, for whatever serves them (the node at `/verify`, the
 * browser tests' static server). docs/console.md describes the whole contract.
 */
import * as Path from "node:path"

export const WEB_DIR = import.meta.dirname

export interface WebAsset {
  /** URL path the file is served at. */
  readonly urlPath: string
  /** The file, absolute. */
  readonly file: string
  readonly contentType: string
}

const asset = (urlPath: string, file: string, contentType: string): WebAsset => ({ urlPath, file: Path.join(WEB_DIR, file), contentType })

/**
 * Everything the page loads, and nothing else: its TypeScript sources under web/verify/src are
 * not served. `verify.js` is built from them (web/build.ts) and committed.
 */
export const verifyPageAssets: ReadonlyArray<WebAsset> = [
  asset("/verify", "verify/index.html", "text/html; charset=utf-8"),
  asset("/verify/", "verify/index.html", "text/html; charset=utf-8"),
  asset("/verify/verify.js", "verify/verify.js", "text/javascript; charset=utf-8"),
  asset("/verify/verify.css", "verify/verify.css", "text/css; charset=utf-8"),
  // The tab's icon (the page links it; without one every browser asks for /favicon.ico and logs a 404).
  asset("/verify/favicon.svg", "favicon.svg", "image/svg+xml")
]

/**
 * The console's files (`/console`, same origin as the API): its page, its script (built from
 * web/console/src by web/build.ts and committed, like the verify page's) and its style sheet.
 */
export const consolePageAssets: ReadonlyArray<WebAsset> = [
  asset("/console", "console/index.html", "text/html; charset=utf-8"),
  asset("/console/", "console/index.html", "text/html; charset=utf-8"),
  asset("/console/console.js", "console/console.js", "text/javascript; charset=utf-8"),
  asset("/console/console.css", "console/console.css", "text/css; charset=utf-8"),
  asset("/console/favicon.svg", "favicon.svg", "image/svg+xml")
]

/**
 * The console's Content-Security-Policy: its own script and style only, network access to its own
 * origin only (its API), no frames, no plugins, no base or form targets elsewhere. Stricter than the
 * verify page's: the console handles sessions and secrets, so it talks to nothing but this node.
 */
export const consolePageCsp = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'"
].join("; ")

/** Other headers the console carries. */
export const consolePageHeaders = {
  // Invitation and sign-in tokens travel in the URL's fragment, which no Referer carries; nothing else should either.
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin"
} as const

/** Where the page reads its networks (web/verify/src/config.ts has the shape). */
export const VERIFY_CONFIG_PATH = "/verify/config.json"

/**
 * The Content-Security-Policy of the verify page: its own scripts and styles only (no inline code,
 * no eval), and network access to this origin plus the given JSON-RPC endpoints' origins (the
 * configured networks' `rpcUrl`; a visitor's own RPC URL works only if its origin is allowed here,
 * e.g. with `https:` as a source, which the page states when a connection is refused).
 */
export const verifyPageCsp = (connectSources: ReadonlyArray<string>): string => {
  const origins = new Set<string>()
  for (const s of connectSources) {
    try {
      origins.add(/^[a-z][a-z0-9+.-]*:$/i.test(s) ? s : new URL(s).origin)
    } catch {
      throw new Error(`connect-src: ${JSON.stringify(s)} is neither a URL nor a scheme source`)
    }
  }
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    `connect-src 'self'${[...origins].map((o) => ` ${o}`).join("")}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'"
  ].join("; ")
}

/** Other headers the page should carry. */
export const verifyPageHeaders = {
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff"
} as const
