/**
 * Running the checks: the project's verification core (src/verify) against each chain's JSON-RPC for a
 * bundle, IN_PLACE document or record lookup, or a COSE receipt; its messages reworded for this page.
 */
import * as Effect from "effect/Effect"
import { recordHash } from "../../../src/canonical/jcs.ts"
import { parseReceipt, type ReceiptAnchor } from "../../../src/receipts/receipt.ts"
import { rpcClient } from "../../../src/verify/evm.ts"
import type { BundleAnchor, VerifyInput } from "../../../src/verify/input.ts"
import { verifyReceipt } from "../../../src/verify/receipt.ts"
import type { Check, Report } from "../../../src/verify/report.ts"
import { verifyInput } from "../../../src/verify/verify.ts"
import { networkFor, type VerifyPageConfig } from "./config.ts"
import { byNode, FABRIC_BY_NODE_CHECK, setFabricChecker } from "./fabric.ts"

/** Per JSON-RPC request, as `anchord verify --timeout-ms` (10 s there): public endpoints can be slow. */
const RPC_TIMEOUT_MS = 15_000

// --- Content-Security-Policy refusals -------------------------------------------------------------

/** Origins the page's CSP refused to connect to: fetch only says "Failed to fetch", this says why. */
const refused = new Set<string>()
document.addEventListener("securitypolicyviolation", (e) => {
  try {
    refused.add(new URL(e.blockedURI).origin)
  } catch {
    // "inline", "eval": not a connection
  }
})

// --- verification -----------------------------------------------------------------------------------

/** A run's report and what the page shows with it. */
export interface Run {
  readonly report: Report
  /** What was checked, as the summary names it. */
  readonly inputLabel: string
  readonly anchors: ReadonlyArray<BundleAnchor>
  /** A receipt's RFC 9162 root and leaf, shown with its anchor. */
  readonly receipt?: { readonly logRoot: string; readonly leaf: string } | undefined
  /** The RPC URL each EVM network was asked through. */
  readonly rpcUsed: ReadonlyMap<string, string>
  readonly config: VerifyPageConfig
}

/** A bundle, IN_PLACE document or record lookup, checked against each EVM chain; Fabric anchors by the node. */
export const verify = async (
  config: VerifyPageConfig,
  input: VerifyInput,
  data: { value: unknown } | undefined,
  manual: string | undefined
): Promise<Run> => {
  const rpcUsed = new Map<string, string>()
  // One client per URL: its request ids stay unique across anchors.
  const clients = new Map<string, ReturnType<typeof rpcClient>>()
  // Fabric anchors: asked of the node that serves this page, about this hash (recomputed from the data when given).
  setFabricChecker(byNode(data === undefined ? String(input.bundle.hash) : recordHash(data.value), input.bundle as unknown as Record<string, unknown>))
  refused.clear()
  const report = await Effect.runPromise(verifyInput(input, {
    rpcFor: (anchor: BundleAnchor) => {
      const url = manual ?? networkFor(config, anchor)?.rpcUrl
      if (url === undefined) return undefined
      rpcUsed.set(anchor.networkId, url)
      let client = clients.get(url)
      if (client === undefined) clients.set(url, client = rpcClient(url, RPC_TIMEOUT_MS))
      return client
    },
    data,
    minConfirmations: 1
  }))
  // CSP violation events are queued as tasks: let them arrive before reading `refused`.
  await new Promise((r) => setTimeout(r, 0))
  return {
    report: { ...report, checks: report.checks.map((c) => reword(c, rpcUsed)) },
    inputLabel: input.kind === "bundle" ? "proof bundle" : input.kind === "in-place" ? "IN_PLACE document" : "record lookup",
    anchors: input.bundle.anchors,
    rpcUsed,
    config
  }
}

const asBundleAnchor = (a: ReceiptAnchor, leafIndex: number, leafCount: number): BundleAnchor => ({ ...a, merkleProof: [], leafIndex, leafCount })

/** A COSE receipt checked for a record hash with a receipt key, and its root against its chain. */
export const verifyReceiptFile = async (
  config: VerifyPageConfig,
  receipt: Uint8Array,
  hash: { readonly hex: string; readonly source: "data" | "bundle" },
  keySpki: Uint8Array,
  manual: string | undefined
): Promise<Run> => {
  // The anchor only picks the RPC endpoint here; verifyReceipt parses (and judges) the receipt itself.
  let parsed: ReturnType<typeof parseReceipt> | undefined
  try {
    parsed = parseReceipt(receipt)
  } catch {
    parsed = undefined
  }
  const anchor = parsed?.anchor
  const rpcUsed = new Map<string, string>()
  const url = anchor === undefined || anchor.chainType !== "evm" ? undefined : manual ?? networkFor(config, anchor)?.rpcUrl
  if (anchor !== undefined && url !== undefined) rpcUsed.set(anchor.networkId, url)
  // The node's POST /v1/verify checks bundles, not receipts: a Fabric receipt is for anchord verify.
  setFabricChecker(async (a) => [{
    id: FABRIC_BY_NODE_CHECK,
    networkId: a.networkId,
    status: "error",
    message: "a Fabric receipt's root cannot be checked from a browser: check it with anchord verify --receipt and a Fabric identity (--fabric-profile)"
  }])
  refused.clear()
  const report = await Effect.runPromise(verifyReceipt({
    receipt,
    keySpki,
    hash: hash.hex,
    hashSource: hash.source,
    rpc: url === undefined ? undefined : rpcClient(url, RPC_TIMEOUT_MS),
    minConfirmations: 1,
    offline: false
  }))
  await new Promise((r) => setTimeout(r, 0))
  return {
    report: { ...report, checks: report.checks.map((c) => reword(c, rpcUsed)) },
    inputLabel: "COSE receipt (RFC 9942)",
    anchors: anchor === undefined || parsed === undefined ? [] : [asBundleAnchor(anchor, parsed.inclusion.leafIndex, parsed.inclusion.treeSize)],
    receipt: anchor === undefined || parsed === undefined
      ? undefined
      : { logRoot: anchor.logRoot, leaf: `${parsed.inclusion.leafIndex} of ${parsed.inclusion.treeSize}` },
    rpcUsed,
    config
  }
}

/** The CLI's wording where it names CLI flags, and why a connection was refused. */
const reword = (c: Check, rpcUsed: ReadonlyMap<string, string>): Check => {
  if (c.id === "evm.rpc" && c.status === "error") {
    const base = c.message.startsWith("no --rpc given") ? "no JSON-RPC endpoint for the receipt's chain" : c.message.replace(/: give --rpc <url>$/, "")
    return { ...c, message: base + ": this node lists no endpoint for that chain; enter a JSON-RPC URL above" }
  }
  if (c.id === "hash" && c.status === "skip") {
    return { ...c, message: "no data given: the stated hash is checked as given (choose the original data file to recompute it)" }
  }
  const url = c.networkId === undefined ? undefined : rpcUsed.get(c.networkId)
  if (c.status === "error" && url !== undefined && refused.has(new URL(url).origin)) {
    return {
      ...c,
      message: `${c.message}. This page's Content-Security-Policy does not allow connecting to ${new URL(url).origin}: ` +
        "use an endpoint the node lists, or ask its operator to allow that origin"
    }
  }
  return c
}
