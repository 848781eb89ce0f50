/**
 * One HTTP POST attempt, with node:http directly: no redirects followed (a 3xx is a failure), one
 * deadline over connect + request + response, keep-alive pools, and the egress policy (./urlPolicy.ts)
 * applied to every delivery, test or live, on the address actually connected to: IP literals before
 * connecting, names in the `lookup` hook, which resolves the name, refuses it when the policy does,
 * and hands the checked address to the socket, so a DNS answer that changes between check and connect
 * (rebinding) cannot slip by.
 */
import type * as Dns from "node:dns"
import * as Http from "node:http"
import * as Https from "node:https"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Tls from "node:tls"
import type { Environment } from "../api/recordSchemas.ts"
import { addressesVerdict, type Allowlist, hostOf, type Resolve, staticVerdict } from "./urlPolicy.ts"

export interface AttemptOutcome {
  readonly ok: boolean
  readonly statusCode: number | null
  readonly latencyMs: number
  readonly error: string | null
}

class Refused extends Error {
  readonly code = "EWEBHOOKREFUSED"
}

const agentOptions = { keepAlive: true, maxSockets: 256, maxFreeSockets: 256, scheduling: "lifo" as const, timeout: 60_000 }

/**
 * WEBHOOK_CA_FILE's certificates (PEM, one or more), for receivers behind a private CA: trusted on
 * top of the system roots, never instead of them. A message saying what is wrong otherwise.
 */
export const loadExtraCa = (file: string): string | { readonly error: string } => {
  let pem: string
  try {
    pem = Fs.readFileSync(file, "utf8")
  } catch (error) {
    return { error: `cannot read WEBHOOK_CA_FILE ${file}: ${(error as NodeJS.ErrnoException).code ?? "unreadable"}` }
  }
  try {
    new Crypto.X509Certificate(pem)
  } catch {
    return { error: `WEBHOOK_CA_FILE ${file} holds no PEM certificate` }
  }
  return pem
}

/**
 * Separate pools per environment: test traffic never shares a socket with live traffic (the
 * egress policy is the same for both; only the scheme rule differs). `extraCa`: WEBHOOK_CA_FILE's
 * PEM (Node's `ca` replaces the default roots, so they are listed too).
 */
export const makeAgents = (extraCa?: string) => {
  const https = extraCa === undefined ? agentOptions : { ...agentOptions, ca: [...Tls.rootCertificates, extraCa] }
  return {
    test: { http: new Http.Agent(agentOptions), https: new Https.Agent(https) },
    live: { http: new Http.Agent(agentOptions), https: new Https.Agent(https) }
  }
}
export type Agents = ReturnType<typeof makeAgents>

export const destroyAgents = (agents: Agents) => {
  for (const env of [agents.test, agents.live]) {
    env.http.destroy()
    env.https.destroy()
  }
}

/** What the sender needs of the policy (WebhookEgress). */
export interface Egress {
  readonly allowlist: Allowlist
  readonly resolve: Resolve
}

const lookupWith = ({ allowlist, resolve }: Egress): Net.LookupFunction =>
  ((hostname: string, options: Dns.LookupOptions, callback: (...args: Array<any>) => void) => {
    resolve(hostname).then(
      (all) => {
        const family = options.family === 4 || options.family === "IPv4" ? 4 : options.family === 6 || options.family === "IPv6" ? 6 : 0
        const addresses = family === 0 ? all : all.filter((a) => a.family === family)
        if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} does not resolve`), { code: "ENOTFOUND" }))
        const verdict = addressesVerdict(allowlist, hostname, addresses.map((a) => a.address))
        if (!verdict.ok) return callback(new Refused(verdict.reason))
        if (options.all) callback(null, addresses.map((a) => ({ address: a.address, family: a.family })))
        else callback(null, addresses[0].address, addresses[0].family)
      },
      (error) => callback(error)
    )
  }) as Net.LookupFunction

export interface AttemptRequest {
  readonly url: string
  readonly environment: Environment
  readonly body: string
  readonly headers: Record<string, string>
  readonly timeoutMillis: number
}

/** Never rejects: every failure is an outcome (status code, latency, error text without secrets). */
export const attempt = (
  request: AttemptRequest,
  agents: Agents,
  egress: Egress,
  signal?: AbortSignal
): Promise<AttemptOutcome> =>
  new Promise((done) => {
    const started = performance.now()
    let settled = false
    let timer: ReturnType<typeof setTimeout> | undefined
    let req: Http.ClientRequest | undefined
    const onAbort = () => {
      req?.destroy(new Error("aborted"))
      finish(null, "aborted: node shutting down")
    }
    const finish = (statusCode: number | null, error: string | null) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      signal?.removeEventListener("abort", onAbort)
      const ok = error === null && statusCode !== null && statusCode >= 200 && statusCode < 300
      done({
        ok,
        statusCode,
        // A refusal happens before any connection: its latency would only time the resolver.
        latencyMs: error?.startsWith("refused: ") ? 0 : Math.round(performance.now() - started),
        error: error ?? (ok ? null : `HTTP ${statusCode}${statusCode !== null && statusCode >= 300 && statusCode < 400 ? " (redirects are not followed)" : ""}`)
      })
    }
    const live = request.environment === "live"
    // Scheme, names refused by name, and IP literals (which never reach `lookup`) are checked here.
    const verdict = staticVerdict(request.url, request.environment, egress.allowlist, "url")
    if (!verdict.ok) return finish(null, `refused: ${verdict.reason}`)
    const url = new URL(request.url)
    const host = hostOf(url)
    const secure = url.protocol === "https:"
    const pool = live ? agents.live : agents.test
    const options: Https.RequestOptions = {
      method: "POST",
      protocol: url.protocol,
      hostname: host,
      port: url.port === "" ? undefined : Number(url.port),
      path: `${url.pathname}${url.search}`,
      headers: { ...request.headers, "Content-Length": String(Buffer.byteLength(request.body)) },
      agent: secure ? pool.https : pool.http,
      lookup: lookupWith(egress),
      servername: Net.isIP(host) === 0 ? host : undefined
    }
    req = (secure ? Https : Http).request(options, (res) => {
      const status = res.statusCode ?? null
      // Drain (the socket goes back to the pool); only the status matters.
      res.on("data", () => {})
      res.on("end", () => finish(status, null))
      res.on("error", () => finish(status, null))
      res.on("aborted", () => finish(status, null))
    })
    req.on("error", (error: NodeJS.ErrnoException) => {
      if (error instanceof Refused) return finish(null, `refused: ${error.message}`)
      finish(null, error.message === "timeout" ? `timeout after ${request.timeoutMillis} ms` : `connection error: ${error.code ?? error.message}`)
    })
    timer = setTimeout(() => {
      req?.destroy(new Error("timeout"))
      finish(null, `timeout after ${request.timeoutMillis} ms`)
    }, request.timeoutMillis)
    signal?.addEventListener("abort", onAbort, { once: true })
    req.end(request.body)
  })
