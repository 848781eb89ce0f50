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
import type { StableHeaders } from "./payload.ts"
import { standardSignature } from "./standard.ts"
import { addressesVerdict, type Allowlist, connectHostname, type Resolve, staticVerdict } from "./urlPolicy.ts"

export interface AttemptOutcome {
  readonly ok: boolean
  readonly statusCode: number | null
  readonly latencyMs: number
  readonly error: string | null
  /** The answer's body (its first bytes), when the request asked for it (`readAnswer`). */
  readonly answer?: string | undefined
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
  /** Keep up to this many bytes of the answer's body (a batch's partial failures); the rest is drained. */
  readonly readAnswer?: number | undefined
}

/** What an attempt's headers are made of: the delivery's stored rendering and the secrets of its claim. */
export interface SignedDelivery {
  readonly headers: StableHeaders
  readonly attempts: number
  readonly body: string
  readonly signature: string
  readonly signatureNext: string | null
  readonly secret: string
  readonly secretPrevious: string | null
}

/** An attempt's headers at `seconds` (its start, Unix seconds): the seed's stored ones, and Standard Webhooks' signed now. */
export const attemptHeaders = (d: SignedDelivery, seconds: number, userAgent: string): Record<string, string> => {
  const h = d.headers
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    "User-Agent": userAgent,
    "X-Service-Event": h.event,
    "X-Service-Event-Id": h.eventId,
    "X-Service-Timestamp": String(seconds),
    "X-Service-Hash": h.hash,
    "X-Service-Package": h.packageMode,
    "X-Service-Chain": h.chain,
    "X-Service-Network": h.network,
    "X-Service-Retry-Attempt": String(d.attempts),
    "x-webhook-signature": d.signature
  }
  if (d.signatureNext !== null) headers["x-webhook-signature-next"] = d.signatureNext
  // Standard Webhooks (SPEC 5.3): signed over this attempt's timestamp, so made per attempt (the seed's
  // signature above is made once per event), with the secrets of the delivery's environment as of this claim.
  headers["webhook-id"] = h.eventId
  headers["webhook-timestamp"] = String(seconds)
  headers["webhook-signature"] = standardSignature(
    d.secretPrevious === null ? [d.secret] : [d.secretPrevious, d.secret],
    h.eventId,
    seconds,
    d.body
  )
  return headers
}

/** Where a URL's attempts go, checked by the static rules: the same for every attempt to it, so made once. */
type Target =
  | { readonly ok: false; readonly reason: string }
  | {
    readonly ok: true
    readonly protocol: string
    readonly hostname: string
    readonly port: number | undefined
    readonly path: string
    readonly secure: boolean
    readonly servername: string | undefined
    readonly lookup: Net.LookupFunction
  }

/** Targets per egress policy (one per process), by environment and URL; bounded (cleared when full). */
const targets = new WeakMap<Egress, Map<string, Target>>()
const TARGETS_MAX = 4_096

/**
 * The URL parsed and statically checked once per (environment, URL) instead of twice per attempt. Only the
 * static rules are kept: names are still resolved and checked on every new connection (`lookup`).
 */
const targetOf = (raw: string, environment: Environment, egress: Egress): Target => {
  let byUrl = targets.get(egress)
  if (byUrl === undefined) targets.set(egress, byUrl = new Map())
  const key = `${environment} ${raw}`
  const known = byUrl.get(key)
  if (known !== undefined) return known
  const verdict = staticVerdict(raw, environment, egress.allowlist, "url")
  let target: Target
  if (!verdict.ok) target = { ok: false, reason: verdict.reason }
  else {
    const url = new URL(raw)
    const host = connectHostname(url)
    target = {
      ok: true,
      protocol: url.protocol,
      hostname: host,
      port: url.port === "" ? undefined : Number(url.port),
      path: `${url.pathname}${url.search}`,
      secure: url.protocol === "https:",
      servername: Net.isIP(host) === 0 ? host : undefined,
      lookup: lookupOf(egress)
    }
  }
  if (byUrl.size >= TARGETS_MAX) byUrl.clear()
  byUrl.set(key, target)
  return target
}

const lookups = new WeakMap<Egress, Net.LookupFunction>()
const lookupOf = (egress: Egress): Net.LookupFunction => {
  let lookup = lookups.get(egress)
  if (lookup === undefined) lookups.set(egress, lookup = lookupWith(egress))
  return lookup
}

/**
 * Never rejects: every failure is an outcome (status code, latency, error text without secrets).
 * `request.headers` is the attempt's own object (attemptHeaders): Content-Length is added to it, not to a copy.
 */
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
    const answer: Array<Buffer> = []
    let answered = 0
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
        error: error ??
          (ok ? null : `HTTP ${statusCode}${statusCode !== null && statusCode >= 300 && statusCode < 400 ? " (redirects are not followed)" : ""}`),
        ...(request.readAnswer === undefined ? {} : { answer: Buffer.concat(answer).toString("utf8") })
      })
    }
    const target = targetOf(request.url, request.environment, egress)
    if (!target.ok) return finish(null, `refused: ${target.reason}`)
    const pool = request.environment === "live" ? agents.live : agents.test
    const headers = request.headers
    headers["Content-Length"] = String(Buffer.byteLength(request.body))
    const options: Https.RequestOptions = {
      method: "POST",
      protocol: target.protocol,
      hostname: target.hostname,
      port: target.port,
      path: target.path,
      headers,
      agent: target.secure ? pool.https : pool.http,
      lookup: target.lookup,
      servername: target.servername
    }
    const secure = target.secure
    req = (secure ? Https : Http).request(options, (res) => {
      const status = res.statusCode ?? null
      // Drain (the socket goes back to the pool); only the status matters, and a batch's answer up to its bound.
      const keep = request.readAnswer ?? 0
      res.on("data", (chunk: Buffer) => {
        if (answered >= keep) return
        const part = chunk.subarray(0, keep - answered)
        answer.push(part)
        answered += part.length
      })
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
