/**
 * The chaincode's transparency-log checkpoints (anchorWithCheckpoint, getCheckpoint) on the dev peer through
 * the real gateway client: a chain of checkpoints with real RFC 9162 consistency proofs and the refusals;
 * and its consistency verifier against the proofs of test/support/consistency.ts, beyond 2^32 leaves.
 */
import { EndorseError, type Contract } from "@hyperledger/fabric-gateway"
import { createHash, randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { toHex } from "../../src/anchoring/rfc9162.ts"
import type { DevPeer } from "../../src/dev/fabric-peer/index.ts"
import { consistencyProof, consistencyProofLength, logRoot, rootsFromConsistencyProof } from "../support/consistency.ts"
import { connectGateway, randomRoot, startPeer, type Connection } from "./helpers.ts"
// @ts-expect-error -- plain CommonJS without declarations, loaded as the dev peer loads the chaincode
import { verifyConsistency } from "../../contracts/fabric/lib/consistency.js"

const verify = verifyConsistency as (m: number, n: number, oldRoot: Buffer, newRoot: Buffer, proof: ReadonlyArray<Buffer>) => boolean
const hx = (bytes: Uint8Array): string => `0x${toHex(bytes)}`
const records = Array.from({ length: 70 }, (_, i) => new Uint8Array(createHash("sha256").update(`fabric-record:${i}`).digest()))
const root = (n: number) => hx(logRoot(records, 0, n))
const proofJson = (m: number, n: number) => JSON.stringify(m === 0 ? [] : consistencyProof(records.slice(0, n), m).map(hx))
const decode = (bytes: Uint8Array) => JSON.parse(Buffer.from(bytes).toString("utf8"))

/** The chaincode's message of a refused endorsement. */
const refusal = async (promise: Promise<unknown>): Promise<string> => {
  const error = await promise.then(() => undefined, (e: unknown) => e)
  expect(error).toBeInstanceOf(EndorseError)
  return (error as EndorseError).details[0]!.message
}

describe("chaincode checkpoints on the Fabric dev peer", () => {
  let devPeer: DevPeer
  let connection: Connection
  let contract: Contract

  beforeAll(async () => {
    devPeer = await startPeer()
    connection = connectGateway(devPeer)
    contract = connection.gateway.getNetwork(devPeer.channel).getContract(devPeer.chaincode)
  })
  afterAll(async () => {
    connection?.close()
    await devPeer?.close()
  })

  const grow = (m: number, n: number, overrides: { oldSize?: number; newRoot?: string; proof?: string; logRoot?: string } = {}) =>
    contract.submitTransaction(
      "anchorWithCheckpoint",
      randomRoot(),
      String(n - m),
      `batch-${m}-${n}`,
      overrides.logRoot ?? hx(logRoot(records, m, n)),
      String(overrides.oldSize ?? m),
      overrides.newRoot ?? root(n),
      overrides.proof ?? proofJson(m, n)
    )
  const checkpoint = async () => decode(await contract.evaluateTransaction("getCheckpoint"))

  it("keeps a chain of checkpoints with real proofs, and refuses forged, stale, shrinking and replayed ones", async () => {
    expect(await checkpoint()).toEqual({ size: 0, root: null })
    // The first checkpoint: no proof, and the log's root is the batch's own.
    expect(await refusal(grow(0, 3, { proof: JSON.stringify([root(3)]) }))).toMatch(/InconsistentCheckpoint/)
    expect(await refusal(grow(0, 3, { newRoot: root(4) }))).toMatch(/InconsistentCheckpoint/)
    expect(await refusal(grow(2, 3))).toMatch(/CheckpointMismatch: oldSize 2 is not the stored log size 0/)

    const sizes = [0, 3, 4, 5, 8, 16, 17, 31, 32, 64]
    for (const [i, n] of sizes.slice(1).entries()) {
      const record = decode(await grow(sizes[i]!, n))
      expect(record.checkpoint).toEqual({ size: n, root: root(n) })
      expect(await checkpoint()).toEqual({ size: n, root: root(n) })
    }

    // Forged: each hash of a real proof flipped in turn.
    const proof = JSON.parse(proofJson(64, 70)) as Array<string>
    for (const j of proof.keys()) {
      const forged = proof.map((h, k) => (k === j ? h.slice(0, -1) + (h.endsWith("0") ? "1" : "0") : h))
      expect(await refusal(grow(64, 70, { proof: JSON.stringify(forged) }))).toMatch(/^chaincode response 500, InconsistentCheckpoint/)
    }
    expect(await refusal(grow(64, 70, { newRoot: root(69) }))).toMatch(/InconsistentCheckpoint/)
    expect(await refusal(grow(64, 70, { proof: "[]" }))).toMatch(/InconsistentCheckpoint/)
    // Replayed, shrinking, ahead of the stored size.
    expect(await refusal(grow(32, 64))).toMatch(/CheckpointMismatch: oldSize 32 is not the stored log size 64/)
    expect(await refusal(grow(10, 20))).toMatch(/CheckpointMismatch: oldSize 10 is not the stored log size 64/)
    expect(await refusal(grow(65, 70))).toMatch(/CheckpointMismatch: oldSize 65 is not the stored log size 64/)
    expect(await refusal(grow(64, 70, { proof: "not json" }))).toMatch(/invalid consistency proof/)
    expect(await refusal(grow(64, 70, { oldSize: -1 }))).toMatch(/invalid oldSize/)
    expect(await checkpoint()).toEqual({ size: 64, root: root(64) })

    const record = decode(await grow(64, 70))
    expect(decode(await contract.evaluateTransaction("lookup", record.root))).toEqual(record)
    expect(await checkpoint()).toEqual({ size: 70, root: root(70) })
    // anchor and anchorWithLogRoot leave the log alone.
    await contract.submitTransaction("anchor", randomRoot(), "5", "plain")
    await contract.submitTransaction("anchorWithLogRoot", randomRoot(), "5", "logged", randomRoot())
    expect(await checkpoint()).toEqual({ size: 70, root: root(70) })
  })
})

describe("the chaincode's consistency verifier", () => {
  it("accepts every real proof up to 40 leaves and refuses each with one hash flipped", () => {
    for (let n = 2; n <= 40; n++) {
      for (let m = 1; m < n; m++) {
        const proof = consistencyProof(records.slice(0, n), m).map((p) => Buffer.from(p))
        const [oldRoot, newRoot] = [Buffer.from(logRoot(records, 0, m)), Buffer.from(logRoot(records, 0, n))]
        expect(verify(m, n, oldRoot, newRoot, proof), `${m} -> ${n}`).toBe(true)
        for (const j of proof.keys()) {
          const forged = proof.map((p, k) => (k === j ? Buffer.from(p.map((b, i) => (i === 0 ? b ^ 1 : b))) : p))
          expect(verify(m, n, oldRoot, newRoot, forged)).toBe(false)
        }
        expect(verify(m, n, newRoot, newRoot, proof)).toBe(false)
        expect(verify(m, n + 1, oldRoot, newRoot, [...proof, newRoot])).toBe(false)
      }
    }
  })

  it("links sizes past 2^32 (no bitwise arithmetic)", () => {
    for (const [m, n] of [[2 ** 33 + 12_345, 2 ** 33 + 20_000], [2 ** 40 - 1, 2 ** 40 + 999], [3 * 2 ** 45, 3 * 2 ** 45 + 1]] as const) {
      const proof = Array.from({ length: consistencyProofLength(m, n) }, () => randomBytes(32))
      const roots = rootsFromConsistencyProof(m, n, proof, randomBytes(32))!
      expect(verify(m, n, Buffer.from(roots.oldRoot), Buffer.from(roots.newRoot), proof), `${m} -> ${n}`).toBe(true)
      // A new size whose proof has another shape (sizes of the same shape pass: RFC 9162 binds them through the root).
      const other = 2 * n
      expect(consistencyProofLength(m, other)).not.toBe(proof.length)
      expect(verify(m, other, Buffer.from(roots.oldRoot), Buffer.from(roots.newRoot), proof)).toBe(false)
    }
  })
})
