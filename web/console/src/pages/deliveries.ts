/** Deliveries: every attempt with status, latency and error; filter; redeliver. */
import { api, type Delivery } from "../api.ts"
import { accountHash, type PageContext } from "../context.ts"
import { badge, field, formatDate, h, message, select, table } from "../dom.ts"

const FILTERS = ["status", "recordId", "eventId"] as const

const deliveryCard = (ctx: PageContext, d: Delivery, status: HTMLElement) => {
  const attempts = d.attempts.length === 0
    ? h("p", { class: "hint" }, "No attempt yet.")
    : table(`Attempts of ${d.id}`, ["Round", "Attempt", "Started", "Status", "Latency", "Error"], d.attempts.map((a) => [
      String(a.round),
      String(a.attempt),
      formatDate(a.startedAt),
      a.statusCode === null ? "—" : `HTTP ${a.statusCode}`,
      `${a.latencyMs} ms`,
      a.error ?? ""
    ]), { captionHidden: true })
  return h("article", { class: "card delivery", "data-delivery": d.id, "data-event": d.event, "data-status": d.status, "aria-labelledby": `h-${d.id}` },
    h("h2", { id: `h-${d.id}` }, h("code", {}, d.event), " ", badge(d.status)),
    h("dl", { class: "facts" },
      h("dt", {}, "Delivery"), h("dd", {}, h("code", {}, d.id)),
      h("dt", {}, "Event id"), h("dd", {}, h("code", {}, d.eventId)),
      h("dt", {}, "Record"), h("dd", {}, d.recordId === "" ? "— (test event)" : h("a", { href: accountHash(ctx.accountId, `records/${d.recordId}`) }, h("code", {}, d.recordId))),
      h("dt", {}, "URL"), h("dd", {}, h("code", {}, d.url), d.target === "record" ? " (the record's webhookUrl)" : " (the account's webhook)"),
      h("dt", {}, "Created"), h("dd", {}, formatDate(d.createdAt)),
      d.status === "PENDING" && d.nextAttemptAt !== null ? [h("dt", {}, "Next attempt"), h("dd", {}, formatDate(d.nextAttemptAt))] : null),
    attempts,
    ctx.canChange
      ? h("div", { class: "actions" }, h("button", {
        type: "button",
        class: "secondary",
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
}

export const deliveriesPage = async (ctx: PageContext): Promise<Node> => {
  const params = Object.fromEntries(FILTERS.map((k) => [k, ctx.query.get(k) ?? undefined]))
  const state = select("status", [["", "Any status"], ["PENDING", "PENDING"], ["SUCCEEDED", "SUCCEEDED"], ["FAILED", "FAILED"]], params.status ?? "")
  const record = h("input", { type: "text", name: "recordId", value: params.recordId ?? "", spellcheck: "false", autocomplete: "off" })
  const event = h("input", { type: "text", name: "eventId", value: params.eventId ?? "", spellcheck: "false", autocomplete: "off" })
  const form = h("form", { class: "card filters", role: "search", "aria-label": "Filter deliveries" },
    h("div", { class: "row" }, field("Status", state), field("Record id", record), field("Event id", event)),
    h("div", { class: "actions" },
      h("button", { type: "submit" }, "Apply"),
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
      : h("div", {},
        ...page.deliveries.map((d) => deliveryCard(ctx, d, status)),
        page.nextCursor === null ? null : h("p", {}, h("a", {
          href: accountHash(ctx.accountId, "deliveries", { ...params, cursor: page.nextCursor }),
          class: "button secondary"
        }, "Older deliveries")))
  } catch (e) {
    list = message("error", e instanceof Error ? e.message : String(e))
  }
  return h("section", {},
    h("h1", {}, "Deliveries"),
    h("p", {}, `Webhook deliveries of the ${ctx.environment} environment, newest first, with every attempt. Failed ones stay here for redelivery.`),
    form, status, list)
}
