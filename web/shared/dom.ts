/**
 * DOM helpers shared by the console and the verify page (each bundle imports them, web/build.ts).
 * Everything shown comes through `h` as text nodes or attributes: no HTML strings anywhere (both
 * pages' CSP forbids inline code anyway; this keeps data from becoming markup).
 */

export type Child = Node | string | number | null | undefined | false
type Attrs = Record<string, string | number | boolean | undefined | null | ((e: Event) => void)>

/** An element: `on<event>` attributes take listeners; `true` sets a boolean attribute; strings are text. */
export const h = <K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {},
  ...children: Array<Child | ReadonlyArray<Child>>): HTMLElementTagNameMap[K] =>
{
  const e = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue
    if (typeof v === "function") e.addEventListener(k.slice(2).toLowerCase(), v as EventListener)
    else if (v === true) e.setAttribute(k, "")
    else e.setAttribute(k, String(v))
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) e.append(typeof c === "number" ? String(c) : c)
  return e
}
