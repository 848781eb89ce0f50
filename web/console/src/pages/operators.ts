/** For operators: every account (create, activate, change plan, suspend) and every network (leader, endpoint, head, lag, signer balance). */
import { api, type Account, type Network } from "../api.ts"
import { accountHash, type PageContext } from "../context.ts"
import { badge, confirmDialog, field, formatDate, formatEth, formatNumber, h, message, select, table } from "../dom.ts"

const PLANS = [["FREE", "FREE"], ["STARTUP", "STARTUP"], ["SCALE", "SCALE"], ["ENTERPRISE", "ENTERPRISE"]] as const

export const accountsPage = async (ctx: PageContext): Promise<Node> => {
  const { accounts } = await api.accounts()
  const status = h("div", { class: "form-status" })
  const act = (f: () => Promise<unknown>, done: string) => async () => {
    try {
      await f()
      ctx.refresh()
      status.replaceChildren(message("ok", done))
    } catch (e) {
      status.replaceChildren(message("error", e instanceof Error ? e.message : String(e)))
    }
  }

  const name = h("input", { type: "text", name: "name", required: true, maxlength: 200, autocomplete: "off" })
  const email = h("input", { type: "email", name: "email", autocomplete: "off" })
  const plan = select("plan", PLANS, "FREE")
  const activate = h("input", { type: "checkbox", name: "activate", id: "new-account-activate", checked: true })
  const create = h("form", { class: "card", novalidate: true, "aria-labelledby": "new-account-h" }, h("h2", { id: "new-account-h" }, "Create an account"),
    h("div", { class: "row" }, field("Name", name), field("Contact email (optional)", email), field("Plan", plan)),
    h("div", { class: "check" }, activate, h("label", { for: activate.id }, "Activate at once (keys can be created only for active accounts)")),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Create account")))
  create.addEventListener("submit", async (e) => {
    e.preventDefault()
    if (name.value.trim() === "") {
      status.replaceChildren(message("error", "Give the account a name."))
      name.focus()
      return
    }
    await act(
      () =>
        api.createAccount({ name: name.value.trim(), plan: plan.value, activate: activate.checked,
          ...(email.value.trim() ? { email: email.value.trim() } : {}) }),
      `Account ${name.value.trim()} created.`
    )()
  })

  const row = (a: Account) => {
    const planSelect = select("plan", PLANS, a.plan)
    planSelect.setAttribute("aria-label", `Plan of ${a.name}`)
    return [
      h("a", { href: accountHash(a.id, "overview") }, a.name),
      h("code", {}, a.id),
      h("span", { class: "inline-form" }, planSelect,
        h("button", { type: "button", class: "secondary small", "aria-label": `Change the plan of ${a.name}`,
          onclick: act(() => api.changePlan(a.id, planSelect.value), `Plan of ${a.name} changed.`) }, "Change")),
      badge(a.status),
      formatDate(a.createdAt),
      h("span", { class: "inline-form" }, a.status !== "ACTIVE"
        ? h("button", { type: "button", class: "small", "aria-label": `Activate ${a.name}`, onclick: act(() => api.activate(a.id), `${a.name} is active.`) },
          "Activate")
        : h("button", {
          type: "button",
          class: "danger small",
          "aria-label": `Suspend ${a.name}`,
          onclick: async () => {
            if (await confirmDialog(`Suspend ${a.name}?`, "Its API keys stop working at once; its data stays.", "Suspend")) {
              await act(() => api.suspend(a.id), `${a.name} is suspended.`)()
            }
          }
        }, "Suspend"))
    ]
  }
  return h("section", {}, h("h1", {}, "Accounts"), status, create, table("Accounts", ["Name", "Id", "Plan", "Status", "Created", ""], accounts.map(row)))
}

const UNKNOWN = h("span", { class: "hint" }, "unknown")
const NETWORK_COLUMNS = ["Network", "Leader", "Endpoint", "State", "Head", "Confirmation lag", "Backlog", "Last confirmed", "Signer"]

/** Which node leads the network, from the lock table (what this node can know of the others). */
const leaderOf = (n: Network) => {
  switch (n.ledBy) {
    case "this-node":
      return h("span", {}, h("strong", {}, "this node"), h("span", { class: "hint block" }, "leader: batches, sends, watches"))
    case "another-node":
      return h("span", {}, "another node",
        h("span", { class: "hint block" }, `${n.leaderAddress ?? "address unknown"}, since ${formatDate(n.leaderSince)} at the latest; this node follows`))
    case "no-node":
      return h("span", {}, "no node", h("span", { class: "hint block" }, "nobody holds the lock now: a node takes it within seconds"))
    case "unknown":
      return UNKNOWN.cloneNode(true)
  }
}

export const networksPage = async (_ctx: PageContext): Promise<Node> => {
  const { networks } = await api.networks()
  return h("section", {}, h("h1", {}, "Networks"),
    h("p", {}, "As this node sees them: which node leads each network (batches, sends, watches), the endpoint as this node last used it, " +
      "the last block seen, the backlog, and the signer's balance. What this node cannot know (the head of a network another node leads, " +
      "an endpoint it has not used) says \"unknown\"."),
    networks.length === 0 ? h("p", {}, "No network is configured.") : table("Networks", NETWORK_COLUMNS, networks.map((n) => [
      h("span", {}, h("strong", {}, n.networkId), ` ${n.chainType}, ${n.environment}`),
      leaderOf(n),
      n.rpc === "unknown" ? UNKNOWN.cloneNode(true) : badge(n.rpc),
      h("span", {}, badge(n.status), n.lastError !== null ? h("span", { class: "hint block" }, n.lastError) : null),
      n.head ?? UNKNOWN.cloneNode(true),
      n.confirmationLagSeconds === null ? "nothing waiting" : `${formatNumber(n.confirmationLagSeconds)} s (oldest unconfirmed batch)`,
      `${formatNumber(n.queued)} queued, ${formatNumber(n.unconfirmedBatches)} unconfirmed batch${n.unconfirmedBatches === 1 ? "" : "es"}`,
      formatDate(n.lastConfirmedAt),
      n.signer === null ?
        "— (Fabric identity)" :
        h("span", {}, h("code", {}, n.signer.address),
          h("span", { class: "block" }, n.signer.balanceWei !== null ? formatEth(n.signer.balanceWei) : `balance unknown: ${n.signer.error}`))
    ])))
}
