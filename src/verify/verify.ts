/**
 * Independent verification of a proof bundle (docs/verifying.md): recompute the hash from the
 * data when there is data, fold the Merkle proof to the root, then ask each chain directly.
 * Shared by `anchord verify` (no node, no database) and `POST /v1/verify`.
 */
// Sub-module imports (not the "effect" barrel): `anchord verify` must start fast (scripts/bench-verify.ts).
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { recordHash } from "../canonical/jcs.ts"
import { verifyProof } from "../anchoring/merkle.ts"
import { checkEvmAnchor, type RpcClient } from "./evm.ts"
import { checkFabricAnchor, type FabricOptions } from "./fabric.ts"
import { type BundleAnchor, SALTED, type VerifyInput } from "./input.ts"

/** `{"data": …, "salt": "…"}` and nothing else: what a salted hash commits to. */
const isSaltedCommitment = (v: unknown): boolean =>
  typeof v === "object" && v !== null && !Array.isArray(v) && typeof (v as { salt?: unknown }).salt === "string" &&
  Object.keys(v).length === 2 && "data" in v
import { type Check, exitCodeOf, outcomeOf, type Report } from "./report.ts"
import { quoted } from "../excerpt.ts"

export interface VerifyOptions {
  /** The JSON-RPC endpoint for an EVM anchor (undefined: that anchor cannot be checked on chain). */
  readonly rpcFor: (anchor: BundleAnchor) => RpcClient | undefined
  /** Data to hash instead of (or in the absence of) the input's own. */
  readonly data?: { readonly value: unknown } | undefined
  readonly minConfirmations?: number | undefined
  readonly fabric?: FabricOptions | undefined
  /** Per-anchor Fabric gateway and identity (the node: its configured networks); wins over `fabric`. */
  readonly fabricFor?: ((anchor: BundleAnchor) => FabricOptions | undefined) | undefined
  /** Offline: only the hash and the Merkle proof; chain checks are skipped, not errors. */
  readonly offline?: boolean | undefined
  /**
   * The node's bound on a request's chain calls (POST /v1/verify): past `at` (Clock millis) an anchor's
   * chain check is not started, or not waited for, and is an `error` check saying so (could not check).
   */
  readonly chainDeadline?: { readonly at: number; readonly budgetMillis: number } | undefined
}

/** An anchor's chain checks, within the request's chain budget when there is one. */
const withinBudget = (
  checks: Effect.Effect<ReadonlyArray<Check>>,
  anchor: BundleAnchor,
  deadline: VerifyOptions["chainDeadline"]
): Effect.Effect<ReadonlyArray<Check>> => {
  if (deadline === undefined) return checks
  const ranOut: ReadonlyArray<Check> = [{
    id: `${anchor.chainType}.chain`,
    networkId: anchor.networkId,
    status: "error",
    message: `not checked: this request's ${deadline.budgetMillis} ms for chain calls ran out (a slow endpoint); retry, or check it with anchord verify`
  }]
  return Effect.flatMap(Clock.currentTimeMillis, (now) =>
    now >= deadline.at
      ? Effect.succeed(ranOut)
      : Effect.timeoutOrElse(checks, { duration: Duration.millis(deadline.at - now), orElse: () => Effect.succeed(ranOut) }))
}

const HASH = /^[0-9a-f]{64}$/

export const verifyInput = Effect.fn("verify.input")(function*(input: VerifyInput, options: VerifyOptions) {
  const bundle = input.bundle
  const checks: Array<Check> = []
  const stated = String(bundle.hash)
  checks.push({
    id: "format",
    status: "pass",
    message: `proof bundle version ${bundle.version} with ${bundle.anchors.length} anchor(s), from ${
      input.kind === "bundle" ? "a proof bundle" : input.kind === "in-place" ? "an IN_PLACE document" : "a record lookup"
    }`
  })

  // The record hash: recomputed from the data when there is data.
  let hash = stated.toLowerCase()
  let hashSource: Report["hashSource"] = "bundle"
  const data = options.data ?? (input.hasData ? { value: input.data } : undefined)
  if (!HASH.test(stated)) checks.push({ id: "hash", status: "fail", message: `the stated hash ${quoted(stated)} is not 64 lowercase hex characters` })
  if (data !== undefined) {
    let computed: string | undefined
    try {
      computed = recordHash(data.value)
    } catch (e) {
      checks.push({ id: "hash", status: "fail", message: `the data cannot be canonicalized (RFC 8785): ${e instanceof Error ? e.message : String(e)}` })
    }
    if (computed !== undefined) {
      hash = computed
      hashSource = "data"
      // A salted record's hash commits to {"data", "salt"}: the data alone never matches it, and the check says so.
      const salted = bundle.hashScheme === SALTED
      const what = salted
        ? `sha256(JCS(data)) = ${computed} (the bundle's hash is salted, ${SALTED}: the data here is {"data", "salt"})`
        : `sha256(JCS(data)) = ${computed}`
      if (computed === stated) checks.push({ id: "hash", status: "pass", message: `${what}, the stated hash` })
      else if (salted && !isSaltedCommitment(data.value)) {
        checks.push({
          id: "hash",
          status: "fail",
          message: `sha256(JCS(data)) = ${computed}, but the bundle states ${stated}, a salted hash (${SALTED}): ` +
            `hash {"data": <the data>, "salt": "<its salt>"} instead (the salt comes with the record's lookup with its X-Encryption-Key; --salt)`
        })
      } else checks.push({ id: "hash", status: "fail", message: `${what}, but the bundle states ${stated}: the data is not what was anchored` })
    }
  } else if (HASH.test(stated)) {
    checks.push({ id: "hash", status: "skip", message: "no data to hash (give --data <file>): the stated hash is checked as given" })
  }
  if (bundle.anchors.length === 0) checks.push({ id: "anchors", status: "fail", message: "the bundle lists no anchor" })

  const perAnchor: Array<{ chainType: string; networkId: string; checks: ReadonlyArray<Check> }> = []
  for (const anchor of bundle.anchors) {
    const own: Array<Check> = []
    const net = anchor.networkId
    const included = verifyProof(hash, anchor.merkleProof, anchor.merkleRoot)
    own.push(included
      ? { id: "merkle-proof", networkId: net, status: "pass",
        message: `the proof (${anchor.merkleProof.length} element(s)) folds the leaf of ${hash} to root ${anchor.merkleRoot}` }
      : { id: "merkle-proof", networkId: net, status: "fail", message: `the proof does not fold the leaf of ${hash} to root ${anchor.merkleRoot}` })
    if (options.offline) {
      own.push({ id: `${anchor.chainType}.chain`, networkId: net, status: "skip", message: "offline: the chain was not asked" })
    } else if (anchor.chainType === "evm") {
      const rpc = options.rpcFor(anchor)
      if (rpc === undefined) {
        own.push({ id: "evm.rpc", networkId: net, status: "error", message: `no JSON-RPC endpoint for ${net} (chain ${anchor.chainId}): give --rpc <url>` })
      } else {
        own.push(
          ...yield* withinBudget(checkEvmAnchor(hash, anchor, { rpc, minConfirmations: options.minConfirmations ?? 1 }), anchor, options.chainDeadline)
        )
      }
    } else {
      own.push(...yield* withinBudget(checkFabricAnchor(anchor, options.fabricFor?.(anchor) ?? options.fabric ?? {}), anchor, options.chainDeadline))
    }
    checks.push(...own)
    perAnchor.push({ chainType: anchor.chainType, networkId: net, checks: own })
  }

  const recordLevel = checks.filter((c) => c.networkId === undefined)
  const outcome = outcomeOf(checks)
  const report: Report = {
    outcome,
    exitCode: exitCodeOf(outcome),
    recordId: bundle.recordId ?? null,
    hash,
    hashSource,
    input: input.kind,
    anchors: perAnchor.map((a) => ({ chainType: a.chainType, networkId: a.networkId, outcome: outcomeOf([...recordLevel, ...a.checks]) })),
    checks
  }
  return report
})
