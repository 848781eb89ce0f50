/**
 * RFC 8785 JSON Canonicalization Scheme (JCS) and the anchord record hash.
 *
 * canonicalize(value):
 * - objects: members sorted by the UTF-16 code units of their (unescaped) names, recursively;
 *   no whitespace anywhere;
 * - strings (values and names): serialized exactly as ECMAScript JSON.stringify does (RFC 8785
 *   §3.2.2.2): `\b \t \n \f \r \" \\` short escapes, other U+0000..U+001F as `\u00xx` (lowercase
 *   hex), everything else (including `/`, DEL, U+2028/U+2029, non-ASCII) written as is;
 * - numbers: ECMAScript Number.prototype.toString (RFC 8785 §3.2.2.3); -0 becomes `0`;
 * - literals: `null`, `true`, `false`.
 *
 * Accepted input is plain JSON data: null, booleans, finite numbers, well-formed strings, arrays,
 * and plain objects (prototype Object.prototype or null, from any realm). Everything else throws a
 * {@link JcsError}: NaN/±Infinity, undefined (also as an object member or array hole), functions,
 * bigint, symbols, non-plain objects (Date, Map, class instances, typed arrays, boxed primitives...),
 * strings containing lone surrogates (not representable in UTF-8 / I-JSON) and cyclic structures.
 * toJSON methods are never called.
 *
 * recordHash(data) = lowercase hex SHA-256 of the UTF-8 bytes of canonicalize(data).
 */
import { hash } from "node:crypto"
import { formatPathSegment } from "./strictJson.ts"

export type JcsErrorReason = "non_finite_number" | "unsupported_type" | "lone_surrogate" | "cycle"

export class JcsError extends Error {
  readonly reason: JcsErrorReason
  /** `$`-style path of the offending value, same format as StrictJsonError.path. */
  readonly path: string
  readonly detail: string

  constructor(reason: JcsErrorReason, detail: string, path: string) {
    super(`${detail} at ${path}`)
    this.name = "JcsError"
    this.reason = reason
    this.path = path
    this.detail = detail
  }
}

type WellFormedString = string & { isWellFormed(): boolean }

// Serializer state: ancestors[d] / segs[d] = container and member name/index being serialized at
// depth d (for cycle detection and error paths). Serialization is synchronous; the only user code
// that can run is a getter on an input object, and a nested canonicalize() call from one gets fresh
// arrays (see canonicalize()).
const OBJECT_PROTOTYPE: unknown = Object.prototype
let busy = false
let ancestors: object[] = []
let segs: Array<string | number> = []

/** RFC 8785 canonical JSON text of `value`. @throws JcsError */
export function canonicalize(value: unknown): string {
  const nested = busy
  const savedAncestors = ancestors
  const savedSegs = segs
  if (nested) {
    ancestors = []
    segs = []
  }
  busy = true
  try {
    return serialize(value, 0)
  } finally {
    if (nested) {
      ancestors = savedAncestors
      segs = savedSegs
    } else {
      busy = false
      ancestors.length = 0
      segs.length = 0
    }
  }
}

/**
 * canonicalize() for a value that parseStrictJson read from a text without a single backslash: its
 * strings then hold nothing JSON escapes (no quote, backslash, control character, lone surrogate),
 * its numbers are finite, its objects plain and acyclic. The checks and the escaping scan are
 * skipped; the output is the same (tested against canonicalize on random values).
 */
export function canonicalizeParsedPlain(value: unknown): string {
  switch (typeof value) {
    case "string":
      return "\"" + value + "\""
    case "number":
      return "" + value
    case "boolean":
      return value ? "true" : "false"
    default: {
      if (value === null) return "null"
      if (Array.isArray(value)) {
        let s = "["
        for (let i = 0; i < value.length; i++) s += (i > 0 ? "," : "") + canonicalizeParsedPlain(value[i])
        return s + "]"
      }
      const obj = value as Record<string, unknown>
      const keys = Object.keys(obj)
      sortByCodeUnits(keys)
      let s = "{"
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i]!
        s += (i > 0 ? ",\"" : "\"") + k + "\":" + canonicalizeParsedPlain(obj[k])
      }
      return s + "}"
    }
  }
}

/** Lowercase hex SHA-256 of the UTF-8 encoding of canonicalize(data). @throws JcsError */
export function recordHash(data: unknown): string {
  return hash("sha256", canonicalize(data), "hex")
}

/** `level` = number of enclosing containers. */
function serialize(v: unknown, level: number): string {
  switch (typeof v) {
    case "string":
      return quote(v, level)
    case "number":
      if (v !== v || v === Infinity || v === -Infinity) {
        return fail("non_finite_number", `${v} cannot be represented in JSON`, level)
      }
      // ECMAScript Number::toString, as RFC 8785 §3.2.2.3 specifies; -0 becomes "0".
      return "" + v
    case "boolean":
      return v ? "true" : "false"
    case "object":
      return v === null ? "null" : serializeContainer(v, level)
    default:
      return fail("unsupported_type", `${typeof v} is not a JSON value`, level)
  }
}

function serializeContainer(v: object, level: number): string {
  for (let i = 0; i < level; i++) {
    if (ancestors[i] === v) fail("cycle", "cyclic structure (value contains itself)", level)
  }
  ancestors[level] = v
  const inner = level + 1
  if (Array.isArray(v)) {
    const arr = v as unknown[]
    const n = arr.length
    let s = "["
    for (let i = 0; i < n; i++) {
      segs[level] = i
      const item = arr[i]
      if (item === undefined) {
        fail("unsupported_type", "undefined (or an array hole) is not a JSON value", inner)
      }
      if (i > 0) s += ","
      s += serialize(item, inner)
    }
    return s + "]"
  }
  const proto: unknown = Object.getPrototypeOf(v)
  // Plain object: prototype Object.prototype (of any realm, hence the second test) or null.
  if (proto !== OBJECT_PROTOTYPE && proto !== null && Object.getPrototypeOf(proto) !== null) {
    const name = (v as { constructor?: { name?: unknown } }).constructor?.name
    const what = typeof name === "string" && name !== "" ? ` (${name})` : ""
    fail("unsupported_type", `non-plain object${what} is not a JSON value`, level)
  }
  const obj = v as Record<string, unknown>
  const keys = Object.keys(obj)
  sortByCodeUnits(keys)
  let s = "{"
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!
    segs[level] = k
    const item = obj[k]
    if (item === undefined) fail("unsupported_type", "undefined is not a JSON value", inner)
    if (i > 0) s += ","
    s += quote(k, inner)
    s += ":"
    s += serialize(item, inner)
  }
  return s + "}"
}

/**
 * JSON.stringify(s) (RFC 8785 §3.2.2.2). Short strings (most names and values) are scanned here: if
 * nothing needs escaping they go out as is between quotes. Long ones go to the native JSON.stringify,
 * which is faster there; it escapes lone surrogates, making the result longer than the string plus
 * its quotes, so only then is the string examined. Lone surrogates are rejected (not valid I-JSON).
 */
function quote(s: string, level: number): string {
  const n = s.length
  if (n > 48) {
    const quoted = JSON.stringify(s)
    if (quoted.length !== n + 2) checkWellFormed(s, level)
    return quoted
  }
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) {
      checkWellFormed(s, level)
      return JSON.stringify(s)
    }
  }
  return "\"" + s + "\""
}

function checkWellFormed(s: string, level: number): void {
  if (!(s as WellFormedString).isWellFormed()) {
    fail("lone_surrogate", "string contains an unpaired UTF-16 surrogate (not valid Unicode)", level)
  }
}

/**
 * Sorts member names by UTF-16 code units (RFC 8785 §3.2.3): JS `<` on strings compares code
 * units. Insertion sort: objects have few members, and it beats Array.prototype.sort there.
 */
function sortByCodeUnits(keys: string[]): void {
  const n = keys.length
  if (n > 16) {
    keys.sort() // default sort also compares by UTF-16 code units
    return
  }
  for (let i = 1; i < n; i++) {
    const k = keys[i]!
    let j = i - 1
    while (j >= 0 && keys[j]! > k) {
      keys[j + 1] = keys[j]!
      j--
    }
    keys[j + 1] = k
  }
}

function fail(reason: JcsErrorReason, detail: string, level: number): never {
  let path = "$"
  for (let i = 0; i < level; i++) path += formatPathSegment(segs[i]!)
  throw new JcsError(reason, detail, path)
}
