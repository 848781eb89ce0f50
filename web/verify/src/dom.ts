/** The verify page's elements, by id (web/verify/index.html). Elements are made with `h` (web/shared/dom.ts). */
export const $ = <E extends HTMLElement>(id: string): E => {
  const e = document.getElementById(id)
  if (e === null) throw new Error(`verify page: #${id} is missing`)
  return e as E
}
