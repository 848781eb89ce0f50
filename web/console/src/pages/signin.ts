/** Signing in: email and password, a one-time sign-in link, an invitation (choose a password). */
import { api, ApiError, type Session } from "../api.ts"
import { field, h, message } from "../dom.ts"

const errorText = (e: unknown) => e instanceof Error ? e.message : String(e)

export const signInPage = (notice: string | undefined, onSignedIn: (s: Session) => Promise<void>): Node => {
  const email = h("input", { type: "email", name: "email", autocomplete: "username", required: true, spellcheck: "false" })
  const password = h("input", { type: "password", name: "password", autocomplete: "current-password", required: true })
  const status = h("div", { class: "form-status" })
  const button = h("button", { type: "submit" }, "Sign in")
  const form = h("form", { class: "card narrow", novalidate: true }, field("Email", email), field("Password", password), status,
    h("div", { class: "actions" }, button))
  form.addEventListener("submit", async (e) => {
    e.preventDefault()
    if (email.value.trim() === "" || password.value === "") {
      status.replaceChildren(message("error", "Enter your email and password."))
      ;(email.value.trim() === "" ? email : password).focus()
      return
    }
    button.disabled = true
    status.replaceChildren(message("info", "Signing in…"))
    try {
      const session = await api.signIn(email.value, password.value)
      password.value = ""
      await onSignedIn(session)
    } catch (error) {
      password.value = ""
      status.replaceChildren(message("error", errorText(error)))
      if (error instanceof ApiError) form.dataset.errorCode = error.code
      password.focus()
    } finally {
      button.disabled = false
    }
  })
  return h("section", { class: "signin" }, h("h1", {}, "Sign in to the console"), notice !== undefined ? message("info", notice) : null, form,
    h("p", { class: "hint" }, "Members are invited by an admin of their account; operators by the node's operator (anchord users invite). " +
      "API keys do not sign in here."))
}

export const redeemLinkPage = async (token: string, onSignedIn: (s: Session) => Promise<void>): Promise<Node> => {
  try {
    const session = await api.redeemLink(token)
    // The token is used: keep it out of the history.
    history.replaceState(null, "", "#/")
    await onSignedIn(session)
    return h("section", {}, h("h1", {}, "Signed in"))
  } catch (e) {
    history.replaceState(null, "", "#/sign-in")
    return h("section", {}, h("h1", {}, "Sign-in link"), message("error", errorText(e)), h("p", {}, h("a", { href: "#/sign-in" }, "Sign in with a password")))
  }
}

export const acceptInvitationPage = async (token: string, onSignedIn: (s: Session) => Promise<void>): Promise<Node> => {
  let link
  try {
    link = await api.inspectInvitation(token)
  } catch (e) {
    return h("section", {}, h("h1", {}, "Invitation"), message("error", errorText(e)), h("p", {}, h("a", { href: "#/sign-in" }, "Sign in")))
  }
  const password = h("input", { type: "password", name: "new-password", autocomplete: "new-password", required: true, minlength: 10 })
  const again = h("input", { type: "password", name: "new-password-again", autocomplete: "new-password", required: true })
  const status = h("div", { class: "form-status" })
  const form = h("form", { class: "card narrow", novalidate: true }, h("p", {}, "Email: ", h("strong", {}, link.email)),
    field("Choose a password", password, "At least 10 characters. A passphrase of a few words is easy to type and hard to guess."),
    field("Password again", again), status, h("div", { class: "actions" }, h("button", { type: "submit" }, "Create my user and sign in")))
  form.addEventListener("submit", async (e) => {
    e.preventDefault()
    if (password.value !== again.value) {
      status.replaceChildren(message("error", "The two passwords differ."))
      again.focus()
      return
    }
    try {
      const session = await api.acceptInvitation(token, password.value)
      history.replaceState(null, "", "#/")
      await onSignedIn(session)
    } catch (error) {
      status.replaceChildren(message("error", errorText(error)))
      password.focus()
    }
  })
  const what = link.operator ? "an operator of this node" : `${link.role === "admin" ? "an admin" : "a viewer"} of ${link.accountName ?? link.accountId}`
  return h("section", { class: "signin" }, h("h1", {}, "Accept the invitation"),
    h("p", {}, `You are invited as ${what}. The invitation expires ${new Date(link.expiresAt).toUTCString()}.`), form)
}
