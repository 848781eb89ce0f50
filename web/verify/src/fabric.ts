/**
 * Browser stand-in for src/verify/fabric.ts in the verify page's bundle (web/build.ts substitutes
 * it for `./fabric.ts` in src/verify/verify.ts). A browser cannot ask a Fabric peer (gRPC, and an
 * identity of a channel member), so Fabric anchors are checked by the node (`POST /v1/verify`).
 *
 * The hook: the page installs a checker with `setFabricChecker` before each verification. Until
 * the node offers anonymous verification, the checker is `byNodeNotYet`: one `error` check
 * ("could not check" here), which the page labels "checked by the node". When the endpoint
 * exists, a checker posts `{ hash, bundle: <the bundle with this anchor only> }` and returns the
 * node's `fabric.*` checks (docs/console.md).
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

let checker: FabricChecker = byNodeNotYet

export const setFabricChecker = (f: FabricChecker): void => {
  checker = f
}

export const checkFabricAnchor = (anchor: BundleAnchor, _options: FabricOptions) =>
  Effect.promise(() => checker(anchor)).pipe(Effect.map((checks): Array<Check> => [...checks]))
