/**
 * Batched requests (docs/webhooks.md, "The request log"): one row per HTTP request of batched delivery, with its
 * events (each taken or not by the answer) and Redeliver for the whole request; one event alone is redelivered
 * from its delivery (Deliveries page, found by event id). Filter by record or event.
 */
import { api, type WebhookRequest } from "../api.ts"
import { accountHash, type PageContext } from "../context.ts"
import { field, formatDate, h, message, table } from "../dom.ts"

const FILTERS = ["recordId", "eventId"] as const

const answer = (r: WebhookRequest) => r.statusCode === null ? (r.error ?? "no answer") : `HTTP ${r.statusCode}`

const requestCard = (ctx: PageContext, r: WebhookRequest, status: HTMLElement) => {
  const notTaken = r.events.filter((e) => !e.taken).length
  return h("div", { class: "card webhook-request", "data-request": r.id },
    h("dl", { class: "facts" }, h("dt", {}, "Request"), h("dd", {}, h("code", {}, r.id)), h("dt", {}, "Event"), h("dd", {}, h("code", {}, r.event)),
      h("dt", {}, "URL"), h("dd", {}, h("code", {}, r.url)), h("dt", {}, "Sent"), h("dd", {}, formatDate(r.startedAt)), h("dt", {}, "Answer"),
      h("dd", {}, `${answer(r)} in ${r.latencyMs} ms`), h("dt", {}, "Events"), h("dd", {}, `${r.eventCount}${notTaken > 0 ? `, ${notTaken} not taken` : ""}`)),
    table(`Events of ${r.id}`, ["Event id", "Record", "Taken"], r.events.map((e) => [
      h("a", { href: accountHash(ctx.accountId, "deliveries", { eventId: e.eventId }) }, h("code", {}, e.eventId)),
      e.recordId === "" ? "—" : h("a", { href: accountHash(ctx.accountId, `records/${e.recordId}`) }, h("code", {}, e.recordId)),
      e.taken ? "yes" : "no"
    ]), { captionHidden: true }), ctx.canChange
    ? h("div", { class: "actions" }, h("button", {
      type: "button",
      class: "secondary small",
      "aria-label": `Redeliver request ${r.id}`,
      onclick: async () => {
        try {
          const done = await api.redeliverRequest(ctx.accountId, ctx.environment, r.id)
          status.replaceChildren(message("ok", `${done.deliveries.length} events of ${r.id} queued again: a new round of attempts starts now.`))
          setTimeout(() => ctx.refresh(), 1_500)
        } catch (e) {
          status.replaceChildren(message("error", e instanceof Error ? e.message : String(e)))
        }
      }
    }, "Redeliver request"))
    : null)
}

export const requestsPage = async (ctx: PageContext): Promise<Node> => {
  const params = Object.fromEntries(FILTERS.map((k) => [k, ctx.query.get(k) ?? undefined]))
  const record = h("input", { type: "text", name: "recordId", value: params.recordId ?? "", spellcheck: "false", autocomplete: "off" })
  const event = h("input", { type: "text", name: "eventId", value: params.eventId ?? "", spellcheck: "false", autocomplete: "off" })
  const form = h("form", { class: "card filters", role: "search", "aria-label": "Filter requests" },
    h("div", { class: "row" }, field("Record id", record), field("Event id", event)),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Apply"),
      h("a", { href: accountHash(ctx.accountId, "requests"), class: "button secondary" }, "Clear"),
      h("button", { type: "button", class: "secondary", onclick: () => ctx.refresh() }, "Refresh")))
  form.addEventListener("submit", (e) => {
    e.preventDefault()
    ctx.navigate(accountHash(ctx.accountId, "requests", { recordId: record.value.trim(), eventId: event.value.trim() }))
  })
  const status = h("div", { class: "form-status" })
  let list: Node
  try {
    const page = await api.requests(ctx.accountId, { environment: ctx.environment, ...params, cursor: ctx.query.get("cursor") ?? undefined })
    list = page.requests.length === 0
      ? h("p", {}, "No batched request matches. Requests are logged when the webhook's delivery mode is batch (Webhooks page).")
      : h("div", {}, ...page.requests.map((r) => requestCard(ctx, r, status)), page.nextCursor === null ? null : h("p", {}, h("a", {
        href: accountHash(ctx.accountId, "requests", { ...params, cursor: page.nextCursor }),
        class: "button secondary"
      }, "Older requests")))
  } catch (e) {
    list = message("error", e instanceof Error ? e.message : String(e))
  }
  return h("section", {}, h("h1", {}, "Requests"),
    h("p", {}, `Batched webhook requests of the ${ctx.environment} environment, newest first, each with its events and the receiver's answer.`), form, status,
    list)
}
