/**
 * `POST /v1/verify`: the same checks as `anchord verify`, made by this node over its configured
 * networks' RPC endpoints, for clients who trust the node. The answer says what was checked where.
 *
 * Anonymous requests (no API key: the public verify page, SPEC 9) must carry a bundle, and only its
 * Fabric anchors are checked: a browser cannot ask a Fabric peer, but it checks EVM anchors itself, and
 * the node's EVM endpoints (perhaps paid, keyed) are not lent to anyone who asks. They are limited to
 * ANON_VERIFY_PER_SECOND per client address (each one costs a gateway query per anchor), on top of the
 * anonymous limit of every public request.
 *
 * What one request may cost is bounded (docs/verifying.md, "What the node's verification costs"): a
 * bundle holds at most MAX_BUNDLE_ANCHORS anchors (what the node ever writes), at most
 * MAX_CHAIN_ANCHORS_PER_REQUEST anchors are checked on chain per request (a lookup by hash: the newest
 * records first), at most VERIFY_ANCHORS_PER_SECOND per account (or client address) per second, and the
 * chain calls of one request within VERIFY_CHAIN_BUDGET_MS: an anchor not checked in it is a "could not
 * check", never a timeout of the request taken for a database outage.
 */
import { Clock, Config, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CurrentCaller } from "../api/auth.ts"
import { HttpServerRequest } from "effect/http"
import { AppConfig } from "../config.ts"
import { clientAddressOf } from "../auth/Admission.ts"
import { RateLimits } from "../auth/RateLimits.ts"
import { AnonymousVerifyLimited, InvalidVerifyRequest, KeyRequired, VerifyChainLimited } from "./errors.ts"
import { EvmNetworks } from "../evm/config.ts"
import { FabricNetworks } from "../fabric/config.ts"
import { Api } from "../api/Api.ts"
import { VERIFY_DEADLINE_MS } from "../api/verify.ts"
import { atEdge } from "../db/errors.ts"
import { recordHash } from "../canonical/jcs.ts"
import { RecordStore } from "../records/RecordStore.ts"
import { VERSION } from "../version.ts"
import { rpcClient, type RpcClient } from "./evm.ts"
import type { FabricOptions } from "./fabric.ts"
import { InputError, readInput, type VerifyInput } from "./input.ts"
import type { Check, Outcome, Report } from "./report.ts"
import { verifyInput } from "./verify.ts"

/** Anonymous verifications per client address per second. */
export const ANON_VERIFY_PER_SECOND = 2

/**
 * Anchors in one proof bundle: a record has one anchor per network it is anchored on (the anchors
 * table's key is (record, network)) and is anchored on one EVM network, one Fabric network, or both
 * (`hybrid`): the node never writes a bundle with more than 2.
 */
export const MAX_BUNDLE_ANCHORS = 2

/** Anchors checked on chain for one request (a lookup by hash: two hybrid records, or four on one chain). */
export const MAX_CHAIN_ANCHORS_PER_REQUEST = 4

/** Anchors checked on chain per second for one account and environment (with a key) or one client address (without). */
export const VERIFY_ANCHORS_PER_SECOND = 8

/** The default of VERIFY_CHAIN_BUDGET_MS; it is held under the endpoint's deadline less a margin for the database's part. */
const CHAIN_BUDGET_DEFAULT_MS = 10_000
const CHAIN_BUDGET_MAX_MS = VERIFY_DEADLINE_MS - 5_000

/**
 * The bundles of a lookup by hash (newest first) whose anchors fit MAX_CHAIN_ANCHORS_PER_REQUEST, in order:
 * the first always (a record has at most MAX_BUNDLE_ANCHORS), then as many as fit; the others are named, not checked.
 */
export const withinRequestBound = <B extends { readonly anchors: ReadonlyArray<unknown> }>(bundles: ReadonlyArray<B>): ReadonlyArray<B> => {
  let anchors = 0
  const out: Array<B> = []
  for (const b of bundles) {
    anchors += b.anchors.length
    if (out.length > 0 && anchors > MAX_CHAIN_ANCHORS_PER_REQUEST) break
    out.push(b)
  }
  return out
}

export const VerifyHttpLayer = HttpApiBuilder.group(Api, "verify", (handlers) =>
  Effect.gen(function*() {
    const store = yield* RecordStore
    const { networks } = yield* EvmNetworks
    // One client per configured network; a bundle naming another network or chain is checked
    // against nothing (an "error" check says so): the node only asks the chains it is configured for.
    const clients = new Map<string, RpcClient>(
      networks.map((n) => [n.networkId, rpcClient(n.rpcUrl, n.rpcTimeoutMs, `the RPC endpoint of network ${n.networkId}`)])
    )
    const rpcFor = (a: { networkId: string }) => clients.get(a.networkId)
    // Fabric anchors: through the gateway peer and with the identity of the node's own network config.
    const fabricNets = new Map((yield* FabricNetworks).networks.map((n) => [n.networkId, n]))
    const fabricFor = (a: { networkId: string }): FabricOptions | undefined => {
      const n = fabricNets.get(a.networkId)
      return n && {
        endpoint: n.peerEndpoint,
        mspId: n.mspId,
        certPath: n.certPath,
        keyPath: n.keyPath,
        tlsCertPath: n.tlsRootCertPath,
        hostAlias: n.hostAlias,
        timeoutMs: n.evaluateTimeoutMs
      }
    }

    const limits = yield* RateLimits
    const config = yield* AppConfig
    const budgetMillis = Math.min(
      CHAIN_BUDGET_MAX_MS,
      Math.max(100, yield* Config.Int("VERIFY_CHAIN_BUDGET_MS").pipe(Config.withDefault(CHAIN_BUDGET_DEFAULT_MS)))
    )

    /** One hit per anchor to be checked on chain; refused (429) as soon as one does not fit this second. */
    const chargeChainChecks = Effect.fnUntraced(function*(who: string, anchors: number) {
      for (let i = 0; i < anchors; i++) {
        const state = yield* limits.hit(`verify-anchors:${who}`, VERIFY_ANCHORS_PER_SECOND)
        if (!state.allowed) return yield* new VerifyChainLimited({ perSecond: VERIFY_ANCHORS_PER_SECOND, retryAfterSeconds: state.retryAfter })
      }
    })

    return handlers.handle("verify", ({ payload: body }) =>
      Effect.gen(function*() {
        const { principal } = yield* CurrentCaller
        if (body.data === undefined && body.hash === undefined) return yield* new InvalidVerifyRequest({ reason: "data or hash is required" })
        const request = yield* HttpServerRequest.HttpServerRequest
        const caller = principal === undefined
          ? `address:${clientAddressOf(request, config.trustProxy)}`
          : `account:${principal.accountId}:${principal.environment}`
        if (principal === undefined) {
          if (body.bundle === undefined) return yield* new KeyRequired()
          const state = yield* limits.hit(`verify:${clientAddressOf(request, config.trustProxy)}`, ANON_VERIFY_PER_SECOND)
          if (!state.allowed) return yield* new AnonymousVerifyLimited({ retryAfterSeconds: state.retryAfter })
        }
        const given = body.hash?.toLowerCase()
        const data = body.data !== undefined ? { value: body.data } : undefined

        let inputs: Array<VerifyInput>
        let extra: Array<Check> = []
        if (body.bundle !== undefined) {
          let input: VerifyInput
          try {
            input = readInput(body.bundle)
          } catch (e) {
            return yield* new InvalidVerifyRequest({ reason: `bundle: ${e instanceof InputError ? e.message : "not a proof bundle"}` })
          }
          if (input.bundle.anchors.length > MAX_BUNDLE_ANCHORS) {
            return yield* new InvalidVerifyRequest({
              reason: `bundle: ${input.bundle.anchors.length} anchors; a proof bundle holds at most ${MAX_BUNDLE_ANCHORS} ` +
                "(one per network its record is anchored on: an EVM network, a Fabric network, or both)"
            })
          }
          if (given !== undefined && data === undefined && given !== input.bundle.hash.toLowerCase()) {
            extra = [{ id: "hash", status: "fail", message: `the bundle is for hash ${input.bundle.hash}, not the given ${given}` }]
          }
          // The client's data (or hash) is what is being verified, not whatever the bundle embeds.
          let bundle = given !== undefined && data === undefined ? { ...input.bundle, hash: given } : input.bundle
          if (principal === undefined) {
            bundle = { ...bundle, anchors: bundle.anchors.filter((a) => a.chainType === "fabric") }
            if (bundle.anchors.length === 0) {
              return yield* new InvalidVerifyRequest({
                reason:
                  "bundle: without an API key only Fabric anchors are checked here, and this bundle has none (check EVM anchors against the chain: the public verify page does, from your browser)"
              })
            }
          }
          inputs = [{ ...input, bundle, hasData: false }]
        } else {
          const hash = given ?? recordHash(data!.value)
          const bundles = yield* store.proofsOf(yield* store.byHash(principal!, hash))
          const checked = withinRequestBound(bundles)
          inputs = checked.map((bundle) => ({ kind: "bundle" as const, bundle, hasData: false }))
          if (inputs.length === 0) {
            extra = [{ id: "records", status: "fail", message: `no anchored record of this account (${principal!.environment}) has hash ${hash}` }]
          } else if (checked.length < bundles.length) {
            extra = [{
              id: "records",
              status: "skip",
              message: `${bundles.length} anchored records have this hash: the newest ${checked.length} are checked ` +
                `(at most ${MAX_CHAIN_ANCHORS_PER_REQUEST} anchors per request); send a record's proof bundle to check another`
            }]
          }
        }

        yield* chargeChainChecks(caller, inputs.reduce((n, i) => n + i.bundle.anchors.length, 0))
        const chainDeadline = { at: (yield* Clock.currentTimeMillis) + budgetMillis, budgetMillis }
        const reports: Array<Report> = []
        for (const input of inputs) reports.push(yield* verifyInput(input, { rpcFor, fabricFor, data, minConfirmations: 1, chainDeadline }))
        const outcomes: Array<Outcome> = reports.map((r) => r.outcome)
        const overall = extra.some((c) => c.status === "fail")
          ? "not-verified"
          : outcomes.includes("verified")
          ? "verified"
          : outcomes.includes("could-not-check")
          ? "could-not-check"
          : "not-verified"
        const hash = reports[0]?.hash ?? given ?? ""
        return {
          success: true as const,
          data: {
            outcome: overall as Outcome,
            verified: overall === "verified",
            hash,
            hashSource: data !== undefined ? "data" as const : "hash" as const,
            bundleSource: body.bundle !== undefined ? "request" as const : "records" as const,
            verifiedBy: `anchord/${VERSION} (this node, over its configured RPC endpoints)`,
            checkedAt: new Date(yield* Clock.currentTimeMillis).toISOString(),
            results: reports.length === 0
              ? [{ recordId: null, outcome: "not-verified" as const, anchors: [], checks: extra }]
              : reports.map((r) => ({ recordId: r.recordId, outcome: r.outcome, anchors: r.anchors, checks: [...extra, ...r.checks] }))
          }
        }
      }).pipe(atEdge))
  }))
