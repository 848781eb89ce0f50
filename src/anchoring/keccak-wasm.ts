// Keccak-256 (Ethereum's: Keccak padding 0x01) of 32- and 64-byte inputs, in WebAssembly.
//
// The module is emitted here, byte by byte, at import time (no .wasm file, no build step, no
// dependency): two functions whose bodies are Keccak-f[1600] fully unrolled over 64-bit lanes
// held in locals (i64.rotl does the rotations natively, which is what makes it ~4x faster than
// the best JavaScript version over 32-bit halves). Inputs and outputs live in the module's own
// memory, addressed by byte offset:
//   k32(src, dst)     memory[dst..dst+32] = keccak256(memory[src..src+32])
//   k64(a, b, dst)    memory[dst..dst+32] = keccak256(memory[a..a+32] ++ memory[b..b+32])
// dst may overlap the input. The module is checked against viem's keccak256 in
// test/evm/merkle.test.ts.

/** Rotation offsets r[x][y] of the rho step. */
const RHO = [
  [0, 36, 3, 41, 18],
  [1, 44, 10, 45, 2],
  [62, 6, 43, 15, 61],
  [28, 55, 25, 21, 56],
  [27, 20, 39, 8, 14]
] as const

const ROUND_CONSTANTS = [
  0x0000000000000001n,
  0x0000000000008082n,
  0x800000000000808an,
  0x8000000080008000n,
  0x000000000000808bn,
  0x0000000080000001n,
  0x8000000080008081n,
  0x8000000000008009n,
  0x000000000000008an,
  0x0000000000000088n,
  0x0000000080008009n,
  0x000000008000000an,
  0x000000008000808bn,
  0x800000000000008bn,
  0x8000000000008089n,
  0x8000000000008003n,
  0x8000000000008002n,
  0x8000000000000080n,
  0x000000000000800an,
  0x800000008000000an,
  0x8000000080008081n,
  0x8000000000008080n,
  0x0000000080000001n,
  0x8000000080008008n
] as const

// Opcodes.
const LOCAL_GET = 0x20
const LOCAL_SET = 0x21
const I64_LOAD = 0x29
const I64_STORE = 0x37
const I64_CONST = 0x42
const I64_AND = 0x83
const I64_XOR = 0x85
const I64_ROTL = 0x89
const END = 0x0b
const I32 = 0x7f
const I64 = 0x7e

const uleb = (value: number): Array<number> => {
  const out: Array<number> = []
  let v = value >>> 0
  do {
    let byte = v & 0x7f
    v >>>= 7
    if (v !== 0) byte |= 0x80
    out.push(byte)
  } while (v !== 0)
  return out
}

const sleb64 = (value: bigint): Array<number> => {
  const out: Array<number> = []
  let v = BigInt.asIntN(64, value)
  for (;;) {
    const byte = Number(v & 0x7fn)
    v >>= 7n
    const done = (v === 0n && (byte & 0x40) === 0) || (v === -1n && (byte & 0x40) !== 0)
    out.push(done ? byte : byte | 0x80)
    if (done) return out
  }
}

const section = (id: number, payload: Array<number>): Array<number> => [id, ...uleb(payload.length), ...payload]
const vec = (items: Array<Array<number>>): Array<number> => [...uleb(items.length), ...items.flat()]
const name = (s: string): Array<number> => vec([...Buffer.from(s, "utf8")].map((b) => [b]))

/**
 * Body of one function: `params` i32 parameters, then 60 i64 locals: lanes A (25), B (25),
 * C (5), D (5). `load` sets up the absorbed block, `store` writes the digest.
 */
const functionBody = (params: number, load: (code: Array<number>, a: (i: number) => number) => void,
  store: (code: Array<number>, a: (i: number) => number) => void): Array<number> =>
{
  const A = (i: number): number => params + i
  const B = (i: number): number => params + 25 + i
  const C = (x: number): number => params + 50 + x
  const D = (x: number): number => params + 55 + x
  const code: Array<number> = []
  const get = (l: number): void => void code.push(LOCAL_GET, ...uleb(l))
  const set = (l: number): void => void code.push(LOCAL_SET, ...uleb(l))

  load(code, A)
  for (let round = 0; round < 24; round++) {
    // theta
    for (let x = 0; x < 5; x++) {
      get(A(x))
      for (let y = 1; y < 5; y++) {
        get(A(x + 5 * y))
        code.push(I64_XOR)
      }
      set(C(x))
    }
    for (let x = 0; x < 5; x++) {
      get(C((x + 4) % 5))
      get(C((x + 1) % 5))
      code.push(I64_CONST, ...sleb64(1n), I64_ROTL, I64_XOR)
      set(D(x))
    }
    // theta (apply), rho and pi: B[y][2x+3y] = rotl(A[x][y] ^ D[x], r[x][y])
    for (let x = 0; x < 5; x++) {
      for (let y = 0; y < 5; y++) {
        get(A(x + 5 * y))
        get(D(x))
        code.push(I64_XOR)
        const r = RHO[x]![y]!
        if (r !== 0) code.push(I64_CONST, ...sleb64(BigInt(r)), I64_ROTL)
        set(B(y + 5 * ((2 * x + 3 * y) % 5)))
      }
    }
    // chi: A[x][y] = B[x][y] ^ (~B[x+1][y] & B[x+2][y])
    for (let y = 0; y < 5; y++) {
      for (let x = 0; x < 5; x++) {
        get(B(((x + 1) % 5) + 5 * y))
        code.push(I64_CONST, ...sleb64(-1n), I64_XOR)
        get(B(((x + 2) % 5) + 5 * y))
        code.push(I64_AND)
        get(B(x + 5 * y))
        code.push(I64_XOR)
        set(A(x + 5 * y))
      }
    }
    // iota
    get(A(0))
    code.push(I64_CONST, ...sleb64(ROUND_CONSTANTS[round]!), I64_XOR)
    set(A(0))
  }
  store(code, A)
  code.push(END)
  const locals = vec([[...uleb(60), I64]])
  const body = [...locals, ...code]
  return [...uleb(body.length), ...body]
}

// i64.load/i64.store memarg: alignment exponent 3 (a hint only), then the static offset.
const loadLanes = (code: Array<number>, ptrParam: number, firstLane: number, a: (i: number) => number): void => {
  for (let k = 0; k < 4; k++) {
    code.push(LOCAL_GET, ptrParam, I64_LOAD, 3, ...uleb(8 * k))
    code.push(LOCAL_SET, ...uleb(a(firstLane + k)))
  }
}
const setLane = (code: Array<number>, lane: number, value: bigint, a: (i: number) => number): void => {
  code.push(I64_CONST, ...sleb64(value), LOCAL_SET, ...uleb(a(lane)))
}
const storeDigest = (dstParam: number) => (code: Array<number>, a: (i: number) => number): void => {
  for (let k = 0; k < 4; k++) {
    code.push(LOCAL_GET, dstParam, LOCAL_GET, ...uleb(a(k)), I64_STORE, 3, ...uleb(8 * k))
  }
}

// Padding of a single 136-byte block: 0x01 right after the message, 0x80 in the last byte
// (lane 16, top byte). Locals start at zero, so only these lanes are set.
const k32Body = functionBody(2, (code, a) => {
  loadLanes(code, 0, 0, a)
  setLane(code, 4, 1n, a)
  setLane(code, 16, 0x8000000000000000n, a)
}, storeDigest(1))

const k64Body = functionBody(3, (code, a) => {
  loadLanes(code, 0, 0, a)
  loadLanes(code, 1, 4, a)
  setLane(code, 8, 1n, a)
  setLane(code, 16, 0x8000000000000000n, a)
}, storeDigest(2))

const moduleBytes = new Uint8Array([
  0x00,
  0x61,
  0x73,
  0x6d,
  0x01,
  0x00,
  0x00,
  0x00,
  ...section(1, vec([
    [0x60, ...vec([[I32], [I32]]), ...vec([])],
    [0x60, ...vec([[I32], [I32], [I32]]), ...vec([])]
  ])),
  ...section(3, vec([[0], [1]])),
  ...section(5, vec([[0x00, ...uleb(1)]])),
  ...section(7, vec([
    [...name("memory"), 0x02, 0],
    [...name("k32"), 0x00, 0],
    [...name("k64"), 0x00, 1]
  ])),
  ...section(10, vec([k32Body, k64Body]))
])

// The project's TypeScript lib settings (ES2023, no DOM) carry no WebAssembly types: the few
// parts used here are described by hand.
interface WasmMemory {
  readonly buffer: ArrayBuffer
  grow(pages: number): number
}
interface WasmApi {
  readonly Module: new(bytes: Uint8Array) => object
  readonly Instance: new(module: object, imports: object) => { readonly exports: unknown }
}
const { WebAssembly: wasm } = globalThis as unknown as { WebAssembly: WasmApi }

const wasmModule = new wasm.Module(moduleBytes)

export interface KeccakWasm {
  /** memory[dst..dst+32] = keccak256(memory[src..src+32]) */
  readonly k32: (src: number, dst: number) => void
  /** memory[dst..dst+32] = keccak256(memory[a..a+32] ++ memory[b..b+32]) */
  readonly k64: (a: number, b: number, dst: number) => void
  /** Grows the memory to at least `bytes` and returns a view of all of it. */
  readonly bytes: (minBytes: number) => Uint8Array
}

/** A fresh instance with its own memory (1 page = 64 KiB to start, grown on demand). */
export function instantiateKeccak(): KeccakWasm {
  const instance = new wasm.Instance(wasmModule, {})
  const exports = instance.exports as {
    memory: WasmMemory
    k32: (src: number, dst: number) => void
    k64: (a: number, b: number, dst: number) => void
  }
  const memory = exports.memory
  let view = new Uint8Array(memory.buffer)
  return {
    k32: exports.k32,
    k64: exports.k64,
    bytes: (minBytes) => {
      if (minBytes > memory.buffer.byteLength) {
        memory.grow(Math.ceil((minBytes - memory.buffer.byteLength) / 65536))
      }
      if (view.buffer !== memory.buffer || view.byteLength !== memory.buffer.byteLength) {
        view = new Uint8Array(memory.buffer)
      }
      return view
    }
  }
}
