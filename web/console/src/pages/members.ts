/**
 * Members of the account; an admin invites (a one-time link, shown once), sees the invitations not yet
 * accepted (and revokes them), and removes members. An invitation dies with its maker's right to make it.
 */
import { api } from "../api.ts"
import type { PageContext } from "../context.ts"
import { confirmDialog, copyButton, field, formatDate, h, message, select, table } from "../dom.ts"

export const membersPage = async (ctx: PageContext): Promise<Node> => {
  const { members } = await api.members(ctx.accountId)
  const invitations = ctx.canChange ? (await api.invitations(ctx.accountId)).invitations : []
  const status = h("div", { class: "form-status" })
  /** A click handler: asks first, then acts and redraws the page, or says why it failed. */
  const confirmed = (title: string, text: string, label: string, act: () => Promise<unknown>) => async () => {
    if (!(await confirmDialog(title, text, label))) return
    try {
      await act()
      ctx.refresh()
    } catch (e) {
      status.replaceChildren(message("error", e instanceof Error ? e.message : String(e)))
    }
  }
  const emailOf = new Map(members.map((m) => [m.id, m.email]))
  const pending = ctx.canChange
    ? invitations.length === 0
      ? h("p", { id: "no-invitations" }, "No invitation waits to be accepted.")
      : table("Pending invitations", ["Email", "Role", "Invited by", "Valid until", ""], invitations.map((i) => [
        i.email,
        i.role,
        i.createdBy === null ? "an operator" : emailOf.get(i.createdBy) ?? "an operator",
        formatDate(i.expiresAt),
        h("button", {
          type: "button",
          class: "danger small",
          "aria-label": `Revoke the invitation of ${i.email}`,
          onclick: confirmed(`Revoke the invitation of ${i.email}?`, "Its link stops working at once.", "Revoke",
            () => api.revokeInvitation(ctx.accountId, i.id))
        }, "Revoke")
      ]))
    : null
  let invite: Node = message("info", "Only admins of this account can invite members.")
  if (ctx.canChange) {
    const email = h("input", { type: "email", name: "email", required: true, autocomplete: "off", spellcheck: "false" })
    const role = select("role", [["viewer", "Viewer: sees the account, changes nothing, no secrets"], ["admin", "Admin: manages keys, webhooks, members"]],
      "viewer")
    const result = h("div", {})
    const form = h("form", { class: "card", novalidate: true, "aria-labelledby": "invite-h" }, h("h2", { id: "invite-h" }, "Invite a member"),
      h("div", { class: "row" }, field("Email", email), field("Role", role)),
      h("div", { class: "actions" }, h("button", { type: "submit" }, "Create invitation link")), result)
    form.addEventListener("submit", async (e) => {
      e.preventDefault()
      try {
        const link = await api.invite(ctx.accountId, email.value.trim(), role.value)
        result.replaceChildren(
          h("div", { class: "once", role: "status" },
            h("p", {}, h("strong", {}, "Invitation link, shown once: "),
              `send it to ${email.value.trim()} yourself. It works once, until ${formatDate(link.expiresAt)}.`),
            h("p", {}, h("code", { class: "secret", id: "invitation-link" }, link.url), " ", copyButton(() => link.url)))
        )
      } catch (error) {
        result.replaceChildren(message("error", error instanceof Error ? error.message : String(error)))
      }
    })
    invite = form
  }
  return h("section", {}, h("h1", {}, "Members"), invite, status, pending, members.length === 0
    // Only an operator sees an account without members (a member sees themselves).
    ? h("p", { id: "no-members" }, "No member yet: nobody signs in to this account. Invite its first admin above.")
    : table("Members", ["Email", "Role", "Since", ""], members.map((m) => [
      m.email,
      m.role ?? "",
      formatDate(m.createdAt),
      ctx.canChange && m.id !== ctx.session.user.id
        ? h("button", {
          type: "button",
          class: "danger small",
          "aria-label": `Remove ${m.email}`,
          onclick: confirmed(`Remove ${m.email}?`, "Their sessions end and they can no longer sign in to this account.", "Remove",
            () => api.removeMember(ctx.accountId, m.id))
        }, "Remove")
        : ""
    ])))
}
