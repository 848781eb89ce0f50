/**
 * DOM helpers for the console. Everything shown comes through `h` (web/shared/dom.ts, shared with the
 * verify page) as text nodes or attributes: no HTML strings anywhere.
 */
import { type Child, h } from "../../shared/dom.ts"

export { h }

const SVG = "http://www.w3.org/2000/svg"
export const svg = (tag: string, attrs: Record<string, string | number> = {}, ...children: Array<Node | string>): SVGElement => {
  const e = document.createElementNS(SVG, tag)
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v))
  for (const c of children) e.append(c)
  return e
}

export const $ = <E extends HTMLElement = HTMLElement>(selector: string, root: ParentNode = document): E => {
  const e = root.querySelector(selector)
  if (e === null) throw new Error(`console: ${selector} is missing`)
  return e as E
}

let ids = 0
/** A unique id for label/control pairs. */
export const uid = (prefix: string) => `${prefix}-${++ids}`

/** A labelled control: `<label for>` + the control (+ a hint tied by aria-describedby). */
export const field = (label: string, control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, hint?: string) => {
  control.id ||= uid("f")
  const children: Array<Child> = [h("label", { for: control.id }, label), control]
  if (hint !== undefined) {
    const hintId = uid("hint")
    control.setAttribute("aria-describedby", hintId)
    children.push(h("p", { class: "hint", id: hintId }, hint))
  }
  return h("div", { class: "field" }, ...children)
}

export const select = (name: string, options: ReadonlyArray<readonly [string, string]>, value = "") =>
  h("select", { name }, ...options.map(([v, label]) => h("option", { value: v, selected: v === value }, label)))

export const formatDate = (iso: string | null | undefined) => {
  if (iso === null || iso === undefined) return "—"
  const d = new Date(iso)
  return `${d.toISOString().slice(0, 10)} ${d.toISOString().slice(11, 19)} UTC`
}

export const formatNumber = (n: number) => n.toLocaleString("en-US")

/** Wei as ETH with up to 6 decimals. */
export const formatEth = (wei: string) => {
  const v = BigInt(wei)
  const whole = v / 10n ** 18n
  const frac = (v % 10n ** 18n).toString().padStart(18, "0").slice(0, 6).replace(/0+$/, "")
  return `${whole.toString()}${frac ? `.${frac}` : ""} ETH`
}

/** A table whose rows turn into labelled cards on narrow screens (CSS reads data-label). */
export const table = (caption: string, headers: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<Child>>, options: { captionHidden?: boolean } = {}) =>
  h("div", { class: "table-wrap" },
    h("table", { class: "cards" }, h("caption", { class: options.captionHidden ? "visually-hidden" : undefined }, caption),
      h("thead", {}, h("tr", {}, ...headers.map((x) => h("th", { scope: "col" }, x)))), h("tbody", {}, ...rows.map((r) =>
        h("tr", {}, ...r.map((c, i) => h("td", { "data-label": headers[i] }, c)))
      ))))

/** A status shown as a word with a colour class (never colour alone). */
export const badge = (text: string, kind = text.toLowerCase()) => h("span", { class: `badge b-${kind.replace(/[^a-z0-9-]/g, "-")}` }, text)

/** Copies text; says so in `status` (a live region). */
export const copyButton = (text: () => string, label = "Copy") => {
  const status = h("span", { class: "copy-status", role: "status" })
  const button = h("button", {
    type: "button",
    class: "secondary",
    onclick: async () => {
      try {
        await navigator.clipboard.writeText(text())
        status.textContent = "Copied"
      } catch {
        status.textContent = "Copy failed: select the text and copy it"
      }
    }
  }, label)
  return h("span", { class: "copy" }, button, status)
}

/** A modal confirmation (a native <dialog>: focus trapped, Escape cancels). Resolves true when confirmed. */
export const confirmDialog = (title: string, text: string, confirmLabel: string): Promise<boolean> =>
  new Promise((resolve) => {
    const titleId = uid("dlg")
    const dialog = h("dialog", { "aria-labelledby": titleId, class: "confirm" },
      h("form", { method: "dialog" }, h("h2", { id: titleId }, title), h("p", {}, text),
        h("div", { class: "actions" }, h("button", { value: "cancel", class: "secondary", type: "submit" }, "Cancel"),
          h("button", { value: "confirm", class: "danger", type: "submit" }, confirmLabel))))
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "confirm")
      dialog.remove()
    })
    document.body.append(dialog)
    dialog.showModal()
  })

/** A message region: `role=alert` for errors, `role=status` otherwise. */
export const message = (kind: "error" | "ok" | "info", text: string) => h("p", { class: `msg msg-${kind}`, role: kind === "error" ? "alert" : "status" }, text)
