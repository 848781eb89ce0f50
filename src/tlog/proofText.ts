/**
 * C2SP tlog-proof (c2sp.org/tlog-proof): an offline proof that an entry is in a log, as text (file
 * extension `.tlog-proof`):
 *
 *     c2sp.org/tlog-proof@v1
 *     [extra <base64 opaque data>]
 *     index <leaf index>
 *     <base64 proof hash>        (zero or more: the inclusion proof, from the leaf's sibling up)
 *
 *     <the signed checkpoint, verbatim>
 *
 * Parsing is strict (canonical base64, no leading zeros, 32-byte hashes, no stray line). Checking one follows
 * the spec's steps: the leaf hash of the entry (for anchord, SHA-256(0x00 || record hash)), the checkpoint
 * signed by a known key for the expected origin, the inclusion proof to its root.
 */
import * as Result from "effect/Result"
import { openCheckpoint, type OpenedCheckpoint } from "./checkpoint.ts"
import { verifyInclusion } from "./check.ts"
import { MalformedInput, type NoteNotVerified, ProofNotVerified } from "./errors.ts"
import { HASH_SIZE, leafHash } from "./hash.ts"
import { decodeBase64, encodeBase64, type NoteVerifier } from "./note.ts"
import { MAX_TREE_SIZE } from "./tree.ts"

export const TLOG_PROOF_HEADER = "c2sp.org/tlog-proof@v1"

export interface TlogProof {
  /** Opaque, unauthenticated data for the application; absent when there is none. */
  readonly extra?: Uint8Array | undefined
  readonly index: number
  /** The inclusion proof in the checkpoint's tree, from the leaf's sibling up. */
  readonly proof: ReadonlyArray<Uint8Array>
  /** The signed checkpoint note, verbatim (ends in a newline). */
  readonly checkpoint: string
}

/** The proof's text. @throws TypeError on a proof no text can carry. */
export const formatProofText = (p: TlogProof): string => {
  if (!Number.isSafeInteger(p.index) || p.index < 0) throw new TypeError(`invalid leaf index ${p.index}`)
  if (p.proof.some((h) => h.length !== HASH_SIZE)) throw new TypeError("proof hashes are 32 bytes")
  if (p.extra !== undefined && p.extra.length === 0) throw new TypeError("empty extra data is written as no extra line")
  if (!p.checkpoint.endsWith("\n") || p.checkpoint.startsWith("\n")) throw new TypeError("the checkpoint is a signed note")
  const lines = [
    TLOG_PROOF_HEADER,
    ...(p.extra === undefined ? [] : [`extra ${encodeBase64(p.extra)}`]),
    `index ${p.index}`,
    ...p.proof.map(encodeBase64)
  ]
  return `${lines.join("\n")}\n\n${p.checkpoint}`
}

const malformed = (detail: string) => Result.fail(new MalformedInput({ format: "tlog-proof", detail }))

/** A tlog-proof's parts; the checkpoint is returned as text, for `checkProofText` or `openCheckpoint` to verify. */
export const parseProofText = (text: string): Result.Result<TlogProof, MalformedInput> => {
  const blank = text.indexOf("\n\n")
  if (blank < 0) return malformed("no blank line before the checkpoint")
  const lines = text.slice(0, blank).split("\n")
  const checkpoint = text.slice(blank + 2)
  if (lines[0] !== TLOG_PROOF_HEADER) return malformed(`the first line is not ${TLOG_PROOF_HEADER}`)
  let at = 1
  let extra: Uint8Array | undefined
  if (lines[at]?.startsWith("extra ")) {
    extra = decodeBase64(lines[at]!.slice("extra ".length))
    if (extra === undefined || extra.length === 0) return malformed("the extra data is not base64 of at least one byte")
    at++
  }
  const indexLine = lines[at++]
  const digits = indexLine?.startsWith("index ") ? indexLine.slice("index ".length) : ""
  if (!/^(0|[1-9][0-9]*)$/.test(digits) || Number(digits) >= MAX_TREE_SIZE) return malformed("no index line with a decimal leaf index")
  const proof: Array<Uint8Array> = []
  for (const line of lines.slice(at)) {
    const h = decodeBase64(line)
    if (h === undefined || h.length !== HASH_SIZE) return malformed("a proof line is not the base64 of a 32-byte hash")
    proof.push(h)
  }
  if (proof.length > 64) return malformed("more proof hashes than any tree needs")
  if (checkpoint === "" || checkpoint.startsWith("\n") || !checkpoint.endsWith("\n")) return malformed("no checkpoint after the blank line")
  return Result.succeed({ ...(extra === undefined ? {} : { extra }), index: Number(digits), proof, checkpoint })
}

/** A tlog-proof that checked: its parts, and its checkpoint parsed with the note's signatures. */
export interface CheckedProof extends OpenedCheckpoint {
  readonly proof: TlogProof
}

/**
 * Checks a tlog-proof for `entry` (the logged bytes: for anchord, the 32-byte record hash): its checkpoint is
 * signed by one of `verifiers` for `origin`, and its inclusion proof leads from the entry's leaf hash to the
 * checkpoint's root. The extra data is returned as it is, unauthenticated.
 */
export const checkProofText = (
  text: string,
  entry: Uint8Array,
  origin: string,
  verifiers: ReadonlyArray<NoteVerifier>
): Result.Result<CheckedProof, MalformedInput | NoteNotVerified | ProofNotVerified> =>
  Result.flatMap(parseProofText(text), (p) =>
    Result.flatMap(openCheckpoint(p.checkpoint, origin, verifiers), (opened): Result.Result<CheckedProof, ProofNotVerified> => {
      const { size, root } = opened.checkpoint
      return verifyInclusion(p.index, size, leafHash(entry), p.proof, root)
        ? Result.succeed({ proof: p, ...opened })
        : Result.fail(new ProofNotVerified({ detail: `the inclusion proof of leaf ${p.index} does not lead to the root of the checkpoint of size ${size}` }))
    }))
