/** Settings > API keys: create (the key shown once, with copy), list, revoke with confirmation. */
import { api, type Environment, type Key } from "../api.ts"
import type { PageContext } from "../context.ts"
import { badge, confirmDialog, copyButton, field, formatDate, h, message, select, table } from "../dom.ts"

export const keysPage = async (ctx: PageContext): Promise<Node> => {
  const { keys } = await api.keys(ctx.accountId)
  const status = h("div", { class: "form-status", id: "keys-status" })

  const revoke = async (k: Key) => {
    const ok = await confirmDialog(
      `Revoke ${k.name ?? k.display}?`,
      `Requests with ${k.display} will be refused (401) from now on. This cannot be undone.`,
      "Revoke key"
    )
    if (!ok) return
    try {
      await api.revokeKey(ctx.accountId, k.id)
      ctx.refresh()
    } catch (e) {
      status.replaceChildren(message("error", e instanceof Error ? e.message : String(e)))
    }
  }

  const rows = (keys: ReadonlyArray<Key>) =>
    keys.map((k) => [
      k.name ?? "—",
      h("code", {}, k.display),
      k.environment,
      badge(k.status),
      formatDate(k.createdAt),
      k.lastUsedAt === null ? "never" : formatDate(k.lastUsedAt),
      k.expiresAt === null ? "never" : formatDate(k.expiresAt),
      ctx.canChange && k.status === "active"
        ? h("button", { type: "button", class: "danger small", "aria-label": `Revoke ${k.name ?? k.display}`, onclick: () => void revoke(k) }, "Revoke")
        : ""
    ])
  // The list is its own region so that a new key joins it at once, beside the panel that shows it once.
  const list = h("div", { id: "keys-list" })
  const drawList = (keys: ReadonlyArray<Key>) =>
    list.replaceChildren(keys.length === 0
      ? h("p", {}, "No keys yet.")
      : table("API keys", ["Name", "Key", "Environment", "Status", "Created", "Last used", "Expires", ""], rows(keys)))
  drawList(keys)

  let create: Node
  if (ctx.canChange) {
    const name = h("input", { type: "text", name: "name", required: true, maxlength: 100, autocomplete: "off" })
    const env = select("environment", [["test", "Test (dcp_test_…)"], ["live", "Live (dcp_live_…)"]], ctx.environment)
    const days = h("input", { type: "number", name: "expires", min: 1, max: 3650, inputmode: "numeric" })
    const created = h("div", { id: "created-key" })
    const form = h("form", { class: "card", novalidate: true, "aria-labelledby": "create-key-h" }, h("h2", { id: "create-key-h" }, "Create a key"),
      h("div", { class: "row" }, field("Name", name, "What uses it, e.g. \"billing service\"."), field("Environment", env),
        field("Expires after (days, optional)", days)), h("div", { class: "actions" }, h("button", { type: "submit" }, "Create key")), created)
    form.addEventListener("submit", async (e) => {
      e.preventDefault()
      if (name.value.trim() === "") {
        created.replaceChildren(message("error", "Give the key a name."))
        name.focus()
        return
      }
      try {
        const result = await api.createKey(ctx.accountId, {
          name: name.value.trim(),
          environment: env.value as Environment,
          ...(days.value === "" ? {} : { expiresInDays: Number(days.value) })
        })
        const keyText = h("code", { class: "secret", id: "new-key" }, result.key)
        const panel = h("div", { class: "once", role: "status", tabindex: -1 },
          h("p", {}, h("strong", {}, "Your new key, shown this once: "), "copy it now and keep it in a secret store. The console cannot show it again."),
          h("p", {}, keyText, " ", copyButton(() => result.key)), h("p", {}, h("button", { type: "button", class: "secondary", onclick: () =>
            ctx.refresh() }, "Done: I stored it")))
        created.replaceChildren(panel)
        panel.focus()
        name.value = ""
        days.value = ""
        drawList((await api.keys(ctx.accountId)).keys)
      } catch (error) {
        created.replaceChildren(message("error", error instanceof Error ? error.message : String(error)))
      }
    })
    create = form
  } else {
    create = message("info", "You are a viewer of this account: you can see its keys but not create or revoke them.")
  }

  return h("section", {}, h("h1", {}, "Settings › API keys"),
    h("p", {}, "Keys authenticate requests to the API (Authorization: Bearer …). A key is shown once, when it is created; " +
      "the list shows its prefix and last four characters. \"Last used\" is recorded to the minute."), create, status, list)
}
