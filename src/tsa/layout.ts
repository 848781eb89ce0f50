/**
 * Token layouts: a token's DER depends on its varying parts only through their lengths. For each combination
 * of lengths (the shape: imprint algorithm, serial and nonce sizes, genTime's precision, certReq, the
 * signature's length) the whole encoding is made once by asn1js, and where each varying TLV sits in it is
 * found by encoding it again with that TLV's bytes inverted (the only bytes that change). A token is then
 * the layout's bytes with its own TLVs (each encoded by asn1js) written over them: the same DER as the
 * reference build, without encoding the containers again (~250 µs of the ~300). ./token.ts uses them.
 */

export interface Layout {
  readonly der: Uint8Array
  /** Where each named TLV starts in `der`. */
  readonly at: Readonly<Record<string, number>>
  /** A response layout: the length of the token, its last element. */
  readonly tokenLength?: number
}

/** Layouts kept per signer's template; past this many shapes (odd nonces), tokens are built fully. */
const MAX_LAYOUTS = 128

const invert = (bytes: Uint8Array) => bytes.map((b) => b ^ 0xff)

/** Where `variant` differs from `base`: exactly `length` bytes from the returned offset, else a defect. */
const where = (base: Uint8Array, variant: Uint8Array, length: number) => {
  let first = -1
  let last = -1
  for (let i = 0; i < base.length; i++) {
    if (base[i] !== variant[i]) {
      if (first === -1) first = i
      last = i
    }
  }
  if (variant.length !== base.length || first === -1 || last - first + 1 !== length) throw new Error("TSA token layout: a part moved the encoding")
  return first
}

export const layoutOf = <K extends string>(parts: Record<K, Uint8Array>, build: (parts: Record<K, Uint8Array>) => Uint8Array): Layout => {
  const der = build(parts)
  const at: Record<string, number> = {}
  for (const name of Object.keys(parts) as Array<K>) at[name] = where(der, build({ ...parts, [name]: invert(parts[name]) }), parts[name].length)
  return { der, at }
}

export const cached = (layouts: Map<string, Layout>, key: string, make: () => Layout): Layout | undefined => {
  const found = layouts.get(key)
  if (found !== undefined) return found
  if (layouts.size >= MAX_LAYOUTS) return undefined
  const made = make()
  layouts.set(key, made)
  return made
}
