/** SPEC 3.2: an `IN_PLACE` record's lookup returns its data with the proof bundle embedded as `_anchor`. */

/**
 * The data of an anchored `IN_PLACE` record with `_anchor` (the proof bundle) added, as one
 * self-verifying document that `anchord verify` accepts as is; any other record's data unchanged.
 * `_anchor` is not part of the hashed data (the hash covers the data as submitted).
 */
export const embedAnchor = <V extends { readonly packageMode: string; readonly status: string; readonly data: unknown }>(
  view: V,
  bundle: () => unknown
): V => {
  const data = view.data
  if (view.packageMode !== "IN_PLACE" || view.status !== "ANCHORED") return view
  if (typeof data !== "object" || data === null || Array.isArray(data)) return view
  return { ...view, data: { ...data, _anchor: bundle() } }
}
