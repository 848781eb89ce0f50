/**
 * What the transparency-log library refuses, as typed failures (the API maps them to 400s, the monitor
 * and `anchord verify` to a failed check). A HashReader that answers with the wrong number of hashes is a
 * store bug, not one of these: it is a defect.
 */
import { Schema } from "effect"

/** A proof or tree asked for sizes or indexes that do not fit (a leaf past the tree, a tree larger than the log). */
export class TreeRangeError extends Schema.TaggedError<TreeRangeError>()("TreeRangeError", { detail: Schema.String }) {
  override get message() {
    return `tlog: ${this.detail}`
  }
}

/** Text or bytes that are not what the format (C2SP signed-note, tlog-checkpoint, tlog-tiles, tlog-proof) allows. */
export class MalformedInput extends Schema.TaggedError<MalformedInput>()("MalformedInput", {
  format: Schema.Literals(["note", "checkpoint", "verifier key", "signer key", "tile path", "entry bundle", "tlog-proof"]),
  detail: Schema.String
}) {
  override get message() {
    return `malformed ${this.format}: ${this.detail}`
  }
}

/**
 * A well-formed note that does not verify: no signature by a known key (`unverified`), a known key's signature
 * that fails (`invalid-signature`, the whole note is refused), or two known keys with one name and id.
 */
export class NoteNotVerified extends Schema.TaggedError<NoteNotVerified>()("NoteNotVerified", {
  reason: Schema.Literals(["unverified", "invalid-signature", "ambiguous-key", "wrong-origin"]),
  detail: Schema.String
}) {
  override get message() {
    return `note not verified (${this.reason}): ${this.detail}`
  }
}

/** Tiles a log served that do not hash to the checkpoint's root (or to their parent tile's hash). */
export class TileMismatch extends Schema.TaggedError<TileMismatch>()("TileMismatch", { detail: Schema.String }) {
  override get message() {
    return `inconsistent tiles: ${this.detail}`
  }
}

/** A proof that does not prove what it claims: the inclusion proof does not lead from the entry to the checkpoint's root. */
export class ProofNotVerified extends Schema.TaggedError<ProofNotVerified>()("ProofNotVerified", { detail: Schema.String }) {
  override get message() {
    return `proof not verified: ${this.detail}`
  }
}
