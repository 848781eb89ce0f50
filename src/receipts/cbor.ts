/**
 * The CBOR (RFC 8949) that COSE receipts need, and no more: unsigned and negative integers, byte and
 * text strings, arrays, maps, tags, null and booleans, definite lengths only. Encoding is the core
 * deterministic encoding (§4.2.1: shortest arguments, map keys sorted by their encoded bytes), so the
 * protected header and the Sig_structure are byte-exact. Decoding refuses what this encoder never
 * writes (indefinite lengths, floats, trailing bytes) with a CborError naming the offset.
 *
 * Written here because no CBOR package is a dependency of the node (cbor2 is only a transitive dev
 * dependency); the tests decode our receipts with cbor2 (test/receipts/receipt.test.ts). Pure: the
 * verify page bundles it.
 */

export class Tagged {
  readonly tag: number
  readonly value: CborValue
  constructor(tag: number, value: CborValue) {
    this.tag = tag
    this.value = value
  }
}

export type CborValue =
  | number
  | bigint
  | string
  | boolean
  | null
  | Uint8Array
  | Tagged
  | ReadonlyArray<CborValue>
  | ReadonlyMap<CborValue, CborValue>

export class CborError extends Error {
  override readonly name = "CborError"
}

const utf8 = new TextEncoder()
const fromUtf8 = new TextDecoder("utf-8", { fatal: true })

const head = (out: Array<number>, major: number, n: number | bigint): void => {
  const m = major << 5
  const v = BigInt(n)
  if (v < 24n) out.push(m | Number(v))
  else if (v < 0x100n) out.push(m | 24, Number(v))
  else if (v < 0x10000n) out.push(m | 25, Number(v >> 8n), Number(v & 0xffn))
  else if (v < 0x100000000n) out.push(m | 26, ...[24n, 16n, 8n, 0n].map((s) => Number((v >> s) & 0xffn)))
  else if (v < 0x10000000000000000n) out.push(m | 27, ...[56n, 48n, 40n, 32n, 24n, 16n, 8n, 0n].map((s) => Number((v >> s) & 0xffn)))
  else throw new CborError(`integer out of range: ${v}`)
}

const compareBytes = (a: Uint8Array, b: Uint8Array): number => {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!
  return a.length - b.length
}

const write = (out: Array<number>, v: CborValue): void => {
  if (v === null) out.push(0xf6)
  else if (v === true) out.push(0xf5)
  else if (v === false) out.push(0xf4)
  else if (typeof v === "number" || typeof v === "bigint") {
    if (typeof v === "number" && !Number.isSafeInteger(v)) throw new CborError(`not an integer: ${v}`)
    const b = BigInt(v)
    if (b >= 0n) head(out, 0, b)
    else head(out, 1, -1n - b)
  } else if (typeof v === "string") {
    const bytes = utf8.encode(v)
    head(out, 3, bytes.length)
    for (const x of bytes) out.push(x)
  } else if (v instanceof Uint8Array) {
    head(out, 2, v.length)
    for (const x of v) out.push(x)
  } else if (v instanceof Tagged) {
    head(out, 6, v.tag)
    write(out, v.value)
  } else if (v instanceof Map) {
    const entries = [...(v as ReadonlyMap<CborValue, CborValue>)].map(([k, x]) => [encode(k), x] as const)
    entries.sort((a, b) => compareBytes(a[0], b[0]))
    head(out, 5, entries.length)
    for (const [k, x] of entries) {
      for (const byte of k) out.push(byte)
      write(out, x)
    }
  } else if (Array.isArray(v)) {
    head(out, 4, v.length)
    for (const x of v as ReadonlyArray<CborValue>) write(out, x)
  } else {
    throw new CborError(`cannot encode ${typeof v}`)
  }
}

/** Deterministic CBOR of a value. */
export const encode = (v: CborValue): Uint8Array => {
  const out: Array<number> = []
  write(out, v)
  return new Uint8Array(out)
}

const MAX_DEPTH = 16

/**
 * One CBOR item from `bytes`, which must hold nothing else. Integers come back as numbers when safe,
 * bigints otherwise; maps as Maps (keys as decoded).
 * @throws CborError on anything malformed or outside the subset above.
 */
export const decode = (bytes: Uint8Array): CborValue => {
  let pos = 0
  const need = (n: number) => {
    if (pos + n > bytes.length) throw new CborError(`truncated at byte ${pos}`)
  }
  const argument = (info: number): bigint => {
    if (info < 24) return BigInt(info)
    const len = info === 24 ? 1 : info === 25 ? 2 : info === 26 ? 4 : info === 27 ? 8 : 0
    if (len === 0) throw new CborError(`unsupported length encoding ${info} at byte ${pos - 1}`)
    need(len)
    let v = 0n
    for (let i = 0; i < len; i++) v = (v << 8n) | BigInt(bytes[pos++]!)
    return v
  }
  const small = (v: bigint): number => {
    if (v > BigInt(bytes.length)) throw new CborError(`length ${v} past the end at byte ${pos}`)
    return Number(v)
  }
  const int = (v: bigint): number | bigint => (v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v)
  const item = (depth: number): CborValue => {
    if (depth > MAX_DEPTH) throw new CborError("nested too deeply")
    need(1)
    const first = bytes[pos++]!
    const major = first >> 5
    const info = first & 31
    switch (major) {
      case 0: return int(argument(info))
      case 1: return int(-1n - argument(info))
      case 2:
      case 3: {
        const n = small(argument(info))
        need(n)
        const slice = bytes.slice(pos, pos + n)
        pos += n
        if (major === 2) return slice
        try {
          return fromUtf8.decode(slice)
        } catch {
          throw new CborError(`text string at byte ${pos - n} is not UTF-8`)
        }
      }
      case 4: {
        const n = small(argument(info))
        const out: Array<CborValue> = []
        for (let i = 0; i < n; i++) out.push(item(depth + 1))
        return out
      }
      case 5: {
        const n = small(argument(info))
        const out = new Map<CborValue, CborValue>()
        for (let i = 0; i < n; i++) {
          const k = item(depth + 1)
          if ([...out.keys()].some((x) => x === k)) throw new CborError(`duplicate map key ${String(k)}`)
          out.set(k, item(depth + 1))
        }
        return out
      }
      case 6: return new Tagged(Number(argument(info)), item(depth + 1))
      default:
        if (first === 0xf4) return false
        if (first === 0xf5) return true
        if (first === 0xf6) return null
        throw new CborError(`unsupported item 0x${first.toString(16)} at byte ${pos - 1}`)
    }
  }
  const v = item(0)
  if (pos !== bytes.length) throw new CborError(`${bytes.length - pos} trailing byte(s) after the item`)
  return v
}
