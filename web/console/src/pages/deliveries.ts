/**
 * Deliveries: a dense table, one row per delivery (event, status, record, last attempt), each row
 * expanding to its facts and every attempt (round, attempt, status, latency, error), with Redeliver;
 * filter. Tall cards made 5 deliveries ~2,260 px high; the table shows some 20 in a screen.
 */
import { api, type Delivery } from "../api.ts"
import { accountHash, type PageContext } from "../context.ts"
import { badge, field, formatDate, h, message, select, table } from "../dom.ts"

const FILTERS = ["status", "recordId", "eventId"] as const
const COLUMNS = ["Event", "Status", "Record", "Created", "Attempts", "Last attempt", ""] as const

/** Rows opened by the user stay open when the page is drawn again (Refresh, a redelivery). */
const expanded = new Set<string>()

const lastAttempt = (d: Delivery) => {
  const a = d.attempts.at(-1)
  if (a === undefined) return d.status === "PENDING" && d.nextAttemptAt !== null ? `none yet (next ${formatDate(d.nextAttemptAt)})` : "none yet"
  const outcome = a.statusCode === null ? (a.error ?? "no answer") : `HTTP ${a.statusCode}`
  return `${outcome} in ${a.latencyMs} ms`
}

const details = (ctx: PageContext, d: Delivery, status: HTMLElement) =>
  h("div", { class: "delivery-detail-body" },
    h("dl", { class: "facts" }, h("dt", {}, "Delivery"), h("dd", {}, h("code", {}, d.id)), h("dt", {}, "Event id"), h("dd", {}, h("code", {}, d.eventId)),
      h("dt", {}, "URL"), h("dd", {}, h("code", {}, d.url), d.target === "record" ? " (the record's webhookUrl)" : " (the account's webhook)"),
      d.status === "PENDING" && d.nextAttemptAt !== null ? [h("dt", {}, "Next attempt"), h("dd", {}, formatDate(d.nextAttemptAt))] : null),
    d.attempts.length === 0
      ? h("p", { class: "hint" }, "No attempt yet.")
      : table(`Attempts of ${d.id}`, ["Round", "Attempt", "Started", "Status", "Latency", "Error"], d.attempts.map((a) => [
        String(a.round),
        String(a.attempt),
        formatDate(a.startedAt),
        a.statusCode === null ? "—" : `HTTP ${a.statusCode}`,
        `${a.latencyMs} ms`,
        a.error ?? ""
      ]), { captionHidden: true }), ctx.canChange
    ? h("div", { class: "actions" }, h("button", {
      type: "button",
      class: "secondary small",
      "aria-label": `Redeliver ${d.id}`,
      onclick: async () => {
        try {
          await api.redeliver(ctx.accountId, ctx.environment, d.id)
          status.replaceChildren(message("ok", `${d.id} queued again: a new round of attempts starts now.`))
          setTimeout(() => ctx.refresh(), 1_500)
        } catch (e) {
          status.replaceChildren(message("error", e instanceof Error ? e.message : String(e)))
        }
      }
    }, "Redeliver"))
    : null)

/** A delivery's row and, below it, its detail row (hidden until the row's button opens it). */
const deliveryRows = (ctx: PageContext, d: Delivery, status: HTMLElement) => {
  const detailId = `detail-${d.id}`
  const open = expanded.has(d.id)
  const detail = h("tr", { class: "delivery-detail", id: detailId, "data-delivery": d.id, hidden: !open },
    h("td", { colspan: COLUMNS.length, "data-label": "" }, details(ctx, d, status)))
  const toggle = h("button", {
    type: "button",
    class: "secondary small",
    "aria-expanded": String(open),
    "aria-controls": detailId,
    "aria-label": `Details of ${d.id}`,
    onclick: () => {
      const opening = detail.hidden
      detail.hidden = !opening
      toggle.setAttribute("aria-expanded", String(opening))
      toggle.textContent = opening ? "Hide" : "Details"
      if (opening) expanded.add(d.id)
      else expanded.delete(d.id)
    }
  }, open ? "Hide" : "Details")
  const cells = [
    h("code", {}, d.event),
    badge(d.status),
    d.recordId === "" ? "— (test event)" : h("a", { href: accountHash(ctx.accountId, `records/${d.recordId}`) }, h("code", {}, d.recordId)),
    formatDate(d.createdAt),
    String(d.attempts.length),
    lastAttempt(d),
    toggle
  ]
  const row = h("tr", { class: "delivery", "data-delivery": d.id, "data-event": d.event, "data-status": d.status },
    ...cells.map((c, i) => h("td", { "data-label": COLUMNS[i] }, c)))
  return [row, detail]
}

const deliveriesTable = (ctx: PageContext, deliveries: ReadonlyArray<Delivery>, status: HTMLElement) =>
  h("div", { class: "table-wrap" },
    h("table", { class: "cards dense" }, h("caption", { class: "visually-hidden" }, `Deliveries (${ctx.environment})`),
      h("thead", {}, h("tr", {}, ...COLUMNS.map((x) => h("th", { scope: "col" }, x)))), h("tbody", {}, ...deliveries.flatMap((d) =>
        deliveryRows(ctx, d, status)
      ))))

export const deliveriesPage = async (ctx: PageContext): Promise<Node> => {
  const params = Object.fromEntries(FILTERS.map((k) => [k, ctx.query.get(k) ?? undefined]))
  const state = select("status", [["", "Any status"], ["PENDING", "PENDING"], ["SUCCEEDED", "SUCCEEDED"], ["FAILED", "FAILED"]], params.status ?? "")
  const record = h("input", { type: "text", name: "recordId", value: params.recordId ?? "", spellcheck: "false", autocomplete: "off" })
  const event = h("input", { type: "text", name: "eventId", value: params.eventId ?? "", spellcheck: "false", autocomplete: "off" })
  const form = h("form", { class: "card filters", role: "search", "aria-label": "Filter deliveries" },
    h("div", { class: "row" }, field("Status", state), field("Record id", record), field("Event id", event)),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Apply"),
      h("a", { href: accountHash(ctx.accountId, "deliveries"), class: "button secondary" }, "Clear"),
      h("button", { type: "button", class: "secondary", onclick: () => ctx.refresh() }, "Refresh")))
  form.addEventListener("submit", (e) => {
    e.preventDefault()
    ctx.navigate(accountHash(ctx.accountId, "deliveries", { status: state.value, recordId: record.value.trim(), eventId: event.value.trim() }))
  })
  const status = h("div", { class: "form-status" })
  let list: Node
  try {
    const page = await api.deliveries(ctx.accountId, { environment: ctx.environment, ...params, cursor: ctx.query.get("cursor") ?? undefined })
    list = page.deliveries.length === 0
      ? h("p", {}, "No delivery matches.")
      : h("div", {}, deliveriesTable(ctx, page.deliveries, status), page.nextCursor === null ? null : h("p", {}, h("a", {
        href: accountHash(ctx.accountId, "deliveries", { ...params, cursor: page.nextCursor }),
        class: "button secondary"
      }, "Older deliveries")))
  } catch (e) {
    list = message("error", e instanceof Error ? e.message : String(e))
  }
  return h("section", {}, h("h1", {}, "Deliveries"),
    h("p", {}, `Webhook deliveries of the ${ctx.environment} environment, newest first; each row opens to every attempt. ` +
      "Failed ones stay here for redelivery. Batched delivery: ", h("a", { href: accountHash(ctx.accountId, "requests") }, "each request with its events"),
      "."), form, status, list)
}
