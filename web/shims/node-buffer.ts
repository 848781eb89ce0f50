/**
 * Browser stand-in for `node:buffer` in the verify page's bundle (web/build.ts): the part of
 * Node's Buffer that src/anchoring/merkle.ts uses, with Node's semantics, in particular `write(…, "hex")`
 * stopping at the first pair that is not two hex digits (merkle.ts validates hashes by counting the
 * bytes written). test/web/shims.test.ts compares it with Node's Buffer.
 */
const HEX_PAIR = /^[0-9a-fA-F]{2}$/

export class BrowserBuffer extends Uint8Array {
  /** Node: `buf.write(string, offset, length, "hex")`, the number of bytes written. */
  write(text: string, offset: number, length: number, encoding: "hex"): number {
    if (encoding !== "hex") throw new Error(`node:buffer stand-in: write(…, ${JSON.stringify(encoding)}) is not available`)
    const max = Math.min(length, this.length - offset, Math.floor(text.length / 2))
    let i = 0
    for (; i < max; i++) {
      const pair = text.slice(2 * i, 2 * i + 2)
      if (!HEX_PAIR.test(pair)) break
      this[offset + i] = parseInt(pair, 16)
    }
    return i
  }

  /** Node: `buf.readUIntBE(offset, byteLength)` for 1..6 bytes. */
  readUIntBE(offset: number, byteLength: number): number {
    if (byteLength < 1 || byteLength > 6 || offset + byteLength > this.length) throw new RangeError("readUIntBE: out of range")
    let v = 0
    for (let i = 0; i < byteLength; i++) v = v * 256 + this[offset + i]!
    return v
  }

  /** Node: `buf.toString("hex", start, end)`. */
  override toString(encoding?: string, start = 0, end = this.length): string {
    if (encoding !== "hex") throw new Error(`node:buffer stand-in: toString(${JSON.stringify(encoding)}) is not available`)
    let out = ""
    for (let i = start; i < end; i++) out += this[i]!.toString(16).padStart(2, "0")
    return out
  }
}

export const Buffer = {
  /** Node: `Buffer.from(arrayBuffer, byteOffset, length)`, a view (no copy). */
  from: (buffer: ArrayBuffer, byteOffset: number, length: number): BrowserBuffer => new BrowserBuffer(buffer, byteOffset, length)
}
