// Merkle trees of record hashes, byte-for-byte identical to OpenZeppelin's
// `StandardMerkleTree.of(hashes.map((h) => [h]), ["bytes32"])` (@openzeppelin/merkle-tree 1.x)
// and verifiable on chain with OpenZeppelin `MerkleProof` (AnchorRegistry.verify).
//
// The rules, as implemented by @openzeppelin/merkle-tree (dist/merkletree.js, core.js, hashes.js):
// - leaf = keccak256(keccak256(abi.encode(bytes32 recordHash))), and abi.encode of one bytes32
//   is the 32 bytes themselves;
// - leaves are sorted ascending by leaf hash (stable: equal leaves - duplicate record hashes -
//   keep their input order; every duplicate stays in the tree and gets its own proof);
// - the tree is a complete binary tree in an array of 2n-1 nodes: sorted leaf i sits at index
//   2n-2-i (leaves in reverse order at the end), node i = keccak256(sort(node 2i+1, node 2i+2))
//   (the two children concatenated smaller-first);
// - the proof of a leaf is the list of siblings from the leaf up to (excluding) the root.
// A single leaf is its own root, with an empty proof.
//
// Everything runs in the memory of a small WebAssembly keccak (./keccak-wasm.ts): input hashes
// are written there, leaves and nodes hashed in place, and hex strings produced once per node
// and shared between proofs. (viem's keccak256 costs ~8 us per call on the 2-core dev machine;
// the tree of 10,000 leaves needs 30,000 hashes.)
import { Buffer } from "node:buffer"
import { instantiateKeccak, type KeccakWasm } from "./keccak-wasm.ts"
import { HASH_RE } from "./rfc9162.ts"

export type Hex = `0x${string}`

export interface MerkleTree {
  /** The StandardMerkleTree root, 0x + 64 lowercase hex. */
  readonly root: Hex
  /** `proofs[i]` is the proof of `hashes[i]` (input order), elements 0x-prefixed. */
  readonly proofs: ReadonlyArray<ReadonlyArray<Hex>>
  /** `leaves[i]` is the leaf hash of `hashes[i]` (input order). */
  readonly leaves: ReadonlyArray<Hex>
}

/**
 * Writes a 32-byte hash given as hex into `buf` at `off`. Validation rides on the decoder:
 * Buffer#write("hex") stops at the first non-hex character, so anything but 64 hex digits
 * (after an optional 0x) writes fewer than 32 bytes.
 */
const parseHashInto = (hash: string, buf: Buffer, off: number, what: string): void => {
  if (typeof hash === "string") {
    const body = hash.length === 66 && hash.charCodeAt(0) === 48 && hash.charCodeAt(1) === 120 ? hash.slice(2) : hash
    if (body.length === 64 && buf.write(body, off, 32, "hex") === 32) return
  }
  throw new TypeError(`${what}: expected 64 hex characters (optionally 0x-prefixed), got ${JSON.stringify(hash)}`)
}

/** Lexicographic (= numeric, big-endian) comparison of two 32-byte nodes of one buffer. */
const compareNodes = (buf: Uint8Array, a: number, b: number): number => {
  for (let i = 0; i < 32; i++) {
    const d = buf[a + i]! - buf[b + i]!
    if (d !== 0) return d
  }
  return 0
}

/** mem[out] = keccak256(sorted(mem[a], mem[b])), byte offsets into the keccak memory. */
const hashPair = (k: KeccakWasm, mem: Uint8Array, a: number, b: number, out: number): void => {
  if (compareNodes(mem, a, b) <= 0) k.k64(a, b, out)
  else k.k64(b, a, out)
}

/** The shared keccak instance, for trees up to SHARED_MEMORY_LIMIT bytes of memory. */
let shared: KeccakWasm | undefined
/** Bigger trees get their own instance, dropped afterwards, so the memory is not kept. */
const SHARED_MEMORY_LIMIT = 64 * 1024 * 1024

const keccakFor = (bytes: number): KeccakWasm => {
  if (bytes > SHARED_MEMORY_LIMIT) return instantiateKeccak()
  shared ??= instantiateKeccak()
  return shared
}

/** A Buffer over the keccak memory (valid until the memory grows: take it after sizing). */
const memoryBuffer = (k: KeccakWasm, minBytes: number): Buffer => {
  const view = k.bytes(minBytes)
  return Buffer.from(view.buffer, view.byteOffset, view.byteLength)
}

/**
 * The hashed tree in the keccak memory: node t at byte `tree + 32 t` of `mem`, input hash i at node
 * `nodeOfInput[i]`. Valid until the next use of the shared keccak instance.
 */
function hashTree(hashes: ReadonlyArray<string>, what: string) {
  const n = hashes.length
  if (n === 0) throw new TypeError(`${what}: at least one hash is required`)
  const size = 2 * n - 1

  // Memory: leaf hashes in input order at [0, 32n), the tree at [TREE, TREE + 32 size).
  const TREE = n * 32
  const k = keccakFor(TREE + size * 32)
  const mem = memoryBuffer(k, TREE + size * 32)

  for (let i = 0; i < n; i++) {
    const off = i * 32
    parseHashInto(hashes[i]!, mem, off, `${what}: hashes[${i}]`)
    k.k32(off, off)
    k.k32(off, off)
  }

  // Stable sort of input indices by leaf hash. The first 6 bytes as a number decide almost
  // every comparison; ties fall back to the full 32 bytes, then to the input order.
  const order = new Array<number>(n)
  const prefix = new Float64Array(n)
  for (let i = 0; i < n; i++) {
    order[i] = i
    prefix[i] = mem.readUIntBE(i * 32, 6)
  }
  order.sort((a, b) => prefix[a]! - prefix[b]! || compareNodes(mem, a * 32, b * 32) || a - b)

  // Node t at byte TREE + 32 t. Sorted leaf i goes to node size-1-i.
  const nodeOfInput = new Int32Array(n)
  for (let i = 0; i < n; i++) {
    const input = order[i]!
    const node = size - 1 - i
    nodeOfInput[input] = node
    mem.copyWithin(TREE + node * 32, input * 32, input * 32 + 32)
  }
  for (let t = size - 1 - n; t >= 0; t--) {
    hashPair(k, mem, TREE + (2 * t + 1) * 32, TREE + (2 * t + 2) * 32, TREE + t * 32)
  }
  return { n, size, TREE, mem, nodeOfInput }
}

export interface MerkleLevels {
  /** The StandardMerkleTree root, 0x + 64 lowercase hex. */
  readonly root: Hex
  /** Every node, in the layout of ./batchTrees.ts (`merkleProofOffsets`): the node array reversed, leaves first. */
  readonly levels: Uint8Array
  /** `positions[i]`: the leaf position (0 = smallest leaf hash) of `hashes[i]`. */
  readonly positions: Int32Array
}

/**
 * The same tree as `buildTree`, without the proofs: its nodes as stored on the batch (`anchor_batches.merkle_levels`)
 * and each input's leaf position, from which ./batchTrees.ts derives any proof.
 * @throws TypeError on an empty list or a malformed hash.
 */
export function buildTreeLevels(hashes: ReadonlyArray<string>): MerkleLevels {
  const { TREE, mem, nodeOfInput, size } = hashTree(hashes, "buildTreeLevels")
  // Plain Uint8Array operations: this module also runs in the browser (web/shims/node-buffer.ts has no copy).
  const levels = new Uint8Array(size * 32)
  // Node t at byte 32 (size - 1 - t): sorted leaf p at 32 p.
  for (let t = 0; t < size; t++) levels.set(mem.subarray(TREE + t * 32, TREE + t * 32 + 32), (size - 1 - t) * 32)
  const positions = new Int32Array(nodeOfInput.length)
  for (let i = 0; i < positions.length; i++) positions[i] = size - 1 - nodeOfInput[i]!
  return { root: `0x${mem.toString("hex", TREE, TREE + 32)}`, levels, positions }
}

/**
 * Builds the StandardMerkleTree (`["bytes32"]`) of record hashes and every leaf's proof.
 * @param hashes record hashes, 64 hex characters each (0x prefix and upper case accepted).
 * Duplicates are allowed (as in OpenZeppelin's library): each occurrence is its own leaf.
 * The node cuts with `buildTreeLevels`; this is the reference its stored levels and derived
 * proofs are held to (test/anchoring/batch-trees.test.ts) and what the tests build proofs with.
 * @throws TypeError on an empty list or a malformed hash.
 */
export function buildTree(hashes: ReadonlyArray<string>): MerkleTree {
  const { TREE, mem, n, nodeOfInput, size } = hashTree(hashes, "buildTree")

  // Hex of every node (each is the root, a leaf or a proof element): one native conversion,
  // then 64-character slices, each shared by all the proofs it appears in.
  const allHex = mem.toString("hex", TREE, TREE + size * 32)
  const hex = new Array<Hex>(size)
  for (let t = 0; t < size; t++) hex[t] = `0x${allHex.substring(64 * t, 64 * t + 64)}`
  const hexOf = (t: number): Hex => hex[t]!

  const proofs = new Array<Array<Hex>>(n)
  const leaves = new Array<Hex>(n)
  for (let i = 0; i < n; i++) {
    let t = nodeOfInput[i]!
    leaves[i] = hexOf(t)
    const proof: Array<Hex> = []
    while (t > 0) {
      // Sibling: odd indices are left children (sibling t+1), even ones right (t-1).
      proof.push(hexOf(t % 2 === 1 ? t + 1 : t - 1))
      t = (t - 1) >> 1
    }
    proofs[i] = proof
  }

  return { root: hexOf(0), proofs, leaves }
}

/** The StandardMerkleTree `["bytes32"]` leaf of a record hash: keccak256(keccak256(hash)). */
export function leafHash(recordHash: string): Hex {
  const k = keccakFor(32)
  const mem = memoryBuffer(k, 32)
  parseHashInto(recordHash, mem, 0, "leafHash")
  k.k32(0, 0)
  k.k32(0, 0)
  return `0x${mem.toString("hex", 0, 32)}`
}

/**
 * The root implied by a record hash and its proof (OpenZeppelin `MerkleProof.processProof` with
 * the StandardMerkleTree leaf).
 * @throws TypeError on a malformed hash or proof element.
 */
export function processProof(recordHash: string, proof: ReadonlyArray<string>): Hex {
  // mem[0..32): current node, mem[32..64): proof element.
  const k = keccakFor(64)
  const mem = memoryBuffer(k, 64)
  parseHashInto(recordHash, mem, 0, "processProof: recordHash")
  k.k32(0, 0)
  k.k32(0, 0)
  for (let i = 0; i < proof.length; i++) {
    parseHashInto(proof[i]!, mem, 32, `processProof: proof[${i}]`)
    hashPair(k, mem, 0, 32, 0)
  }
  return `0x${mem.toString("hex", 0, 32)}`
}

/**
 * True when `proof` links `recordHash` to `root`. Off-chain twin of `AnchorRegistry.verifyProof`
 * and of `StandardMerkleTree.verify(root, ["bytes32"], [recordHash], proof)`. Malformed input
 * (not 32-byte hex) gives false, not an exception. It says nothing about whether `root` is
 * anchored anywhere: that is `AnchorRegistry.verify` / `getAnchor` on chain.
 */
export function verifyProof(recordHash: string, proof: ReadonlyArray<string>, root: string): boolean {
  if (typeof root !== "string" || !HASH_RE.test(root) || !Array.isArray(proof)) return false
  let computed: Hex
  try {
    computed = processProof(recordHash, proof)
  } catch {
    return false
  }
  return computed.slice(2) === (root.length === 66 ? root.slice(2) : root).toLowerCase()
}
