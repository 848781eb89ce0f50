// The RFC 9162 (RFC 6962 §2.1) Merkle tree: the "transparency log" tree of Certificate Transparency,
// Tessera, Rekor v2 and Sigsum, and the tree of COSE Receipts with `vds` = RFC9162_SHA256 (RFC 9942).
// anchord builds it over each batch's record hashes beside the OpenZeppelin tree (./merkle.ts), so a
// record can also be proved with a standard receipt (docs/proof-format.md, "COSE Receipts").
//
// - leaf hash = SHA-256(0x00 || leaf), interior node = SHA-256(0x01 || left || right);
// - MTH(D[n]) for n > 1 splits at k, the largest power of two < n: left D[0:k], right D[k:n]
//   (so the tree is not complete, and a proof's shape depends on index and size);
// - an inclusion proof (audit path) lists the sibling subtree hashes from the leaf up;
// - verification is the algorithm of RFC 9162 §2.1.3.2, which needs the leaf index and tree size.
// The empty tree (root SHA-256("")) is not built: a batch has at least one leaf.
//
// The hashes and the proof check are the transparency log's (src/tlog/hash.ts, src/tlog/check.ts): one
// implementation for each batch's tree and each network's log. The batch's tree is built by ./recordLog.ts.

// --- record hashes ---------------------------------------------------------------------------

/** A record hash as the trees take it: 64 hex digits, 0x prefix and upper case accepted. */
export const HASH_RE = /^(?:0x)?[0-9a-fA-F]{64}$/

/** 32 bytes from 64 hex digits (0x prefix and upper case accepted). */
export const hashBytes = (hex: string): Uint8Array => {
  if (typeof hex !== "string" || !HASH_RE.test(hex)) {
    throw new TypeError(`expected 64 hex characters (optionally 0x-prefixed), got ${JSON.stringify(hex)}`)
  }
  const body = hex.length === 66 ? hex.slice(2) : hex
  const out = new Uint8Array(32)
  for (let i = 0; i < 32; i++) out[i] = parseInt(body.slice(2 * i, 2 * i + 2), 16)
  return out
}

export const toHex = (bytes: Uint8Array): string => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")

/**
 * The leaf order of a batch's RFC 9162 tree: the record hashes sorted ascending (ties, i.e. duplicate
 * hashes, in input order). Sorted, not as claimed: the root is then a function of the batch's hashes
 * alone, like the OpenZeppelin root, so records that join a live batch with the same leaves
 * (BatchStore.cutBatch) get proofs for the same root. Returns input indices, `order[j]` = the input at leaf j.
 */
export function logLeafOrder(hashes: ReadonlyArray<string>): Array<number> {
  const keys = hashes.map((h) => (h.length === 66 ? h.slice(2) : h).toLowerCase())
  const order = keys.map((_, i) => i)
  order.sort((a, b) => (keys[a]! < keys[b]! ? -1 : keys[a]! > keys[b]! ? 1 : a - b))
  return order
}

/** A proof stored as concatenated 32-byte hashes, split again. */
export const splitProof = (bytes: Uint8Array): Array<Uint8Array> => {
  if (bytes.length % 32 !== 0) throw new TypeError(`a proof is a multiple of 32 bytes, got ${bytes.length}`)
  const out: Array<Uint8Array> = []
  for (let i = 0; i < bytes.length; i += 32) out.push(bytes.slice(i, i + 32))
  return out
}
