/**
 * The anchord console (SPEC 9), served by the node at `/console`: a page of its own script and style
 * (no inline code: the CSP allows none), talking only to this node's `/console/api`. Routes live in the
 * URL's fragment, so every page has a link and the back button works; one-time tokens (invitations,
 * sign-in links) travel there too and never reach a server log.
 *
 * Accessible by keyboard (native controls in document order, a skip link, the page heading takes the
 * focus on navigation, dialogs are native <dialog>s) and usable at 360 px (tables become labelled cards).
 */
import { api, ApiError, type Config, type Environment, type Session, setCsrfToken, whenSignedOut } from "./api.ts"
import { accountHash, type Page, type PageContext } from "./context.ts"
import { $, h, message, select } from "./dom.ts"
import { accountsPage, networksPage } from "./pages/operators.ts"
import { deliveriesPage } from "./pages/deliveries.ts"
import { requestsPage } from "./pages/requests.ts"
import { keysPage } from "./pages/keys.ts"
import { membersPage } from "./pages/members.ts"
import { overviewPage } from "./pages/overview.ts"
import { recordPage, recordsPage } from "./pages/records.ts"
import { acceptInvitationPage, redeemLinkPage, signInPage } from "./pages/signin.ts"
import { webhooksPage } from "./pages/webhooks.ts"

/** An account's pages; `inNav: false` ones are reached from another page (the header stays one line at 1280 px). */
const ACCOUNT_PAGES: Record<string, { readonly title: string; readonly page: Page; readonly inNav?: false }> = {
  overview: { title: "Overview", page: overviewPage },
  records: { title: "Records", page: recordsPage },
  deliveries: { title: "Deliveries", page: deliveriesPage },
  requests: { title: "Requests", page: requestsPage, inNav: false },
  webhooks: { title: "Webhooks", page: webhooksPage },
  keys: { title: "API keys", page: keysPage },
  members: { title: "Members", page: membersPage }
}

let session: Session | undefined
let config: Config | undefined
/** Shown on the sign-in page once (why the user is there: signed out, session expired). */
let signInNotice: string | undefined
/** Where to go back after signing in. */
let returnTo: string | undefined

const ENV_KEY = "anchord.console.environment"
const environment = (): Environment => (localStorage.getItem(ENV_KEY) === "live" ? "live" : "test")
const setEnvironment = (value: Environment) => {
  localStorage.setItem(ENV_KEY, value)
  void render()
}

const navigate = (hash: string) => {
  if (location.hash === hash) void render()
  else location.hash = hash
}

const signedIn = async (s: Session) => {
  session = s
  setCsrfToken(s.csrfToken)
  config = await api.config()
}

whenSignedOut((text) => {
  session = undefined
  setCsrfToken("")
  signInNotice = text
  if (!location.hash.startsWith("#/sign-in")) returnTo = location.hash
  navigate("#/sign-in")
})

const parse = () => {
  const raw = location.hash.replace(/^#/, "") || "/"
  const [path, query = ""] = raw.split("?", 2) as [string, string?]
  return { segments: path.split("/").filter((s) => s !== "").map(decodeURIComponent), query: new URLSearchParams(query) }
}

const main = () => $("#main")

const showPage = (title: string, content: Node) => {
  document.title = `${title} · anchord console`
  main().replaceChildren(content)
  // Keyboard and screen-reader users land on the new page's heading.
  const heading = main().querySelector("h1")
  if (heading !== null) {
    heading.setAttribute("tabindex", "-1")
    heading.focus()
  }
}

const showHeader = (current: { accountId?: string; page?: string }) => {
  const s = session!
  const nav = h("ul", { class: "nav" })
  const item = (href: string, label: string, active: boolean) => nav.append(h("li", {}, h("a", { href, "aria-current": active ? "page" : undefined }, label)))
  if (current.accountId !== undefined) {
    for (const [page, { inNav, title }] of Object.entries(ACCOUNT_PAGES)) {
      if (inNav !== false) item(accountHash(current.accountId, page), title, current.page === page)
    }
  }
  if (s.user.operator) {
    item("#/accounts", "Accounts", current.page === "accounts")
    item("#/networks", "Networks", current.page === "networks")
  }
  const env = select("environment", [["test", "Test"], ["live", "Live"]], environment())
  env.id = "environment"
  env.addEventListener("change", () => setEnvironment(env.value === "live" ? "live" : "test"))
  const signOut = h("button", {
    type: "button",
    class: "link",
    onclick: async () => {
      await api.signOut().catch(() => undefined)
      session = undefined
      signInNotice = "You are signed out."
      navigate("#/sign-in")
    }
  }, "Sign out")
  const everywhere = h("button", {
    type: "button",
    class: "link",
    onclick: async () => {
      const r = await api.signOutEverywhere().catch(() => undefined)
      session = undefined
      signInNotice = `You are signed out everywhere${r ? ` (${r.sessionsEnded} session${r.sessionsEnded === 1 ? "" : "s"} ended)` : ""}.`
      navigate("#/sign-in")
    }
  }, "Sign out everywhere")
  const who = s.user.operator ? "operator" : `${s.user.role} of ${s.user.accountName ?? s.user.accountId}`
  $("#top").replaceChildren(
    h("a", { class: "brand", href: "#/" }, "anchord console"),
    h("nav", { "aria-label": "Sections" }, nav),
    h("div", { class: "who" },
      current.accountId !== undefined ? h("span", { class: "field inline" }, h("label", { for: "environment" }, "Environment"), env) : null, // Cut with an ellipsis on wide screens (one header line): the whole text is its title.
      h("span", { class: "user", title: `${s.user.email} (${who})` }, `${s.user.email} (${who})`), signOut, everywhere)
  )
}

const clearHeader = () => $("#top").replaceChildren(h("span", { class: "brand" }, "anchord console"))

/** Renders started so far: a render that finishes after a newer one started (a slow page, a quick
 * click elsewhere) must not replace the newer page. */
let renders = 0

const render = async () => {
  const mine = ++renders
  const current = () => mine === renders
  const show = (title: string, content: Node) => {
    if (current()) showPage(title, content)
  }
  const header = (at: { accountId?: string; page?: string }) => {
    if (current()) showHeader(at)
  }
  const clearTop = () => {
    if (current()) clearHeader()
  }
  const { segments, query } = parse()
  const [first, ...rest] = segments
  // Pages without a session.
  if (first === "link" && rest[0] !== undefined) {
    clearTop()
    return show("Signing in", await redeemLinkPage(rest[0], async (s) => {
      await signedIn(s)
      navigate("#/")
    }))
  }
  if (first === "invite" && rest[0] !== undefined) {
    clearTop()
    return show("Accept the invitation", await acceptInvitationPage(rest[0], async (s) => {
      await signedIn(s)
      navigate("#/")
    }))
  }
  if (session === undefined && first !== "sign-in") {
    try {
      await signedIn(await api.session())
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 401) {
        clearTop()
        return show("Console", h("section", {}, h("h1", {}, "Console"), message("error", e instanceof Error ? e.message : String(e))))
      }
      if (first !== undefined) returnTo = location.hash
      navigate("#/sign-in")
      return
    }
  }
  if (first === "sign-in" || session === undefined) {
    clearTop()
    const notice = signInNotice
    signInNotice = undefined
    return show("Sign in", signInPage(notice, async (s) => {
      await signedIn(s)
      const back = returnTo
      returnTo = undefined
      navigate(back !== undefined && back !== "#/sign-in" ? back : "#/")
    }))
  }
  const s = session
  const cfg = config!
  if (first === undefined) return navigate(s.user.operator ? "#/accounts" : accountHash(s.user.accountId!, "overview"))
  const base = { session: s, config: cfg, environment: environment(), setEnvironment, query, navigate, refresh: () => void render() }
  try {
    if (first === "accounts" || first === "networks") {
      header({ page: first })
      const ctx: PageContext = { ...base, accountId: "", rest, canChange: s.user.operator }
      return show(first === "accounts" ? "Accounts" : "Networks", await (first === "accounts" ? accountsPage : networksPage)(ctx))
    }
    if (first === "a" && rest[0] !== undefined) {
      const [accountId, pageName = "overview", ...more] = rest
      const entry = pageName === "records" && more[0] !== undefined ? { title: "Record", page: recordPage } : ACCOUNT_PAGES[pageName]
      header({ accountId, page: pageName })
      if (entry === undefined) return show("Not found", h("section", {}, h("h1", {}, "Not found"), message("error", `No page ${pageName}`)))
      // A suspended account's members read; the node refuses their changes (403 ACCOUNT_SUSPENDED).
      const readOnly = !s.user.operator && s.readOnly
      const canChange = !readOnly && (s.user.operator || (s.user.accountId === accountId && s.user.role === "admin"))
      const content = await entry.page({ ...base, accountId, rest: more, canChange })
      return show(entry.title, readOnly
        ? h("div", {}, message("info", "This account is suspended: the console shows everything and changes nothing until an operator activates it again."),
          content)
        : content)
    }
    return show("Not found", h("section", {}, h("h1", {}, "Not found"), h("p", {}, h("a", { href: "#/" }, "Back to the console"))))
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return // already on the way to the sign-in page
    return show("Error", h("section", {}, h("h1", {}, "Something went wrong"), message("error", e instanceof Error ? e.message : String(e))))
  }
}

// The skip link moves the focus to the content; following its "#main" would be a route here.
$<HTMLAnchorElement>("a.skip").addEventListener("click", (e) => {
  e.preventDefault()
  main().focus()
})

window.addEventListener("hashchange", () => void render())
void render()
