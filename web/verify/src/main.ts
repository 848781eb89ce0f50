/**
 * The public verify page (`/verify`, SPEC 9): a proof bundle, IN_PLACE document or record lookup,
 * checked in the visitor's browser by the project's own verification core (src/verify/verify.ts,
 * the code of `anchord verify`), straight against each chain's JSON-RPC; Fabric anchors are left
 * to the node (./fabric.ts). Built into ../verify.js by web/build.ts.
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
import { networkFor, parseConfig, type VerifyPageConfig } from "./config.ts"
import { recordHash } from "../../../src/canonical/jcs.ts"
import { byNode, setFabricChecker } from "./fabric.ts"

const CONFIG_URL = "/verify/config.json"
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
  readonly input: VerifyInput
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
  return { report: { ...report, checks: report.checks.map((c) => reword(c, rpcUsed)) }, input, rpcUsed, config }
}

/** The CLI's wording where it names CLI flags, and why a connection was refused. */
const reword = (c: Check, rpcUsed: ReadonlyMap<string, string>): Check => {
  if (c.id === "evm.rpc" && c.status === "error") {
    return { ...c, message: c.message.replace(/: give --rpc <url>$/, "") + ": this node lists no endpoint for that chain; enter a JSON-RPC URL above" }
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
    text: "Nothing failed, but not every check could be made (marked COULD NOT CHECK below). This is no verdict either way: try again, or another JSON-RPC endpoint."
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

const renderRun = ({ report, input, rpcUsed, config }: Run) => {
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
    h("dd", {}, report.hashSource === "data" ? "recomputed here from the data (RFC 8785 JCS + SHA-256)" : "as stated in the proof (no data given)")
  )
  summary.append(h("dt", {}, "Input"), h("dd", {}, input.kind === "bundle" ? "proof bundle" : input.kind === "in-place" ? "IN_PLACE document" : "record lookup"))

  const recordChecks = report.checks.filter((c) => c.networkId === undefined)
  const sections: Array<HTMLElement> = []
  input.bundle.anchors.forEach((anchor, i) => {
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
  for (const id of ["proof-text", "rpc-url", "data-file"]) $(id).removeAttribute("aria-invalid")
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

const run = async () => {
  if (running) return
  clearFieldErrors()
  const text = $<HTMLTextAreaElement>("proof-text").value
  if (text.trim() === "") return fieldError("proof-text", "Paste a proof, drop a file or choose one first.")
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
