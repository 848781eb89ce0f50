/**
 * Opaque list cursors: base64url of the last item's key, checked against the key's shape on the
 * way back in, so a cursor this API did not issue is a 400 naming the cursor.
 */

export interface CursorCodec {
  readonly encode: (key: string) => string
  /** The key after which the next page starts (undefined for the first page), or the message naming the cursor. */
  readonly parse: (cursor: string | undefined) => { readonly ok: true; readonly key: string | undefined } | { readonly ok: false; readonly message: string }
}

const cursorCodec = (prefix: string, keyPattern: RegExp): CursorCodec => {
  const parse = (cursor: string | undefined) => {
    if (cursor === undefined) return { ok: true as const, key: undefined }
    const text = Buffer.from(cursor, "base64url").toString("utf8")
    const key = text.startsWith(prefix) ? text.slice(prefix.length) : ""
    return keyPattern.test(key) ? { ok: true as const, key } : { ok: false as const, message: "cursor: not a cursor this API issued" }
  }
  return {
    encode: (key) => Buffer.from(prefix + key, "utf8").toString("base64url"),
    parse
  }
}

/** Record lists (`/v1/records`, the console's): the last record id (24 hex). */
export const recordCursors = cursorCodec("", /^[0-9a-f]{24}$/)

/** Delivery lists (`/v1/webhooks/deliveries`, the console's): the last delivery's sequence number. */
export const deliveryCursors = cursorCodec("d:", /^\d{1,19}$/)

/** Batch request lists (`/v1/webhooks/requests`, the console's): the last request's sequence number. */
export const requestCursors = cursorCodec("r:", /^\d{1,19}$/)

/**
 * A page of a list read with one row more than the page holds (`limit + 1`): the page, and the cursor
 * of the next one when that extra row was there.
 */
export const pageOf = <A>(rows: ReadonlyArray<A>, limit: number, codec: CursorCodec, keyOf: (a: A) => string) => {
  const page = rows.slice(0, limit)
  return { page, nextCursor: rows.length > limit ? codec.encode(keyOf(page[page.length - 1])) : null }
}
