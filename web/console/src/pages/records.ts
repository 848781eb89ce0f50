/**
 * Records: filter by status, chain, collection and date, search by id or hash; a record's anchors
 * (explorer links where the network configures an explorer), its proof bundle, its certificate, and a
 * link that opens the public verify page with the bundle in the fragment.
 */
import { bundleLink } from "../../../../src/certificates/bundleUrl.ts"
import { api, type Record_ } from "../api.ts"
import { accountHash, type PageContext } from "../context.ts"
import { badge, field, formatDate, h, message, select, table } from "../dom.ts"

const STATUSES = [["", "Any status"], ["QUEUED", "QUEUED"], ["BATCHING", "BATCHING"], ["ANCHORED", "ANCHORED"], ["FAILED", "FAILED"], ["DELETED",
  "DELETED"]] as const
const CHAINS = [["", "Any chain"], ["evm", "EVM"], ["fabric", "Fabric"], ["hybrid", "Hybrid (both)"]] as const
const FILTERS = ["status", "chain", "collection", "from", "to", "q"] as const

export const recordsPage = async (ctx: PageContext): Promise<Node> => {
  const params = Object.fromEntries(FILTERS.map((k) => [k, ctx.query.get(k) ?? undefined]))
  const collectionSupported = ctx.config.recordFilters.collection
  const status = select("status", STATUSES, params.status ?? "")
  const chain = select("chain", CHAINS, params.chain ?? "")
  const collection = h("input", { type: "text", name: "collection", value: params.collection ?? "", disabled: !collectionSupported, autocomplete: "off" })
  const from = h("input", { type: "date", name: "from", value: params.from ?? "" })
  const to = h("input", { type: "date", name: "to", value: params.to ?? "" })
  const search = h("input", { type: "search", name: "q", value: params.q ?? "", spellcheck: "false", autocomplete: "off" })
  const form = h("form", { class: "card filters", role: "search", "aria-label": "Filter records" },
    h("div", { class: "row" }, field("Search by record id or hash", search), field("Status", status), field("Chain", chain),
      field("Collection", collection, collectionSupported ? undefined : "Not available: this node's records have no collection yet."),
      field("Created from", from), field("Created to", to)),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Apply"),
      h("a", { href: accountHash(ctx.accountId, "records"), class: "button secondary" }, "Clear")))
  form.addEventListener("submit", (e) => {
    e.preventDefault()
    ctx.navigate(accountHash(ctx.accountId, "records", {
      status: status.value,
      chain: chain.value,
      collection: collectionSupported ? collection.value.trim() : undefined,
      from: from.value,
      to: to.value,
      q: search.value.trim()
    }))
  })

  let list: Node
  try {
    const page = await api.records(ctx.accountId, { environment: ctx.environment, ...params, cursor: ctx.query.get("cursor") ?? undefined })
    list = page.records.length === 0
      ? h("p", { id: "records-empty" }, "No record matches.")
      : h("div", {},
        table(`Records (${ctx.environment})`, ["Record", "Status", "Chain", "Network", "Collection", "Created", "Anchored (block time)"],
          page.records.map((r) => [
            h("a", { href: accountHash(ctx.accountId, `records/${r.recordId}`) }, h("code", {}, r.recordId)),
            badge(r.status),
            r.chainType,
            r.networkId,
            collectionLink(ctx, r.collection, "—"),
            formatDate(r.createdAt),
            formatDate(r.anchoredAt)
          ])), page.nextCursor === null ? null : h("p", {}, h("a", {
            href: accountHash(ctx.accountId, "records", { ...params, cursor: page.nextCursor }),
            class: "button secondary"
          }, "Older records")))
  } catch (e) {
    list = message("error", e instanceof Error ? e.message : String(e))
  }
  return h("section", {}, h("h1", {}, "Records"), form, list)
}

/** A record's collection as a link to the list filtered by it (plain text where the node cannot filter by collection). */
const collectionLink = (ctx: PageContext, collection: string | null, none: string): Node | string =>
  collection === null
    ? none
    : ctx.config.recordFilters.collection
    ? h("a", { href: accountHash(ctx.accountId, "records", { collection }), title: `Records of collection ${collection}` }, collection)
    : collection

const download = (name: string, text: string) => {
  const url = URL.createObjectURL(new Blob([text], { type: "application/json" }))
  const a = h("a", { href: url, download: name })
  document.body.append(a)
  a.click()
  a.remove()
  setTimeout(() => URL.revokeObjectURL(url), 10_000)
}

const anchorsTable = (ctx: PageContext, r: Record_) => {
  if (r.anchors.length === 0) return h("p", {}, "No anchor yet.")
  const explorerOf = new Map(ctx.config.networks.map((n) => [n.networkId, n.explorerUrl]))
  // The section's heading says "Anchors" already: the table's caption stays for screen readers only.
  return table("Anchors of this record", ["Network", "Chain", "Transaction", "Block", "Batch", "Merkle root", "Anchored"], r.anchors.map((a) => {
    const explorer = explorerOf.get(a.networkId)
    const tx = h("code", {}, a.txHash)
    return [
      a.networkId,
      a.chainType,
      explorer && a.chainType === "evm" ? h("a", { href: `${explorer}/tx/${a.txHash}`, rel: "noopener noreferrer", target: "_blank" }, tx) : tx,
      a.blockNumber === null ? "—" : String(a.blockNumber),
      String(a.batchId),
      h("code", {}, a.merkleRoot),
      formatDate(a.anchoredAt)
    ]
  }), { captionHidden: true })
}

export const recordPage = async (ctx: PageContext): Promise<Node> => {
  const recordId = ctx.rest[0]!
  const r = await api.record(ctx.accountId, ctx.environment, recordId)
  const actions = h("div", { class: "actions" })
  const status = h("div", { class: "form-status" })
  if (r.status === "ANCHORED") {
    actions.append(
      h("button", {
        type: "button",
        onclick: async () => {
          try {
            const bundle = await api.proof(ctx.accountId, ctx.environment, r.recordId)
            download(`proof-${r.recordId}.json`, JSON.stringify(bundle, null, 2))
          } catch (e) {
            status.replaceChildren(message("error", e instanceof Error ? e.message : String(e)))
          }
        }
      }, "Download proof bundle"),
      h("a", { class: "button secondary", href: api.certificateUrl(ctx.accountId, ctx.environment, r.recordId), target: "_blank", rel: "noopener" },
        "Certificate (PDF)"),
      h("button", {
        type: "button",
        class: "secondary",
        id: "verify-link",
        onclick: async () => {
          try {
            const bundle = await api.proof(ctx.accountId, ctx.environment, r.recordId)
            window.open(await bundleLink(ctx.config.verifyUrl, bundle), "_blank", "noopener")
          } catch (e) {
            status.replaceChildren(message("error", e instanceof Error ? e.message : String(e)))
          }
        }
      }, "Verify in the public verify page")
    )
  } else {
    actions.append(h("p", { class: "hint" }, `The proof bundle and certificate exist once the record is ANCHORED (it is ${r.status}).`))
  }
  const facts: Array<[string, Node | string]> = [
    ["Record id", h("code", {}, r.recordId)],
    ["Hash", h("code", {}, r.hash)],
    ["Status", badge(r.status)],
    ["Environment", r.environment],
    ["Chain", `${r.chainType} (primary network ${r.networkId})`],
    ["Collection", collectionLink(ctx, r.collection, "— (none)")],
    ["Package mode", r.packageMode],
    // Two clocks: the node's when it accepted the record, the chain's in the block. A chain whose clock is
    // behind (a dev chain) can put the block before the acceptance.
    ["Created", h("span", {}, formatDate(r.createdAt), h("span", { class: "hint" }, " accepted by this node (its clock)"))],
    ["Anchored", r.anchoredAt === null
      ? formatDate(r.anchoredAt)
      : h("span", {}, formatDate(r.anchoredAt), h("span", { class: "hint" }, " the time in the block that confirmed it (the chain's clock)"))],
    ["Webhook URL", r.webhookUrl ?? "—"],
    ["Encrypted", r.encrypted ? "yes (stored as ciphertext)" : "no"]
  ]
  return h("section", {}, h("p", {}, h("a", { href: accountHash(ctx.accountId, "records") }, "‹ Records")), h("h1", {}, "Record ", h("code", {}, r.recordId)),
    h("dl", { class: "facts" }, ...facts.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])), actions, status, h("h2", {}, "Anchors"), anchorsTable(ctx, r),
    h("h2", {}, "Metadata"), h("pre", { class: "json" }, JSON.stringify(r.metadata, null, 2)),
    r.data === null ? null : h("details", {}, h("summary", {}, "Data"), h("pre", { class: "json" }, JSON.stringify(r.data, null, 2))))
}
