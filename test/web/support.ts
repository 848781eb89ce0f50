/**
 * Web test support: the verify page's files (web/assets.ts) served by a small node:http server with
 * the page's Content-Security-Policy, as the node will serve them, plus `/verify/config.json`.
 */
import * as Fs from "node:fs"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { VERIFY_CONFIG_PATH, verifyPageAssets, verifyPageCsp, verifyPageHeaders } from "../../web/assets.ts"

export interface StaticServer {
  readonly origin: string
  /** `<origin>/verify` */
  readonly verifyUrl: string
  readonly csp: string
  /** Replaces what /verify/config.json answers (undefined: 404). */
  setConfig(config: unknown): void
  close(): Promise<void>
}

export interface Extra {
  readonly body: string
  readonly contentType: string
}

export const serveVerifyPage = async (options: {
  /** Origins (or scheme sources) the page may connect to besides its own. */
  readonly connectSrc: ReadonlyArray<string>
  readonly config?: unknown
  /** More files, e.g. a harness test's own page. */
  readonly extra?: Readonly<Record<string, Extra>>
}): Promise<StaticServer> => {
  const csp = verifyPageCsp(options.connectSrc)
  let config = options.config
  const assets = new Map(verifyPageAssets.map((a) => [a.urlPath, a]))
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? "/", "http://x").pathname
    const send = (status: number, type: string, body: string | Buffer) => {
      res.writeHead(status, { "content-type": type, "content-security-policy": csp, "cache-control": "no-store", ...verifyPageHeaders })
      res.end(req.method === "HEAD" ? undefined : body)
      console.log(`[static] ${req.method} ${req.url?.slice(0, 120)} ${status}`)
    }
    if (req.method !== "GET" && req.method !== "HEAD") return send(405, "text/plain", "method not allowed")
    const asset = assets.get(path)
    if (asset !== undefined) return send(200, asset.contentType, Fs.readFileSync(asset.file))
    if (path === VERIFY_CONFIG_PATH && config !== undefined) return send(200, "application/json", JSON.stringify(config))
    const extra = options.extra?.[path]
    if (extra !== undefined) return send(200, extra.contentType, extra.body)
    send(404, "text/plain", "not found")
  }
  const server = createServer(handle)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    origin,
    verifyUrl: `${origin}/verify`,
    csp,
    setConfig: (c) => void (config = c),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
