/**
 * The verify page's result area and network list, drawn from a run's report (./checks.ts). Every value
 * comes from untrusted input (the bundle, the chain) and is set as text through `h`, never as HTML.
 */
import type { BundleAnchor } from "../../../src/verify/input.ts"
import type { Check, CheckStatus, Outcome } from "../../../src/verify/report.ts"
import { h } from "../../shared/dom.ts"
import type { Run } from "./checks.ts"
import { networkFor, type VerifyPageConfig } from "./config.ts"
import { $ } from "./dom.ts"
import type { LoadedConfig } from "./inputs.ts"

export const showNetworks = ({ config, notice }: LoadedConfig) => {
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

export const renderRun = ({ report, inputLabel, anchors, receipt, rpcUsed, config }: Run) => {
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

export const renderUnreadable = (message: string) => {
  const heading = h("h2", { "id": "verdict", "tabindex": "-1", "class": "verdict o-could-not-check", "data-outcome": "could-not-check" }, "Could not check")
  $("result").replaceChildren(heading, h("p", { "class": "explain", "data-error": "input" }, `The input cannot be read: ${message}`))
  $("result").hidden = false
  heading.focus()
}
