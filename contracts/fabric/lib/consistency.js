/*
 * RFC 9162 §2.1.4.2 consistency proof verification for the anchoring chaincode's transparency-log
 * checkpoints: the same check as AnchorRegistry.sol's, with node:crypto SHA-256. Sizes are JavaScript
 * numbers up to 2^53, so halving is arithmetic, never bitwise (which would stop at 2^31).
 *
 * SPDX-License-Identifier: Apache-2.0
 */
"use strict"

const { createHash } = require("node:crypto")

/**
 * SHA-256(0x01 || left || right): an RFC 9162 interior node.
 * @param {Buffer} left
 * @param {Buffer} right
 * @returns {Buffer}
 */
function nodeHash(left, right) {
  return createHash("sha256").update(Buffer.from([1])).update(left).update(right).digest()
}

/** @param {number} x */
const half = (x) => Math.floor(x / 2)

/**
 * True when `proof` shows that the tree of `m` leaves with root `oldRoot` is a prefix of the tree of
 * `n` leaves with root `newRoot`, for 0 < m < n. When m is a power of two the old root is the proof's
 * implicit first element (the RFC prepends it).
 * @param {number} m
 * @param {number} n
 * @param {Buffer} oldRoot
 * @param {Buffer} newRoot
 * @param {ReadonlyArray<Buffer>} proof
 * @returns {boolean}
 */
function verifyConsistency(m, n, oldRoot, newRoot, proof) {
  if (!(Number.isSafeInteger(m) && Number.isSafeInteger(n) && m > 0 && m < n) || proof.length === 0) return false
  const path = Number.isInteger(Math.log2(m)) ? [oldRoot, ...proof] : [...proof]
  let fn = m - 1
  let sn = n - 1
  while (fn % 2 === 1) {
    fn = half(fn)
    sn = half(sn)
  }
  let fr = path[0]
  let sr = path[0]
  if (fr === undefined || sr === undefined) return false
  for (const c of path.slice(1)) {
    if (sn === 0) return false
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr)
      sr = nodeHash(c, sr)
      while (fn % 2 === 0 && fn !== 0) {
        fn = half(fn)
        sn = half(sn)
      }
    } else {
      sr = nodeHash(sr, c)
    }
    fn = half(fn)
    sn = half(sn)
  }
  return sn === 0 && fr.equals(oldRoot) && sr.equals(newRoot)
}

module.exports = { verifyConsistency }
