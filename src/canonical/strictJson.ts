/**
 * Strict, dependency-free JSON parser for record ingestion.
 *
 * Grammar: RFC 8259 exactly (no comments, no trailing commas, no leading zeros, no NaN/Infinity,
 * whitespace = space / tab / CR / LF only, raw control characters U+0000..U+001F rejected inside
 * strings, a single top-level value of any type). On top of the grammar it enforces the I-JSON
 * (RFC 7493) constraints that RFC 8785 (JCS) hashing relies on, throwing {@link StrictJsonError}:
 *
 * - `duplicate_key`: two members of one object with the same name *after unescaping*
 *   (`{"a":1,"\u0061":2}` is a duplicate).
 * - `lone_surrogate`: an unpaired UTF-16 surrogate inside a string, either raw in the text or as
 *   an escape (`"\ud800"`, `"\udc00"`). A high surrogate must be immediately followed by a low
 *   surrogate written the same way (raw+raw or escape+escape); mixed pairs are rejected.
 * - `non_finite_number`: a number literal that overflows to ±Infinity (`1e400`).
 * - `unsafe_integer`:
 *   1. an integer literal (no fraction, no exponent) whose magnitude exceeds
 *      Number.MAX_SAFE_INTEGER (2^53 - 1), e.g. `9007199254740992`, `9007199254740993`;
 *   2. any number, in any notation, whose IEEE-754 value lies in the band
 *      (Number.MAX_SAFE_INTEGER, 1e21), e.g. `1e20`, `9007199254740993.0`, `9.007199254740993e15`.
 *      Every double in that band is an integer, and JCS would print it as a bare integer literal
 *      that this parser (rule 1) and other I-JSON parsers treat as unsafe; rejecting it keeps the
 *      canonical form of every accepted document re-parseable and stops exact-integer intents
 *      (`…993.0`) from being rounded silently.
 *   Numbers with a fraction or exponent whose magnitude is >= 1e21 (`1E30`, `1.5e300`) are accepted
 *   as ordinary doubles: JCS prints them in exponent form (`1e+30`, `1.5e+300`), so they are
 *   unambiguously floating point. Fractions are rounded to the nearest double as RFC 8785 requires
 *   (`0.1000000000000000000001` -> 0.1, `1e-400` -> 0).
 * - `too_deep`: more than `maxDepth` nested objects/arrays (default 64; the top-level object or
 *   array is depth 1, so exactly 64 nested levels are accepted).
 *
 * `-0` is accepted and parsed as -0 (like JSON.parse); JCS serializes it as `0`. (RFC 8785 erratum
 * 7920 suggests parsers SHOULD reject -0; we deliberately do not, see docs/canonicalization.md.)
 *
 * Objects are ordinary objects (prototype Object.prototype, like JSON.parse's); a member named
 * `__proto__` becomes an own, enumerable data property (never the prototype), so JSON.stringify and
 * canonicalize() see it.
 *
 * Error paths use a JSONPath-like format: `$` is the top-level value, `.name` a member whose name is
 * an identifier (`[A-Za-z_$][A-Za-z0-9_$]*`), `["na.me"]` any other member name (JSON-quoted), `[3]`
 * an array index. `position` is the offset in UTF-16 code units (JS string index) of the offending
 * character in the text.
 */

import { EXCERPT_MAX, excerpt, quoted } from "../excerpt.ts"

export type StrictJsonReason =
  | "syntax"
  | "duplicate_key"
  | "lone_surrogate"
  | "non_finite_number"
  | "unsafe_integer"
  | "too_deep"

export class StrictJsonError extends Error {
  /** Machine-readable category of the rejection. */
  readonly reason: StrictJsonReason
  /** JSONPath-like location of the offending value or member (`$`, `$.a.b[3]`, `$["x y"]`). */
  readonly path: string
  /** Offset, in UTF-16 code units, of the offending character in the input text. */
  readonly position: number
  /** The message without the location suffix. */
  readonly detail: string

  constructor(reason: StrictJsonReason, detail: string, path: string, position: number) {
    super(`${detail} at ${path} (position ${position})`)
    this.name = "StrictJsonError"
    this.reason = reason
    this.path = path
    this.position = position
    this.detail = detail
  }
}

export interface StrictJsonOptions {
  /** Maximum nesting of objects/arrays; the top-level container is depth 1. Default 64. */
  readonly maxDepth?: number
  /** false: never take the native fast path (differential tests compare both). Default true. */
  readonly native?: boolean
}

export const DEFAULT_MAX_DEPTH = 64

const MAX_SAFE = Number.MAX_SAFE_INTEGER
const EXPONENT_FORM_MIN = 1e21

// Parser state. The parser is synchronous and never calls user code, so module-level state is
// safe and is cheaper than threading a context object through every call.
let src = ""
let pos = 0
let depth = 0
let maxDepth = DEFAULT_MAX_DEPTH
// segs[d] = member name / index currently being parsed inside the container at depth d
// (undefined when no member is active). Only read when building an error path.
const segs: Array<string | number | undefined> = []

/**
 * Parse `text` as strict JSON (RFC 8259 + I-JSON constraints, see module comment).
 * @throws StrictJsonError on any violation.
 */
export function parseStrictJson(text: string, options?: StrictJsonOptions): unknown {
  if (typeof text !== "string") throw new TypeError("parseStrictJson expects a string")
  const limit = options?.maxDepth ?? DEFAULT_MAX_DEPTH
  if (!Number.isInteger(limit) || limit < 0) {
    throw new RangeError(`maxDepth must be a non-negative integer, got ${String(limit)}`)
  }
  if (options?.native !== false && text.indexOf("\\") === -1) {
    const value = parseNative(text, limit)
    if (value !== SLOW) return value
  }
  src = text
  pos = 0
  depth = 0
  maxDepth = limit
  try {
    skipWs()
    const value = parseValue()
    skipWs()
    if (pos < src.length) fail("syntax", `unexpected ${describeAt(pos)} after the top-level value`, pos)
    return value
  } finally {
    src = ""
    segs.fill(undefined) // do not retain (slices of) the last document
  }
}

// ---------------------------------------------------------------------------------------------
// Fast path. Without a single backslash in the text (no escapes: the common case for records),
// V8's native JSON.parse reads exactly the RFC 8259 grammar above, and the I-JSON checks it does not
// make are cheap to make afterwards: member names are counted in the text (with no escapes a string
// ends at the next quote) and in the parsed objects, so a duplicate shows as a difference; numbers
// and depth are checked on the parsed value. Anything doubtful (a syntax error, a duplicate, a
// number beyond ±2^53, too deep, a raw lone surrogate) goes to the strict parser, which decides and
// explains. Escaped member names never take this path (V8 can mis-read them: nodejs/node#63785).

const SLOW: unique symbol = Symbol("slow")
let namesSeen = 0

function parseNative(text: string, limit: number): unknown {
  if (!(text as string & { isWellFormed(): boolean }).isWellFormed()) return SLOW
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return SLOW
  }
  let names = 0
  let i = text.indexOf("\"")
  while (i !== -1) {
    let j = text.indexOf("\"", i + 1) + 1
    let c = text.charCodeAt(j)
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = text.charCodeAt(++j)
    if (c === 0x3a) names++
    i = text.indexOf("\"", j)
  }
  namesSeen = 0
  if (!checkNative(value, 0, limit) || namesSeen !== names) return SLOW
  return value
}

/** Numbers within ±MAX_SAFE_INTEGER, containers at most `limit` deep; counts member names. */
function checkNative(v: unknown, level: number, limit: number): boolean {
  if (typeof v === "number") return v <= MAX_SAFE && v >= -MAX_SAFE
  if (typeof v !== "object" || v === null) return true
  if (level >= limit) return false
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!checkNative(v[i], level + 1, limit)) return false
    return true
  }
  const obj = v as Record<string, unknown>
  const keys = Object.keys(obj)
  namesSeen += keys.length
  for (let i = 0; i < keys.length; i++) if (!checkNative(obj[keys[i]!], level + 1, limit)) return false
  return true
}

function skipWs(): void {
  let c = src.charCodeAt(pos)
  // charCodeAt past the end is NaN, which fails every comparison.
  while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = src.charCodeAt(++pos)
}

function parseValue(): unknown {
  const c = src.charCodeAt(pos)
  switch (c) {
    case 0x22: // "
      return parseString(false)
    case 0x7b: // {
      return parseObject()
    case 0x5b: // [
      return parseArray()
    case 0x74: // t
      expectWord("true")
      return true
    case 0x66: // f
      expectWord("false")
      return false
    case 0x6e: // n
      expectWord("null")
      return null
    default:
      if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return parseNumber()
      return failUnexpectedValue()
  }
}

function failUnexpectedValue(): never {
  const c = src.charCodeAt(pos)
  if (c === 0x4e && src.startsWith("NaN", pos)) fail("syntax", "NaN is not valid JSON", pos)
  if (c === 0x49 && src.startsWith("Infinity", pos)) fail("syntax", "Infinity is not valid JSON", pos)
  if (c === 0x2b) fail("syntax", "a number must not start with '+'", pos)
  if (c === 0x2e) fail("syntax", "a number must start with a digit, not '.'", pos)
  if (c === 0x2f) fail("syntax", "comments are not allowed in JSON", pos)
  if (c === 0x27) fail("syntax", "strings must use double quotes", pos)
  fail("syntax", `unexpected ${describeAt(pos)}, expected a JSON value`, pos)
}

function expectWord(word: string): void {
  if (!src.startsWith(word, pos)) fail("syntax", `invalid literal, expected ${word}`, pos)
  pos += word.length
}

function parseObject(): Record<string, unknown> {
  const open = pos
  if (depth >= maxDepth) {
    fail("too_deep", `nesting deeper than the maximum depth of ${maxDepth} (object)`, open)
  }
  const d = ++depth
  segs[d] = undefined
  pos++
  const obj: Record<string, unknown> = {}
  skipWs()
  if (src.charCodeAt(pos) === 0x7d) {
    pos++
    depth--
    return obj
  }
  for (;;) {
    if (src.charCodeAt(pos) !== 0x22) {
      segs[d] = undefined
      if (src.charCodeAt(pos) === 0x7d) fail("syntax", "trailing comma before '}'", pos)
      fail("syntax", `unexpected ${describeAt(pos)}, expected a double-quoted member name`, pos)
    }
    const keyPos = pos
    const key = parseString(true)
    segs[d] = key
    skipWs()
    if (src.charCodeAt(pos) !== 0x3a) {
      fail("syntax", `unexpected ${describeAt(pos)}, expected ':' after member name`, pos)
    }
    pos++
    skipWs()
    if (key === "__proto__") {
      // Assigning obj["__proto__"] would call the Object.prototype setter: define instead.
      if (Object.hasOwn(obj, key)) failDuplicate(key, keyPos)
      Object.defineProperty(obj, key, {
        value: parseValue(),
        writable: true,
        enumerable: true,
        configurable: true
      })
    } else {
      // JSON values are never undefined, so an own member always reads as !== undefined;
      // inherited names (toString, constructor...) are told apart by the hasOwn check.
      if (obj[key] !== undefined && Object.hasOwn(obj, key)) failDuplicate(key, keyPos)
      obj[key] = parseValue()
    }
    skipWs()
    const c = src.charCodeAt(pos)
    if (c === 0x2c) {
      pos++
      skipWs()
      continue
    }
    if (c === 0x7d) {
      pos++
      depth--
      return obj
    }
    segs[d] = undefined
    fail("syntax", `unexpected ${describeAt(pos)}, expected ',' or '}' in object`, pos)
  }
}

function failDuplicate(key: string, keyPos: number): never {
  fail("duplicate_key", `duplicate object member name ${quoted(key)}`, keyPos)
}

function parseArray(): unknown[] {
  const open = pos
  if (depth >= maxDepth) {
    fail("too_deep", `nesting deeper than the maximum depth of ${maxDepth} (array)`, open)
  }
  const d = ++depth
  segs[d] = undefined
  pos++
  const arr: unknown[] = []
  skipWs()
  if (src.charCodeAt(pos) === 0x5d) {
    pos++
    depth--
    return arr
  }
  for (let i = 0;; i++) {
    segs[d] = i
    if (src.charCodeAt(pos) === 0x5d && i > 0) fail("syntax", "trailing comma before ']'", pos)
    arr.push(parseValue())
    skipWs()
    const c = src.charCodeAt(pos)
    if (c === 0x2c) {
      pos++
      skipWs()
      continue
    }
    if (c === 0x5d) {
      pos++
      depth--
      return arr
    }
    segs[d] = undefined
    fail("syntax", `unexpected ${describeAt(pos)}, expected ',' or ']' in array`, pos)
  }
}

/** pos is at the opening quote. Fast path: no escapes, no surrogates -> one slice. */
function parseString(isKey: boolean): string {
  const start = ++pos
  for (;;) {
    const c = src.charCodeAt(pos)
    if (c >= 0x20 && c !== 0x22 && c !== 0x5c && c < 0xd800) {
      pos++
      continue
    }
    if (c === 0x22) {
      const s = src.slice(start, pos)
      pos++
      return s
    }
    return parseStringSlow(start, isKey)
  }
}

/** Continues a string from pos (start = first content char) handling escapes and surrogates. */
function parseStringSlow(start: number, isKey: boolean): string {
  let out = ""
  let chunk = start
  for (;;) {
    const c = src.charCodeAt(pos)
    if (c >= 0x20 && c !== 0x22 && c !== 0x5c && c < 0xd800) {
      pos++
      continue
    }
    if (c === 0x22) {
      out += src.slice(chunk, pos)
      pos++
      return out
    }
    if (c === 0x5c) {
      out += src.slice(chunk, pos)
      out += parseEscape(isKey)
      chunk = pos
      continue
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      if (c <= 0xdbff) {
        const next = src.charCodeAt(pos + 1)
        if (next >= 0xdc00 && next <= 0xdfff) {
          pos += 2
          continue
        }
        failString(isKey, "lone_surrogate", `unpaired high surrogate U+${hex4(c)} in string`, pos)
      }
      failString(isKey, "lone_surrogate", `unpaired low surrogate U+${hex4(c)} in string`, pos)
    }
    if (c >= 0xe000) {
      pos++
      continue
    }
    if (c !== c) failString(isKey, "syntax", "unterminated string (end of input)", start - 1)
    failString(
      isKey,
      "syntax",
      `unescaped control character U+${hex4(c)} in string (must be written as an escape)`,
      pos
    )
  }
}

/** pos at the backslash; returns the decoded text (1 or 2 code units) and advances pos. */
function parseEscape(isKey: boolean): string {
  const at = pos
  const e = src.charCodeAt(pos + 1)
  pos += 2
  switch (e) {
    case 0x22:
      return "\""
    case 0x5c:
      return "\\"
    case 0x2f:
      return "/"
    case 0x62:
      return "\b"
    case 0x66:
      return "\f"
    case 0x6e:
      return "\n"
    case 0x72:
      return "\r"
    case 0x74:
      return "\t"
    case 0x75: {
      const u = readHex4(at + 2, isKey)
      pos = at + 6
      if (u < 0xd800 || u > 0xdfff) return String.fromCharCode(u)
      if (u >= 0xdc00) {
        failString(isKey, "lone_surrogate", `unpaired low surrogate escape \\u${hex4(u)} in string`, at)
      }
      // High surrogate: must be followed immediately by a \uDC00-\uDFFF escape.
      if (src.charCodeAt(pos) === 0x5c && src.charCodeAt(pos + 1) === 0x75) {
        const lo = readHex4(pos + 2, isKey)
        if (lo >= 0xdc00 && lo <= 0xdfff) {
          pos += 6
          return String.fromCharCode(u, lo)
        }
      }
      return failString(
        isKey,
        "lone_surrogate",
        `unpaired high surrogate escape \\u${hex4(u)} in string (not followed by a low surrogate escape)`,
        at
      )
    }
    default:
      if (e !== e) return failString(isKey, "syntax", "unterminated string (end of input)", at)
      return failString(isKey, "syntax", `invalid escape sequence \\${describeChar(e)}`, at)
  }
}

function readHex4(at: number, isKey: boolean): number {
  let v = 0
  for (let i = 0; i < 4; i++) {
    const c = src.charCodeAt(at + i)
    let h: number
    if (c >= 0x30 && c <= 0x39) h = c - 0x30
    else if (c >= 0x61 && c <= 0x66) h = c - 0x57
    else if (c >= 0x41 && c <= 0x46) h = c - 0x37
    else return failString(isKey, "syntax", "invalid \\u escape (expected 4 hex digits)", at - 2)
    v = (v << 4) | h
  }
  return v
}

function parseNumber(): number {
  const start = pos
  let c = src.charCodeAt(pos)
  let neg = false
  if (c === 0x2d) {
    neg = true
    c = src.charCodeAt(++pos)
  }
  let intVal = 0
  if (c === 0x30) {
    c = src.charCodeAt(++pos)
    if (c >= 0x30 && c <= 0x39) fail("syntax", "leading zeros are not allowed in numbers", start)
  } else if (c >= 0x31 && c <= 0x39) {
    do {
      intVal = intVal * 10 + (c - 0x30)
      c = src.charCodeAt(++pos)
    } while (c >= 0x30 && c <= 0x39)
  } else {
    fail("syntax", `unexpected ${describeAt(pos)}, expected a digit after '-'`, pos)
  }
  const intEnd = pos
  let plainInteger = true
  if (c === 0x2e) {
    plainInteger = false
    c = src.charCodeAt(++pos)
    if (!(c >= 0x30 && c <= 0x39)) {
      fail("syntax", `unexpected ${describeAt(pos)}, expected a digit after '.'`, pos)
    }
    do c = src.charCodeAt(++pos)
    while (c >= 0x30 && c <= 0x39)
  }
  if (c === 0x65 || c === 0x45) {
    plainInteger = false
    c = src.charCodeAt(++pos)
    if (c === 0x2b || c === 0x2d) c = src.charCodeAt(++pos)
    if (!(c >= 0x30 && c <= 0x39)) {
      fail("syntax", `unexpected ${describeAt(pos)}, expected a digit in the exponent`, pos)
    }
    do c = src.charCodeAt(++pos)
    while (c >= 0x30 && c <= 0x39)
  }
  if (plainInteger) {
    // Up to 15 digits the accumulated value is exact and safe.
    if (intEnd - start - (neg ? 1 : 0) <= 15) return neg ? -intVal : intVal
    const v = Number(src.slice(start, pos))
    // Every integer <= 2^53 is a double, so the rounded value is safe iff the literal is.
    if (!Number.isSafeInteger(v)) {
      fail(
        "unsafe_integer",
        `integer ${numberText(start, pos)} is outside the safe range ±${MAX_SAFE} (not exactly representable as an IEEE-754 double)`,
        start
      )
    }
    return v
  }
  const v = Number(src.slice(start, pos))
  if (v === Infinity || v === -Infinity) {
    fail("non_finite_number", `number ${numberText(start, pos)} overflows to ${v}`, start)
  }
  const a = v < 0 ? -v : v
  if (a > MAX_SAFE && a < EXPONENT_FORM_MIN) {
    fail(
      "unsafe_integer",
      `number ${numberText(start, pos)} is an integer beyond ±${MAX_SAFE} (its value ${v} cannot be represented exactly; send it as a string)`,
      start
    )
  }
  return v
}

// --- errors ----------------------------------------------------------------------------------
// Messages quote input through src/excerpt.ts: a 500 KB number or member name gives a short message.

/** The number literal src[start, end) as a message quotes it (bounded). */
function numberText(start: number, end: number): string {
  return excerpt(src.slice(start, end))
}

function failString(isKey: boolean, reason: StrictJsonReason, detail: string, at: number): never {
  // While a member name is being read, segs[depth] still holds the previous member: clear it so
  // the path names the object.
  if (isKey) segs[depth] = undefined
  return fail(reason, isKey ? `${detail} (member name)` : detail, at)
}

function fail(reason: StrictJsonReason, detail: string, at: number): never {
  throw new StrictJsonError(reason, detail, currentPath(), at)
}

function currentPath(): string {
  let path = "$"
  for (let d = 1; d <= depth; d++) {
    const s = segs[d]
    if (s === undefined) break
    path += formatPathSegment(s)
  }
  return boundedPath(path)
}

/** A path as a message shows it: long ones (deep, each member name already bounded) keep their two ends. */
export function boundedPath(path: string): string {
  return path.length <= 240 ? path : `${path.slice(0, 80)}…${path.slice(-159)}`
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/**
 * Formats one segment of a `$`-style path: `[3]`, `.name` or `["not an identifier"]`; a member name
 * longer than EXCERPT_MAX as its bounded excerpt (`["xxx…" (70000 characters)]`).
 */
export function formatPathSegment(seg: string | number): string {
  if (typeof seg === "number") return `[${seg}]`
  return seg.length <= EXCERPT_MAX && IDENTIFIER.test(seg) ? `.${seg}` : `[${quoted(seg)}]`
}

function describeAt(at: number): string {
  if (at >= src.length) return "end of input"
  return `character ${describeChar(src.charCodeAt(at))}`
}

function describeChar(c: number): string {
  if (c !== c) return "(end of input)"
  const u = `U+${hex4(c)}`
  return c >= 0x21 && c <= 0x7e ? `'${String.fromCharCode(c)}' (${u})` : u
}

function hex4(c: number): string {
  return c.toString(16).toUpperCase().padStart(4, "0")
}
