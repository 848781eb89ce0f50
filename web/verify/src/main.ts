/**
 * The public verify page (`/verify`, SPEC 9): a proof bundle, IN_PLACE document or record lookup,
 * checked in the visitor's browser by the project's own verification core (src/verify/verify.ts,
 * the code of `anchord verify`), straight against each chain's JSON-RPC; Fabric anchors are left
 * to the node (./fabric.ts). A COSE Receipt (RFC 9942) is checked by the same core
 * (src/verify/receipt.ts, `anchord verify --receipt`): ES256 signature by WebCrypto, the RFC 9162
 * inclusion proof, the root's LogRootAnchored log and verifyLogInclusion on chain. Built into
 * ../verify.js by web/build.ts.
 *
 * Everything shown comes from untrusted input (the bundle, the chain): it is only ever set as
 * text, never as HTML.
 */
import * as Effect from "effect/Effect"
import { decodeBundleFragment } from "../../../src/certificates/bundleUrl.ts"
import { parseStrictJson } from "../../../src/canonical/strictJson.ts"
import { rpcClient } from "../../../src/verify/evm.ts"
import { readInput, type BundleAnchor, type VerifyInput } from "../../../src/verify/input.ts"
import type { Check, CheckStatus, Outcome, Report } from "../../../src/verify/report.ts"
import { verifyInput } from "../../../src/verify/verify.ts"
import { verifyReceipt } from "../../../src/verify/receipt.ts"
import { parseReceipt, type ReceiptAnchor } from "../../../src/receipts/receipt.ts"
import { networkFor, parseConfig, type VerifyPageConfig } from "./config.ts"
import { recordHash } from "../../../src/canonical/jcs.ts"
import { byNode, FABRIC_BY_NODE_CHECK, setFabricChecker } from "./fabric.ts"

const CONFIG_URL = "/verify/config.json"
/** The receipt key of the node serving this page (src/receipts/http.ts), used when none is pasted. */
const RECEIPT_KEY_URL = "/.well-known/anchord-receipt-key.pem"
/** Per JSON-RPC request, as `anchord verify --timeout-ms` (10 s there): public endpoints can be slow. */
const RPC_TIMEOUT_MS = 15_000
const MAX_JSON_DEPTH = 128

const $ = <E extends HTMLElement>(id: string): E => {
  const e = document.getElementById(id)
  if (e === null) throw new Error(`verify page: #${id} is missing`)
  return e as E
}

/** A DOM element; string children become text nodes (never HTML). */
const h = (tag: string, attrs: Record<string, string | undefined> = {}, ...children: Array<Node | string | undefined>): HTMLElement => {
  const e = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) e.setAttribute(k, v)
  for (const c of children) if (c !== undefined) e.append(c)
  return e
}

// --- configuration ------------------------------------------------------------------------------

interface LoadedConfig {
  readonly config: VerifyPageConfig
  /** Why there is no (or a partial) network list, for the visitor. */
  readonly notice?: string | undefined
}

const loadConfig = async (): Promise<LoadedConfig> => {
  try {
    const response = await fetch(CONFIG_URL, { cache: "no-store", headers: { accept: "application/json" } })
    if (!response.ok) return { config: { networks: [] }, notice: `The node's network list could not be loaded (HTTP ${response.status}).` }
    const { config, problems } = parseConfig(await response.json())
    for (const p of problems) console.warn(`verify page: ${CONFIG_URL}: ${p}`)
    return { config, notice: problems.length > 0 ? `Some of the node's networks were left out (${problems.join("; ")}).` : undefined }
  } catch (e) {
    return { config: { networks: [] }, notice: `The node's network list could not be loaded (${e instanceof Error ? e.message : String(e)}).` }
  }
}

const showNetworks = ({ config, notice }: LoadedConfig) => {
  const list = $("networks")
  list.replaceChildren()
  for (const n of config.networks) {
    list.append(h("li", {}, h("strong", {}, n.networkId), ` — chain ${n.chainId}, `, h("code", {}, n.rpcUrl)))
  }
  const note = $("networks-note")
  note.textContent = [
    notice,
    config.networks.length === 0 ? "No network is configured here: enter a JSON-RPC URL of the anchor's chain." : undefined
  ].filter((x) => x !== undefined).join(" ")
  note.hidden = note.textContent === ""
}

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

// --- reading the inputs -----------------------------------------------------------------------------

class Unreadable extends Error {}

const parseJson = (text: string, what: string): unknown => {
  try {
    return parseStrictJson(text, { maxDepth: MAX_JSON_DEPTH })
  } catch (e) {
    throw new Unreadable(`${what} is not valid JSON: ${e instanceof Error ? e.message : String(e)}`)
  }
}

const readProof = (text: string): VerifyInput => {
  try {
    return readInput(parseJson(text, "the proof"))
  } catch (e) {
    throw e instanceof Unreadable ? e : new Unreadable(e instanceof Error ? e.message : String(e))
  }
}

const manualRpcUrl = (): string | undefined => {
  const raw = $<HTMLInputElement>("rpc-url").value.trim()
  if (raw === "") return undefined
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new FieldError("rpc-url", `${raw} is not a URL`)
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new FieldError("rpc-url", "the JSON-RPC URL must start with https:// or http://")
  return url.toString()
}

class FieldError extends Error {
  readonly field: string
  constructor(field: string, message: string) {
    super(message)
    this.field = field
  }
}

// --- verification -----------------------------------------------------------------------------------

interface Run {
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

let configPromise: Promise<LoadedConfig>

const verify = async (input: VerifyInput, data: { value: unknown } | undefined, manual: string | undefined): Promise<Run> => {
  const { config } = await configPromise
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

/** PEM (SPKI) → DER; a pasted key may carry other text around the block. */
const pemToSpki = (pem: string): Uint8Array => {
  const m = /-----BEGIN PUBLIC KEY-----([\s\S]*?)-----END PUBLIC KEY-----/.exec(pem)
  if (m === null) throw new FieldError("receipt-key", "the receipt key must be a PEM public key (-----BEGIN PUBLIC KEY-----)")
  try {
    return Uint8Array.from(atob(m[1]!.replace(/\s+/g, "")), (c) => c.charCodeAt(0))
  } catch {
    throw new FieldError("receipt-key", "the receipt key's PEM block is not base64")
  }
}

/** The pasted receipt key, or the key of the node serving this page. */
const receiptKey = async (): Promise<Uint8Array> => {
  const pasted = $<HTMLTextAreaElement>("receipt-key").value.trim()
  if (pasted !== "") return pemToSpki(pasted)
  let response: Response
  try {
    response = await fetch(RECEIPT_KEY_URL, { cache: "no-store", credentials: "omit" })
  } catch (e) {
    throw new FieldError("receipt-key",
      `no receipt key given, and ${RECEIPT_KEY_URL} could not be loaded (${e instanceof Error ? e.message : String(e)}): paste the key`)
  }
  if (!response.ok) {
    throw new FieldError("receipt-key", `no receipt key given, and this server has none at ${RECEIPT_KEY_URL} (HTTP ${response.status}): paste the key`)
  }
  return pemToSpki(await response.text())
}

const asBundleAnchor = (a: ReceiptAnchor, leafIndex: number, leafCount: number): BundleAnchor => ({ ...a, merkleProof: [], leafIndex, leafCount })

const verifyReceiptFile = async (
  receipt: Uint8Array,
  hash: { readonly hex: string; readonly source: "data" | "bundle" },
  keySpki: Uint8Array,
  manual: string | undefined
): Promise<Run> => {
  const { config } = await configPromise
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

// --- rendering -------------------------------------------------------------------------------------

const STATUS_LABEL: Record<CheckStatus, string> = { pass: "PASS", fail: "FAIL", error: "COULD NOT CHECK", skip: "SKIPPED" }

const VERDICT: Record<Outcome, { title: string; text: string }> = {
  "verified": {
    title: "Verified",
    text: "Every check passed: the record's hash is in a Merkle tree whose root the chain holds, as the proof states."
  },
  "not-verified": {
    title: "Not verified",
    text: "At least one check failed (marked FAIL below, with the reason). The proof does not hold as given."
  },
  "could-not-check": {
    title: "Could not check",
    text:
      "Nothing failed, but not every check could be made (marked COULD NOT CHECK below). This is no verdict either way: try again, or another JSON-RPC endpoint."
  }
}

/** Fabric checks come from the node (a browser cannot ask a Fabric peer). */
const isByNode = (c: Check) => c.id.startsWith("fabric.")

const checkItem = (c: Check): HTMLElement => {
  const byNode = isByNode(c)
  return h(
    "li",
    { "class": `check s-${c.status}${byNode ? " by-node" : ""}`, "data-check": c.id, "data-status": c.status, "data-by": byNode ? "node" : "browser" },
    h("span", { class: "status" }, STATUS_LABEL[c.status]),
    byNode ? " " : undefined,
    byNode ? h("span", { class: "by" }, "BY THE NODE") : undefined,
    " ",
    h("code", { class: "id" }, c.id),
    " ",
    h("span", { class: "msg" }, c.message)
  )
}

const fact = (dl: HTMLElement, term: string, value: string | number | null | undefined, link?: string) => {
  if (value === undefined || value === null || value === "") return
  const text = h("code", {}, String(value))
  dl.append(h("dt", {}, term), h("dd", {}, link === undefined ? text : h("a", { href: link, rel: "noopener noreferrer", target: "_blank" }, text)))
}

const explorerTx = (config: VerifyPageConfig, anchor: BundleAnchor): string | undefined => {
  if (anchor.chainType !== "evm") return undefined
  const explorer = networkFor(config, anchor)?.explorerUrl
  return explorer === undefined || !/^0x[0-9a-fA-F]{64}$/.test(anchor.txHash) ? undefined : `${explorer.replace(/\/+$/, "")}/tx/${anchor.txHash}`
}

const renderRun = ({ report, inputLabel, anchors, receipt, rpcUsed, config }: Run) => {
  const result = $("result")
  const byNodeOnly = report.outcome === "could-not-check" && report.checks.filter((c) => c.status === "error").every(isByNode)
  const anyByNode = report.checks.some(isByNode)
  const verdict = VERDICT[report.outcome]
  const heading = h("h2", { "id": "verdict", "tabindex": "-1", "class": `verdict o-${report.outcome}`, "data-outcome": report.outcome }, verdict.title)
  const explanation = byNodeOnly
    ? "Every check this browser can make passed. Fabric anchors are checked by the node, which could not check them: see below."
    : anyByNode && report.outcome === "verified"
    ? `${verdict.text} The Fabric anchors' chain checks were made by the node that serves this page (marked BY THE NODE).`
    : verdict.text

  const summary = h("dl", { class: "facts" })
  fact(summary, "Record", report.recordId)
  fact(summary, "Hash", report.hash)
  summary.append(
    h("dt", {}, "Hash source"),
    h("dd", {}, report.hashSource === "data"
      ? "recomputed here from the data (RFC 8785 JCS + SHA-256)"
      : receipt !== undefined || report.input === "cose-receipt"
      ? "as given (no data given)"
      : "as stated in the proof (no data given)")
  )
  summary.append(h("dt", {}, "Input"), h("dd", {}, inputLabel))

  const recordChecks = report.checks.filter((c) => c.networkId === undefined)
  const sections: Array<HTMLElement> = []
  anchors.forEach((anchor, i) => {
    const outcome = report.anchors[i]?.outcome ?? "could-not-check"
    const checks = report.checks.filter((c) => c.networkId === anchor.networkId)
    const byNode = checks.some(isByNode)
    const where = anchor.chainType === "evm"
      ? `EVM chain ${anchor.chainId ?? "?"} · checked in this browser${rpcUsed.has(anchor.networkId) ? ` through ${rpcUsed.get(anchor.networkId)}` : ""}`
      : `Hyperledger Fabric channel ${anchor.channel ?? "?"} · checked by the node`
    const facts = h("dl", { class: "facts" })
    if (anchor.chainType === "evm") fact(facts, "Contract", anchor.contractAddress)
    else fact(facts, "Chaincode", anchor.chaincode)
    fact(facts, "Transaction", anchor.txHash, explorerTx(config, anchor))
    fact(facts, "Block", anchor.blockNumber)
    fact(facts, "Batch", anchor.batchId)
    fact(facts, "Merkle root", anchor.merkleRoot)
    if (receipt !== undefined) {
      fact(facts, "RFC 9162 root", receipt.logRoot)
      fact(facts, "Leaf", receipt.leaf)
    }
    fact(facts, "Anchored at", anchor.anchoredAt)
    sections.push(h(
      "section",
      { "class": "anchor", "data-network": anchor.networkId, "data-chain-type": anchor.chainType, "data-outcome": outcome, "aria-labelledby": `anchor-${i}` },
      h(
        "h3",
        { id: `anchor-${i}` },
        `Anchor ${anchor.networkId} `,
        h("span", { class: `badge o-${outcome}` }, VERDICT[outcome].title),
        byNode ? " " : undefined,
        byNode ? h("span", { class: "badge o-node" }, "checked by this node") : undefined
      ),
      h("p", { class: "where" }, where),
      facts,
      h("ul", { class: "checks" }, ...checks.map(checkItem))
    ))
  })

  result.replaceChildren(
    heading,
    h("p", { class: "explain" }, explanation),
    summary,
    h("ul", { class: "checks" }, ...recordChecks.map(checkItem)),
    ...sections
  )
  result.hidden = false
  heading.focus()
}

const renderUnreadable = (message: string) => {
  const heading = h("h2", { "id": "verdict", "tabindex": "-1", "class": "verdict o-could-not-check", "data-outcome": "could-not-check" }, "Could not check")
  $("result").replaceChildren(heading, h("p", { "class": "explain", "data-error": "input" }, `The input cannot be read: ${message}`))
  $("result").hidden = false
  heading.focus()
}

// --- wiring ----------------------------------------------------------------------------------------

let running = false

const setStatus = (text: string) => {
  $("status").textContent = text
}

const clearFieldErrors = () => {
  for (const id of ["proof-text", "rpc-url", "data-file", "receipt-file", "receipt-hash", "receipt-key"]) $(id).removeAttribute("aria-invalid")
  $("form-error").textContent = ""
  $("form-error").hidden = true
}

const fieldError = (field: string, message: string) => {
  const control = $(field)
  control.setAttribute("aria-invalid", "true")
  $("form-error").textContent = message
  $("form-error").hidden = false
  control.focus()
}

/** The record hash a receipt is checked for: recomputed from the data file, or as typed. */
const receiptHash = async (): Promise<{ readonly hex: string; readonly source: "data" | "bundle" }> => {
  const dataFile = $<HTMLInputElement>("data-file").files?.[0]
  if (dataFile !== undefined) return { hex: recordHash(parseJson(await dataFile.text(), `the data file ${dataFile.name}`)), source: "data" }
  const typed = $<HTMLInputElement>("receipt-hash").value.trim().replace(/^0x/i, "").toLowerCase()
  if (typed === "") throw new FieldError("receipt-hash", "A receipt is checked for a record: choose its data file or enter its hash.")
  if (!/^[0-9a-f]{64}$/.test(typed)) throw new FieldError("receipt-hash", "The record hash is 64 hex characters (SHA-256).")
  return { hex: typed, source: "bundle" }
}

const runReceipt = async (file: File, manual: string | undefined) => {
  let hash: Awaited<ReturnType<typeof receiptHash>>
  let key: Uint8Array
  try {
    hash = await receiptHash()
    key = await receiptKey()
  } catch (e) {
    if (e instanceof FieldError) return fieldError(e.field, e.message)
    throw e
  }
  renderRun(await verifyReceiptFile(new Uint8Array(await file.arrayBuffer()), hash, key, manual))
}

const run = async () => {
  if (running) return
  clearFieldErrors()
  const text = $<HTMLTextAreaElement>("proof-text").value
  const receiptFile = $<HTMLInputElement>("receipt-file").files?.[0]
  if (text.trim() === "" && receiptFile === undefined) return fieldError("proof-text", "Paste a proof, drop a file or choose one (or a COSE receipt) first.")
  let manual: string | undefined
  try {
    manual = manualRpcUrl()
  } catch (e) {
    return fieldError((e as FieldError).field, e instanceof Error ? e.message : String(e))
  }
  running = true
  $("result").setAttribute("aria-busy", "true")
  setStatus("Checking…")
  try {
    if (receiptFile !== undefined) {
      await runReceipt(receiptFile, manual)
      setStatus("")
      return
    }
    const input = readProof(text)
    const dataFile = $<HTMLInputElement>("data-file").files?.[0]
    const data = dataFile === undefined ? undefined : { value: parseJson(await dataFile.text(), `the data file ${dataFile.name}`) }
    renderRun(await verify(input, data, manual))
    setStatus("")
  } catch (e) {
    if (!(e instanceof Unreadable)) console.error(e)
    renderUnreadable(e instanceof Error ? e.message : String(e))
    setStatus("")
  } finally {
    running = false
    $("result").setAttribute("aria-busy", "false")
  }
}

const putProof = (text: string) => {
  $<HTMLTextAreaElement>("proof-text").value = text
}

const fromFragment = async () => {
  let text: string | undefined
  try {
    text = await decodeBundleFragment(location.hash)
  } catch (e) {
    renderUnreadable(e instanceof Error ? e.message : String(e))
    return
  }
  if (text === undefined) return
  putProof(text)
  await run()
}

const start = () => {
  configPromise = loadConfig()
  void configPromise.then(showNetworks)

  $("verify-form").addEventListener("submit", (e) => {
    e.preventDefault()
    void run()
  })
  $<HTMLInputElement>("proof-file").addEventListener("change", async (e) => {
    const file = (e.target as HTMLInputElement).files?.[0]
    if (file !== undefined) putProof(await file.text())
  })
  // A file dropped anywhere on the page is the proof (keyboard users have the file input).
  const zone = $("drop-zone")
  document.addEventListener("dragover", (e) => {
    e.preventDefault()
    zone.classList.add("dragging")
  })
  document.addEventListener("dragleave", () => zone.classList.remove("dragging"))
  document.addEventListener("drop", async (e) => {
    e.preventDefault()
    zone.classList.remove("dragging")
    const file = e.dataTransfer?.files[0]
    if (file !== undefined) putProof(await file.text())
  })
  window.addEventListener("hashchange", () => void fromFragment())
  void fromFragment()
}

start()
