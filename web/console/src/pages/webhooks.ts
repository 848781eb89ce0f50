/**
 * Webhooks: the account's global webhook (URL, kinds, payload format, delivery mode, enabled), its secret (reveal,
 * rotate, confirm the switch with the overlap's end shown), and a test event with its outcome — all of
 * the console's environment (test and live each have their own: migration 0013). The page says which
 * one it shows and offers the other, so an admin never changes test believing it is live.
 */
import { api, type Delivery } from "../api.ts"
import { accountHash, type PageContext } from "../context.ts"
import { badge, confirmDialog, copyButton, field, formatDate, h, message, uid } from "../dom.ts"

const KINDS = [
  ["anchor.confirmed", "anchor.confirmed: a record is anchored"],
  ["anchor.failed", "anchor.failed: anchoring a record failed"],
  ["record.updated", "record.updated: metadata or webhookUrl changed"],
  ["record.deleted", "record.deleted: a record was deleted"]
] as const

const outcomeOf = (d: Delivery) => {
  const last = d.attempts[d.attempts.length - 1]
  if (last === undefined) return "waiting for the first attempt…"
  const what = last.statusCode !== null ? `HTTP ${last.statusCode}` : last.error ?? "no answer"
  return d.status === "SUCCEEDED"
    ? `Delivered: ${what} in ${last.latencyMs} ms.`
    : `Not delivered: ${what}${last.error !== null && last.statusCode !== null ? ` (${last.error})` : ""} after ${last.latencyMs} ms. ` +
      (d.status === "PENDING" && d.nextAttemptAt !== null ? `Next attempt ${formatDate(d.nextAttemptAt)}.` : "No more attempts.")
}

export const webhooksPage = async (ctx: PageContext): Promise<Node> => {
  const w = await api.webhook(ctx.accountId, ctx.environment)
  const status = h("div", { class: "form-status" })
  const other = ctx.environment === "live" ? "test" : "live"
  const which = h("p", { class: "msg msg-info", id: "webhook-environment" }, h("strong", {}, `${ctx.environment === "live" ? "Live" : "Test"} environment. `),
    `The webhook and secret below serve ${ctx.environment} records and ${ctx.environment} keys only; ${other} has its own. `,
    h("button", { type: "button", class: "link", onclick: () => ctx.setEnvironment(other) }, `Show the ${other} webhook`))

  // ---- settings
  const url = h("input", { type: "url", name: "url", value: w.url ?? "", inputmode: "url", spellcheck: "false", autocomplete: "off", disabled: !ctx.canChange })
  const kinds = KINDS.map(([kind, label]) => {
    const box = h("input", { type: "checkbox", name: "events", value: kind, id: uid("kind"), checked: w.events.includes(kind), disabled: !ctx.canChange })
    return { kind, box, node: h("div", { class: "check" }, box, h("label", { for: box.id }, label)) }
  })
  const format = h("select", { name: "payloadFormat", disabled: !ctx.canChange },
    h("option", { value: "multichain", selected: w.payloadFormat === "multichain" }, "multichain (anchor.confirmed in the seed's form B)"),
    h("option", { value: "envelope", selected: w.payloadFormat === "envelope" }, "envelope (every kind in form A)"))
  const mode = h("select", { name: "deliveryMode", disabled: !ctx.canChange },
    h("option", { value: "single", selected: w.delivery.mode === "single" }, "one event per request"),
    h("option", { value: "batch", selected: w.delivery.mode === "batch" }, "batches: several events per request ({ events: [...] })"))
  const maxEvents = h("input", { type: "number", name: "maxEvents", min: "1", max: "1000", step: "1", value: String(w.delivery.maxEvents),
    disabled: !ctx.canChange })
  const maxWait = h("input", { type: "number", name: "maxWaitMs", min: "0", max: "10000", step: "1", value: String(w.delivery.maxWaitMs),
    disabled: !ctx.canChange })
  const enabled = h("input", { type: "checkbox", name: "enabled", id: uid("enabled"), checked: w.enabled, disabled: !ctx.canChange })
  const settings = h("form", { class: "card", novalidate: true, "aria-labelledby": "wh-settings-h" },
    h("h2", { id: "wh-settings-h" }, `Global webhook (${ctx.environment})`), field("URL", url, ctx.environment === "test"
      ? "http:// or https://, to a public address (private ones only where the node's operator allows them)."
      : "https:// only, to a public address (private ones only where the node's operator allows them)."),
    h("fieldset", {}, h("legend", {}, "Events"), ...kinds.map((k) => k.node)), field("Payload format", format),
    field("Delivery", mode, "Batches: one signed request carries up to the most events below, of one kind, each its own body (docs/webhooks.md)."),
    field("Most events per request (batches)", maxEvents), field("Longest wait for a partial batch, ms (batches)", maxWait),
    h("div", { class: "check" }, enabled, h("label", { for: enabled.id }, "Enabled: send events here")),
    ctx.canChange ? h("div", { class: "actions" }, h("button", { type: "submit" }, "Save")) : null)
  settings.addEventListener("submit", async (e) => {
    e.preventDefault()
    try {
      await api.saveWebhook(ctx.accountId, ctx.environment, {
        url: url.value.trim() === "" ? null : url.value.trim(),
        events: kinds.filter((k) => k.box.checked).map((k) => k.kind),
        payloadFormat: format.value,
        enabled: enabled.checked,
        delivery: { mode: mode.value, maxEvents: Number(maxEvents.value), maxWaitMs: Number(maxWait.value) }
      })
      status.replaceChildren(message("ok", "Saved."))
    } catch (error) {
      status.replaceChildren(message("error", error instanceof Error ? error.message : String(error)))
    }
  })

  // ---- secret
  const secretArea = h("div", { id: "secret" })
  const rotation = w.rotation
  // Revealed in place of the preview, and hidden again by the same button.
  const secretLine = h("p", { id: "secret-line" })
  const hideSecret = () => secretLine.replaceChildren("Secret: ", h("code", { id: "secret-preview" }, w.secretPreview), " (hidden)")
  hideSecret()
  const revealButton = h("button", {
    type: "button",
    class: "secondary",
    "aria-controls": "secret-line",
    "aria-expanded": "false",
    onclick: async () => {
      secretArea.replaceChildren()
      if (revealButton.getAttribute("aria-expanded") === "true") {
        hideSecret()
        revealButton.setAttribute("aria-expanded", "false")
        revealButton.textContent = "Reveal secret"
        return
      }
      try {
        const s = await api.revealSecret(ctx.accountId, ctx.environment)
        secretLine.replaceChildren("Secret: ", h("code", { class: "secret", id: "secret-value" }, s.secret), " ", copyButton(() => s.secret))
        revealButton.setAttribute("aria-expanded", "true")
        revealButton.textContent = "Hide secret"
      } catch (error) {
        secretArea.replaceChildren(message("error", error instanceof Error ? error.message : String(error)))
      }
    }
  }, "Reveal secret")
  const secretCard = h("section", { class: "card", "aria-labelledby": "wh-secret-h" }, h("h2", { id: "wh-secret-h" }, `Signing secret (${ctx.environment})`),
    secretLine, rotation === null ?
    null :
    h("p", { class: "msg msg-info", id: "rotation" },
      `A rotation is in progress: the previous secret still signs x-webhook-signature until ${formatDate(rotation.previousSecretExpiresAt)}, ` +
        "and the new one signs x-webhook-signature-next. Confirm the switch once your receiver checks the new secret."), ctx.canChange
    ? h("div", { class: "actions" }, revealButton, h("button", {
      type: "button",
      class: "secondary",
      onclick: async () => {
        const ok = await confirmDialog(`Rotate the ${ctx.environment} signing secret?`,
          "A new secret is made. For 24 hours, or until you confirm the switch, deliveries stay signed with the current secret " +
            "(x-webhook-signature) and also with the new one (x-webhook-signature-next).", "Rotate")
        if (!ok) return
        try {
          const r = await api.rotateSecret(ctx.accountId, ctx.environment)
          ctx.refresh()
          status.replaceChildren(message("ok", `New secret made; the previous one signs until ${formatDate(r.previousSecretExpiresAt)}.`))
        } catch (error) {
          status.replaceChildren(message("error", error instanceof Error ? error.message : String(error)))
        }
      }
    }, "Rotate secret"), rotation === null ? null : h("button", {
      type: "button",
      onclick: async () => {
        const ok = await confirmDialog("Switch to the new secret now?",
          "From the next delivery on, x-webhook-signature is signed with the new secret only. Receivers still checking the previous secret will reject deliveries.",
          "Confirm the switch")
        if (!ok) return
        await api.confirmSecret(ctx.accountId, ctx.environment)
        ctx.refresh()
      }
    }, "Confirm the switch"))
    : message("info", "Viewers cannot see the secret."), secretArea)

  // ---- test event
  const testResult = h("div", { id: "test-result", "aria-live": "polite" })
  const testCard = h("section", { class: "card", "aria-labelledby": "wh-test-h" }, h("h2", { id: "wh-test-h" }, "Send a test event"),
    h("p", {},
      `A webhook.test event to the URL above (saved), signed like every event, whatever the subscriptions and "enabled". It shows in the ${ctx.environment} deliveries.`),
    ctx.canChange
      ? h("div", { class: "actions" }, h("button", {
        type: "button",
        onclick: async () => {
          try {
            let d = await api.testWebhook(ctx.accountId, ctx.environment)
            const line = h("p", { class: "msg msg-info", role: "status" }, `Sent (${d.id}): waiting for the receiver…`)
            const link = h("a", { href: accountHash(ctx.accountId, "deliveries", { eventId: d.eventId }) }, "See it in the deliveries")
            testResult.replaceChildren(line, h("p", {}, link))
            const until = Date.now() + 20_000
            while (d.attempts.length === 0 && Date.now() < until) {
              await new Promise((r) => setTimeout(r, 400))
              d = await api.delivery(ctx.accountId, ctx.environment, d.id)
            }
            line.className = `msg ${d.status === "SUCCEEDED" ? "msg-ok" : d.attempts.length === 0 ? "msg-info" : "msg-error"}`
            line.dataset.status = d.status
            line.replaceChildren(badge(d.status), " ", outcomeOf(d))
          } catch (error) {
            testResult.replaceChildren(message("error", error instanceof Error ? error.message : String(error)))
          }
        }
      }, "Send test event"))
      : null, testResult)

  return h("section", {}, h("h1", {}, "Webhooks"), which,
    h("p", {}, "Events of records without their own webhookUrl go to this URL when it is enabled and subscribed to their kind. " +
      "Every delivery is signed (x-webhook-signature and the Standard Webhooks headers), with the secret of its record's environment."), status, settings,
    secretCard, testCard)
}
