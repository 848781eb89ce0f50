/**
 * Browser stand-in for src/verify/fabric.ts in the verify page's bundle (web/build.ts substitutes
 * it for `./fabric.ts` in src/verify/verify.ts). A browser cannot ask a Fabric peer (gRPC, and an
 * identity of a channel member), so Fabric anchors are checked by the node (`POST /v1/verify`).
 *
 * The hook: the page installs a checker with `setFabricChecker` before each verification: `byNode`,
 * which posts `{ hash, bundle: <the bundle with this anchor only> }` to the node's `POST /v1/verify`
 * (anonymous requests check Fabric anchors) and returns the node's `fabric.*` checks, labelled
 * "checked by the node" by the page (docs/console.md). `byNodeNotYet` is the stand-in for pages served
 * by something else than a node (one `error` check: could not check).
 */
import * as Effect from "effect/Effect"
import type { BundleAnchor } from "../../../src/verify/input.ts"
import type { Check } from "../../../src/verify/report.ts"

/** The real module's options (a gateway and an identity): meaningless in a browser, ignored. */
export type FabricOptions = Record<string, unknown>

/** Id of the checks a Fabric anchor gets in the browser: the page shows them as "checked by the node". */
export const FABRIC_BY_NODE_CHECK = "fabric.node"

export type FabricChecker = (anchor: BundleAnchor) => Promise<ReadonlyArray<Check>>

export const byNodeNotYet: FabricChecker = async (anchor) => [{
  id: FABRIC_BY_NODE_CHECK,
  networkId: anchor.networkId,
  status: "error",
  message: "Fabric anchors cannot be checked from a browser; they are checked by the node (POST /v1/verify), " +
    "which does not offer this to visitors yet. Check it with anchord verify and a Fabric identity (--fabric-profile)."
}]

/** Where the node answers (same origin as the page: the node serves both). */
export const NODE_VERIFY_PATH = "/v1/verify"

/**
 * Asks the node that serves this page to check one Fabric anchor: `POST /v1/verify` without an API key,
 * `{ hash, bundle: <the bundle with this anchor only> }`. The node checks Fabric anchors of anonymous
 * requests (limited per address) and answers its `fabric.*` checks, returned here as they are: the page
 * shows them as checked by the node. A node that cannot answer gives one `error` check (could not check).
 */
export const byNode = (hash: string, bundle: Record<string, unknown>, path = NODE_VERIFY_PATH): FabricChecker => async (anchor) => {
  const failed = (why: string): ReadonlyArray<Check> => [{
    id: FABRIC_BY_NODE_CHECK,
    networkId: anchor.networkId,
    status: "error",
    message: `This node could not check the Fabric anchor (${why}). Check it with anchord verify and a Fabric identity (--fabric-profile).`
  }]
  let response: Response
  try {
    response = await fetch(path, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ hash, bundle: { ...bundle, anchors: [anchor] } }),
      credentials: "omit",
      cache: "no-store"
    })
  } catch (e) {
    return failed(`no answer: ${e instanceof Error ? e.message : String(e)}`)
  }
  const json = await response.json().catch(() => undefined) as
    | { success?: boolean; error?: string; data?: { results?: Array<{ checks?: Array<Check> }> } }
    | undefined
  if (!response.ok || json?.success !== true) {
    return failed(response.status === 429 ? "it is busy: try again in a few seconds" : `HTTP ${response.status}${json?.error ? `: ${json.error}` : ""}`)
  }
  const checks = (json.data?.results?.[0]?.checks ?? []).filter((c) => c.id.startsWith("fabric."))
  return checks.length > 0 ? checks.map((c) => ({ ...c, networkId: anchor.networkId })) : failed("its answer had no Fabric check")
}

let checker: FabricChecker = byNodeNotYet

export const setFabricChecker = (f: FabricChecker): void => {
  checker = f
}

/** @public web/build.ts bundles this module in place of src/verify/fabric.ts, whose export this replaces. */
export const checkFabricAnchor = (anchor: BundleAnchor, _options: FabricOptions) =>
  Effect.promise(() => checker(anchor)).pipe(Effect.map((checks): Array<Check> => [...checks]))
