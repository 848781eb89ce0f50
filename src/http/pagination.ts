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
}

export const cursorCodec = (prefix: string, keyPattern: RegExp): CursorCodec => ({
  encode: (key) => Buffer.from(prefix + key, "utf8").toString("base64url"),
  decode: (cursor) => {
    if (cursor === undefined) return Effect.succeed(undefined)
    const text = Buffer.from(cursor, "base64url").toString("utf8")
    const key = text.startsWith(prefix) ? text.slice(prefix.length) : ""
    return keyPattern.test(key)
      ? Effect.succeed(key)
      : Effect.fail(badRequest("VALIDATION_ERROR", "cursor: not a cursor this API issued"))
  }
})
