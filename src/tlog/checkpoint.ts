/**
 * C2SP tlog-checkpoint (c2sp.org/tlog-checkpoint): the note text `<origin>\n<size>\n<base64 root>\n`, then
 * optional non-empty extension lines, signed as a C2SP signed note (./note.ts). Parsing is strict: a size
 * with a leading zero or beyond what this library handles, a root that is not canonical base64 of 32 bytes,
 * an empty line, or a text not ending in a newline is refused.
 */
import * as Result from "effect/Result"
import { MalformedInput, NoteNotVerified } from "./errors.ts"
import { HASH_SIZE } from "./hash.ts"
import { decodeBase64, encodeBase64, type Note, type NoteSigner, type NoteVerifier, openNote, signNote } from "./note.ts"
import { MAX_TREE_SIZE } from "./tree.ts"

export interface Checkpoint {
  /** The log's identity, e.g. `anchord.example.com/log/mainnet`. */
  readonly origin: string
  readonly size: number
  /** The RFC 9162 root of the first `size` leaves (SHA-256("") when empty), 32 bytes. */
  readonly root: Uint8Array
  /** Opaque extension lines (none by default; the spec does not recommend them). */
  readonly extensions?: ReadonlyArray<string> | undefined
}

const malformed = (detail: string) => Result.fail(new MalformedInput({ format: "checkpoint", detail }))

/** No control character (the note forbids them) and no surrounding-space-only line. */
const isLine = (s: string) => s !== "" && !/[\u0000-\u001f]/.test(s)

/** The checkpoint's note text. @throws TypeError on a checkpoint that has no valid text. */
export const formatCheckpoint = (c: Checkpoint): string => {
  if (!isLine(c.origin)) throw new TypeError("a checkpoint's origin is one non-empty line")
  if (!Number.isSafeInteger(c.size) || c.size < 0 || c.size > MAX_TREE_SIZE) throw new TypeError(`invalid checkpoint size ${c.size}`)
  if (c.root.length !== HASH_SIZE) throw new TypeError("a checkpoint's root is 32 bytes")
  const extensions = c.extensions ?? []
  if (!extensions.every(isLine)) throw new TypeError("a checkpoint's extension lines are non-empty lines")
  return [c.origin, String(c.size), encodeBase64(c.root), ...extensions].map((l) => `${l}\n`).join("")
}

/** The checkpoint in a note's text (its signatures already checked by `openNote`). */
export const parseCheckpoint = (text: string): Result.Result<Checkpoint, MalformedInput> => {
  if (!text.endsWith("\n")) return malformed("the text does not end in a newline")
  const lines = text.slice(0, -1).split("\n")
  if (lines.length < 3) return malformed("fewer than three lines")
  const [origin, sizeLine, rootLine, ...extensions] = lines as [string, string, string, ...Array<string>]
  if (!isLine(origin)) return malformed("the origin line is empty or has a control character")
  if (!/^(0|[1-9][0-9]*)$/.test(sizeLine)) return malformed("the size is not a decimal number without leading zeros")
  const size = Number(sizeLine)
  if (size > MAX_TREE_SIZE) return malformed(`the size is over ${MAX_TREE_SIZE}`)
  const root = decodeBase64(rootLine)
  if (root === undefined || root.length !== HASH_SIZE) return malformed("the root hash is not the base64 of 32 bytes")
  if (!extensions.every(isLine)) return malformed("an extension line is empty")
  return Result.succeed({ origin, size, root, ...(extensions.length > 0 ? { extensions } : {}) })
}

/** The signed note of a checkpoint. */
export const signCheckpoint = (c: Checkpoint, signers: ReadonlyArray<NoteSigner>): string => signNote(formatCheckpoint(c), signers)

export interface OpenedCheckpoint {
  readonly checkpoint: Checkpoint
  readonly note: Note
}

/**
 * A signed checkpoint checked as tlog-checkpoint asks: a note signed by one of `verifiers` (./note.ts rules),
 * whose text is a checkpoint of the expected `origin`.
 */
export const openCheckpoint = (
  signed: string | Uint8Array,
  origin: string,
  verifiers: ReadonlyArray<NoteVerifier>
): Result.Result<OpenedCheckpoint, MalformedInput | NoteNotVerified> =>
  Result.flatMap(openNote(signed, verifiers), (note) =>
    Result.flatMap(parseCheckpoint(note.text), (checkpoint): Result.Result<OpenedCheckpoint, MalformedInput | NoteNotVerified> =>
      checkpoint.origin === origin
        ? Result.succeed({ checkpoint, note })
        : Result.fail(
          new NoteNotVerified({ reason: "wrong-origin", detail: `origin ${JSON.stringify(checkpoint.origin)}, expected ${JSON.stringify(origin)}` })
        )))
