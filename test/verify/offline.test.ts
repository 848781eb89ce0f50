// Offline parts of the verifier: the hand-encoded calldata against viem, input shapes, Fabric block
// hash against the dev peer's, exit codes. No chain, no database.
//   npx vitest run test/verify/offline.test.ts
import { common } from "@hyperledger/fabric-protos"
import { Effect } from "effect"
import { encodeFunctionData, parseAbi, toEventSelector } from "viem"
import { describe, expect, it } from "vitest"
import { buildTree } from "../../src/anchoring/merkle.ts"
import { blockHeaderHash } from "../../src/dev/fabric-peer/index.ts"
import { recordHash } from "../../src/canonical/jcs.ts"
import { ANCHORED_TOPIC, encodeGetAnchor, encodeVerify } from "../../src/verify/evm.ts"
import { fabricBlockHash } from "../../src/verify/fabric.ts"
import { InputError, readInput } from "../../src/verify/input.ts"
import { verifyInput } from "../../src/verify/verify.ts"
import { formatReport, type Report } from "../../src/verify/report.ts"

const abi = parseAbi([
  "function verify(bytes32 recordHash, bytes32[] proof, bytes32 root) view returns (bool)",
  "function getAnchor(bytes32 root) view returns (uint64, uint64, uint64, uint32)"
])

const data = [{ a: 1 }, { b: "two" }, { c: [3] }]
const hashes = data.map(recordHash)
const tree = buildTree(hashes)
const bundle = (i: number) => ({
  version: 1,
  recordId: "a".repeat(24),
  hash: hashes[i],
  hashAlgorithm: "sha256",
  canonicalization: "RFC8785-JCS",
  leafEncoding: "openzeppelin-standard-merkle-tree:bytes32",
  anchors: [{ chainType: "evm", networkId: "x", chainId: 1, contractAddress: "0x" + "11".repeat(20), batchId: 1, merkleRoot: tree.root,
    merkleProof: tree.proofs[i], txHash: "0x" + "22".repeat(32), blockNumber: 5, blockHash: "0x" + "33".repeat(32), anchoredAt: null }]
})
const offline = (doc: unknown, extra: object = {}) => Effect.runPromise(verifyInput(readInput(doc), { rpcFor: () => undefined, offline: true, ...extra }))

describe("verifier, offline", () => {
  it("encodes verify/getAnchor calldata exactly as viem does; the Anchored topic is right", () => {
    const args = [`0x${hashes[0]}`, tree.proofs[0], tree.root] as const
    expect(encodeVerify(hashes[0]!, tree.proofs[0]!, tree.root)).toBe(encodeFunctionData({ abi, functionName: "verify", args: args as never }))
    expect(encodeVerify(hashes[0]!, [], tree.root)).toBe(encodeFunctionData({ abi, functionName: "verify", args: [`0x${hashes[0]}`, [], tree.root] }))
    expect(encodeGetAnchor(tree.root)).toBe(encodeFunctionData({ abi, functionName: "getAnchor", args: [tree.root] }))
    expect(ANCHORED_TOPIC).toBe(toEventSelector("Anchored(uint64,bytes32,address,uint32)"))
  })

  it("reads bundles, proof responses, IN_PLACE documents and record lookups", () => {
    expect(readInput(bundle(0)).kind).toBe("bundle")
    expect(readInput({ success: true, data: bundle(0) }).kind).toBe("bundle")
    const doc = { ...data[1], _anchor: bundle(1) }
    const inPlace = readInput(doc)
    expect(inPlace.kind).toBe("in-place")
    expect(inPlace.data).toEqual(data[1])
    const record = { recordId: "a".repeat(24), hash: hashes[2], status: "ANCHORED", data: data[2], anchors: bundle(2).anchors }
    const fromRecord = readInput({ success: true, data: record })
    expect(fromRecord.kind).toBe("record")
    expect(fromRecord.data).toEqual(data[2])
    expect(readInput({ ...record, data: doc, hash: hashes[1] }).kind).toBe("in-place")
    expect(() => readInput({ hello: "world" })).toThrow(InputError)
    expect(() => readInput({ ...bundle(0), version: 2 })).toThrow(/not a supported proof bundle version/)
  })

  it("offline: hash and proof pass, chain checks skipped; tampering fails", async () => {
    const ok = await offline({ ...data[0], _anchor: bundle(0) })
    expect(ok.outcome).toBe("verified")
    expect(ok.checks.map((c) => `${c.id}:${c.status}`)).toEqual(["format:pass", "hash:pass", "merkle-proof:pass", "evm.chain:skip"])
    const changed = await offline({ ...data[0], a: 2, _anchor: bundle(0) })
    expect(changed.exitCode).toBe(1)
    // --data overrides the input's own data.
    expect((await offline(bundle(0), { data: { value: data[0] } })).outcome).toBe("verified")
    expect((await offline(bundle(0), { data: { value: data[1] } })).outcome).toBe("not-verified")
    // Without --offline and without an RPC: could not check (exit 2), not "not verified".
    const noRpc = await Effect.runPromise(verifyInput(readInput(bundle(0)), { rpcFor: () => undefined }))
    expect(noRpc.exitCode).toBe(2)
  })

  it("Fabric block hash: SHA-256 of the DER header, as the dev peer computes it", () => {
    for (const n of [0, 1, 127, 128, 255, 256, 70_000]) {
      const header = new common.BlockHeader()
      header.setNumber(n)
      header.setPreviousHash(Buffer.alloc(n === 0 ? 0 : 32, 7))
      header.setDataHash(Buffer.alloc(32, 9))
      expect(fabricBlockHash(BigInt(n), header.getPreviousHash_asU8(), header.getDataHash_asU8())).toBe(blockHeaderHash(header).toString("hex"))
    }
  })
})

describe("the report's hash line", () => {
  const report = (input: string, hashSource: Report["hashSource"]): Report => ({
    outcome: "verified",
    exitCode: 0,
    recordId: null,
    hash: "ab".repeat(32),
    hashSource,
    input,
    anchors: [],
    checks: []
  })
  it("names where the hash came from: the data, the bundle, or --hash beside a receipt (which has no bundle)", () => {
    expect(formatReport(report("bundle", "data"))).toContain("hash recomputed from the data")
    expect(formatReport(report("bundle", "bundle"))).toContain("hash as stated in the bundle")
    const receipt = formatReport(report("cose-receipt", "bundle"))
    expect(receipt).toContain("hash as given with --hash, not recomputed")
    expect(receipt).not.toContain("bundle")
  })
})
