// RFC 9162 consistency proofs for tests: the generator (§2.1.4.1, SUBPROOF) over real leaves, and the
// verifier's root computation (§2.1.4.2) run on any hashes, which gives the roots a proof of a chosen
// shape implies (gas measurements at sizes no test can build). Written from the RFC, independently of
// the contract's and the chaincode's verifiers; leaf and node hashes from src/tlog/hash.ts.
import { leafHash, nodeHash, split } from "../../src/tlog/hash.ts"

/** MTH(D[lo:hi]) of raw leaves (record hashes). */
export function logRoot(leaves: ReadonlyArray<Uint8Array>, lo = 0, hi = leaves.length): Uint8Array {
  if (hi - lo === 1) return leafHash(leaves[lo]!)
  const k = split(hi - lo)
  return nodeHash(logRoot(leaves, lo, lo + k), logRoot(leaves, lo + k, hi))
}

/** PROOF(m, D[n]) with n = leaves.length, 0 < m <= n: SUBPROOF(m, D[n], true). */
export function consistencyProof(leaves: ReadonlyArray<Uint8Array>, m: number): Array<Uint8Array> {
  const subproof = (m: number, lo: number, hi: number, b: boolean): Array<Uint8Array> => {
    const n = hi - lo
    if (m === n) return b ? [] : [logRoot(leaves, lo, hi)]
    const k = split(n)
    return m <= k
      ? [...subproof(m, lo, lo + k, b), logRoot(leaves, lo + k, hi)]
      : [...subproof(m - k, lo + k, hi, false), logRoot(leaves, lo, lo + k)]
  }
  return subproof(m, 0, leaves.length, true)
}

/** The number of hashes in PROOF(m, D[n]), 0 < m < n: SUBPROOF's recursion without hashing. */
export function consistencyProofLength(m: number, n: number): number {
  const length = (m: number, n: number, b: boolean): number => {
    if (m === n) return b ? 0 : 1
    const k = split(n)
    return 1 + (m <= k ? length(m, k, b) : length(m - k, n - k, false))
  }
  return length(m, n, true)
}

/**
 * The (old root, new root) that `proof` links for sizes 0 < m < n, by RFC 9162 §2.1.4.2; `undefined` when
 * it has the wrong length. When m is a power of two the old root is the proof's implicit first element,
 * so it is an input (`oldRootIfPowerOfTwo`). Sizes may pass 2^32: plain arithmetic, no bitwise operators.
 */
export function rootsFromConsistencyProof(
  m: number,
  n: number,
  proof: ReadonlyArray<Uint8Array>,
  oldRootIfPowerOfTwo: Uint8Array
): { readonly oldRoot: Uint8Array; readonly newRoot: Uint8Array } | undefined {
  const path = Number.isInteger(Math.log2(m)) ? [oldRootIfPowerOfTwo, ...proof] : [...proof]
  if (proof.length === 0 || path.length === 0) return undefined
  const half = (x: number) => Math.floor(x / 2)
  let fn = m - 1
  let sn = n - 1
  while (fn % 2 === 1) [fn, sn] = [half(fn), half(sn)]
  let fr = path[0]!
  let sr = path[0]!
  for (const c of path.slice(1)) {
    if (sn === 0) return undefined
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr)
      sr = nodeHash(c, sr)
      while (fn % 2 === 0 && fn !== 0) [fn, sn] = [half(fn), half(sn)]
    } else {
      sr = nodeHash(sr, c)
    }
    ;[fn, sn] = [half(fn), half(sn)]
  }
  return sn === 0 ? { oldRoot: fr, newRoot: sr } : undefined
}
