/**
 * Opaque list cursors: base64url of the last item's key, checked against the key's shape on the
 * way back in, so a cursor this API did not issue is a 400 naming the cursor.
 */
import { Effect } from "effect"
import { badRequest, type BadRequest } from "../api/errors.ts"

export interface CursorCodec {
  readonly encode: (key: string) => string
  /** The key after which the next page starts; undefined for the first page. */
  readonly decode: (cursor: string | undefined) => Effect.Effect<string | undefined, BadRequest>
  /** `decode` as a result: the key, or the message naming the cursor. */
  readonly parse: (cursor: string | undefined) => { readonly ok: true; readonly key: string | undefined } | { readonly ok: false; readonly message: string }
}

export const cursorCodec = (prefix: string, keyPattern: RegExp): CursorCodec => {
  const parse = (cursor: string | undefined) => {
    if (cursor === undefined) return { ok: true as const, key: undefined }
    const text = Buffer.from(cursor, "base64url").toString("utf8")
    const key = text.startsWith(prefix) ? text.slice(prefix.length) : ""
    return keyPattern.test(key) ? { ok: true as const, key } : { ok: false as const, message: "cursor: not a cursor this API issued" }
  }
  return {
    encode: (key) => Buffer.from(prefix + key, "utf8").toString("base64url"),
    parse,
    decode: (cursor) => {
      const parsed = parse(cursor)
      return parsed.ok ? Effect.succeed(parsed.key) : Effect.fail(badRequest("VALIDATION_ERROR", parsed.message))
    }
  }
}
