/**
 * Browser stand-in for src/anchoring/keccak-wasm.ts in the verify page's bundle (web/build.ts): the same
 * interface over a plain memory, hashed with @noble/hashes' keccak_256. The WebAssembly original
 * would need `'wasm-unsafe-eval'` in the page's Content-Security-Policy (and Chromium refuses to
 * compile modules over 4 KB synchronously on the main thread); a verification folds ~10 nodes,
 * so speed does not matter here.
 */
import { keccak_256 } from "@noble/hashes/sha3.js"
import type { KeccakWasm } from "../../src/anchoring/keccak-wasm.ts"

const PAGE = 65536

export function instantiateKeccak(): KeccakWasm {
  let memory = new Uint8Array(PAGE)
  const input = new Uint8Array(64)
  return {
    k32: (src, dst) => memory.set(keccak_256(memory.subarray(src, src + 32)), dst),
    k64: (a, b, dst) => {
      input.set(memory.subarray(a, a + 32), 0)
      input.set(memory.subarray(b, b + 32), 32)
      memory.set(keccak_256(input), dst)
    },
    bytes: (minBytes) => {
      if (minBytes > memory.length) {
        const grown = new Uint8Array(Math.ceil(minBytes / PAGE) * PAGE)
        grown.set(memory)
        memory = grown
      }
      return memory
    }
  }
}
