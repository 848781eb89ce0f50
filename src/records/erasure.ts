/**
 * Erasure (hard delete, docs/api.md "What a hard delete leaves"): the record's copies outside its row.
 * Pure functions; RecordStore.remove runs the statements in the delete's transaction.
 */
import { parseStrictJson } from "../canonical/strictJson.ts"

/** The members of a record view that a hard delete erases, and their erased values. */
const ERASED: Record<string, unknown> = { metadata: {}, webhookUrl: null, collection: null, data: null }

/**
 * A stored Idempotency-Key answer (a 202/207 text of src/records/creation.ts) with the record's view
 * erased: `data`, `metadata`, `collection`, `webhookUrl` (and an encrypted record's `encryptedData` and
 * `salt`) replaced, every other byte kept, so a replay of a batch still answers the other records as
 * it did. The views are found where the answer's own structure puts them (`data`, or each
 * `data.results[i].data`), never by searching the text: another record's data or metadata may hold
 * `{"recordId":"<this id>"…}` too. undefined when the answer holds no view of the record.
 */
export const eraseFromAnswer = (body: string, recordId: string): string | undefined => {
  const own = `{"recordId":"${recordId}"`
  if (!body.startsWith(ANSWER)) return undefined
  if (body.startsWith(own, ANSWER.length)) return replaceView(body, ANSWER.length, recordId)
  // A batch answer: fixed members (numbers only) up to `results`, then one object per item.
  if (!body.startsWith(BATCH, ANSWER.length)) return undefined
  let i = body.indexOf(RESULTS, ANSWER.length)
  if (i === -1) return undefined
  i += RESULTS.length
  while (body[i] === "{") {
    const end = objectEnd(body, i)
    if (end === undefined) return undefined
    const item = ITEM.exec(body.slice(i, i + 48))
    if (item !== null && body.startsWith(own, i + item[0].length)) return replaceView(body, i + item[0].length, recordId)
    i = body[end] === "," ? end + 1 : end
  }
  return undefined
}

const ANSWER = "{\"success\":true,\"data\":"
const BATCH = "{\"accepted\":"
const RESULTS = "\"results\":["
const ITEM = /^\{"index":\d+,"success":true,"data":/

/** The answer with the view starting at `start` replaced by its erased form. */
const replaceView = (body: string, start: number, recordId: string): string | undefined => {
  const end = objectEnd(body, start)
  if (end === undefined) return undefined
  let view: Record<string, unknown>
  try {
    // Deeper than any request may nest (data at most 64 levels, inside a view inside a batch answer).
    view = parseStrictJson(body.slice(start, end), { maxDepth: 256 }) as Record<string, unknown>
  } catch {
    // Not expected (the node wrote this text); erasing wins over keeping the view's other members.
    view = { recordId }
  }
  const erased: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(view)) {
    if (name === "encryptedData" || name === "salt") continue
    erased[name] = Object.hasOwn(ERASED, name) ? ERASED[name] : value
  }
  return body.slice(0, start) + JSON.stringify(erased) + body.slice(end)
}

/** The index just past the JSON object that starts at `start` (strings and escapes respected). */
const objectEnd = (text: string, start: number): number | undefined => {
  let depth = 0
  let inString = false
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++ // backslash: skip the escaped character
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x7b || c === 0x5b) depth++
    else if (c === 0x7d || c === 0x5d) {
      depth--
      if (depth === 0) return i + 1
    }
  }
  return undefined
}
