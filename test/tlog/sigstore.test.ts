// A third party checks what src/tlog produces: @sigstore/verify (Sigstore's JavaScript verifier, a
// devDependency) verifies our signed checkpoints (C2SP signed-note + tlog-checkpoint, Ed25519) and our
// inclusion proofs (RFC 6962, with its own decomposition into inner and border hashes), as it does for
// Rekor v2's entries. It knows nothing of anchord: the entry below is the shape of a Rekor log entry, the
// authority the shape of a trusted root's log. Its internal module is used because its public API wants a
// whole Sigstore bundle around the entry; the package has no "exports" map, so the path is reachable.
//   npx vitest run test/tlog/sigstore.test.ts
import * as Crypto from "node:crypto"
import { verifyTLogInclusion } from "@sigstore/verify/dist/tlog/index.js"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { describe, expect, it } from "vitest"
import { signCheckpoint } from "../../src/tlog/checkpoint.ts"
import { memoryHashReader } from "../../src/tlog/memory.ts"
import { ed25519NoteSigner, type NoteSigner } from "../../src/tlog/note.ts"
import { proveInclusion } from "../../src/tlog/proofs.ts"
import { formatProofText, parseProofText } from "../../src/tlog/proofText.ts"
import { appendHashes, treeHash } from "../../src/tlog/tree.ts"

type Entry = Parameters<typeof verifyTLogInclusion>[0]
type Authority = Parameters<typeof verifyTLogInclusion>[1][number]

const run = <A, E>(e: Effect.Effect<A, E>): A => Effect.runSync(e)
const origin = "anchord.example/log/hardhat-local"

const keyIdBytes = (s: NoteSigner) => {
  const b = Buffer.alloc(4)
  b.writeUInt32BE(s.keyId)
  return b
}

/** A Rekor-shaped log entry: the logged bytes (our record hash), its index, the proof and the signed checkpoint. */
const entryOf = (signer: NoteSigner, body: Uint8Array, index: number, size: number, root: Uint8Array, proof: ReadonlyArray<Uint8Array>,
  checkpoint: string): Entry => ({
    logIndex: String(index),
    logId: { keyId: keyIdBytes(signer) },
    kindVersion: { kind: "hashedrekord", version: "0.0.2" },
    integratedTime: "0",
    inclusionPromise: undefined,
    inclusionProof: {
      logIndex: String(index),
      rootHash: Buffer.from(root),
      treeSize: String(size),
      hashes: proof.map((h) => Buffer.from(h)),
      checkpoint: { envelope: checkpoint }
    },
    canonicalizedBody: Buffer.from(body)
  })

describe("@sigstore/verify checks our checkpoints and inclusion proofs", () => {
  const { privateKey, publicKey } = Crypto.generateKeyPairSync("ed25519")
  const signer = ed25519NoteSigner(origin, privateKey)
  const authority: Authority = {
    logID: keyIdBytes(signer),
    baseURL: `https://${origin}`,
    publicKey,
    validFor: { start: new Date(0), end: new Date(8.64e15) }
  }
  const entries = Array.from({ length: 300 }, (_, i) => new Uint8Array(Crypto.createHash("sha256").update(`record ${i}`).digest()))
  const stored: Array<Uint8Array> = []
  stored.push(...run(appendHashes(0, entries, memoryHashReader(stored))))

  it("every leaf of trees of several sizes verifies", () => {
    for (const size of [1, 2, 3, 7, 8, 255, 256, 257, 300]) {
      const root = run(treeHash(size, memoryHashReader(stored)))
      const checkpoint = signCheckpoint({ origin, size, root }, [signer])
      for (let index = 0; index < size; index += size > 20 ? 13 : 1) {
        const proof = run(proveInclusion(index, size, memoryHashReader(stored)))
        expect(() => verifyTLogInclusion(entryOf(signer, entries[index]!, index, size, root, proof, checkpoint), [authority]), `${index}/${size}`).not.toThrow()
      }
    }
  })

  it("the pieces of our tlog-proof text verify with it", () => {
    const size = 300
    const root = run(treeHash(size, memoryHashReader(stored)))
    const text = formatProofText({ index: 123, proof: run(proveInclusion(123, size, memoryHashReader(stored))),
      checkpoint: signCheckpoint({ origin, size, root }, [signer]) })
    const p = Result.getOrThrow(parseProofText(text))
    expect(() => verifyTLogInclusion(entryOf(signer, entries[123]!, p.index, size, root, p.proof, p.checkpoint), [authority])).not.toThrow()
  })

  it("and it refuses what we refuse: another leaf, a changed proof, a checkpoint by another key or changed after signing", () => {
    const size = 257
    const root = run(treeHash(size, memoryHashReader(stored)))
    const checkpoint = signCheckpoint({ origin, size, root }, [signer])
    const proof = run(proveInclusion(100, size, memoryHashReader(stored)))
    const check = (e: Entry) => () => verifyTLogInclusion(e, [authority])
    expect(check(entryOf(signer, entries[100]!, 100, size, root, proof, checkpoint))).not.toThrow()
    expect(check(entryOf(signer, entries[101]!, 100, size, root, proof, checkpoint))).toThrow(/root hash does not match/)
    expect(check(entryOf(signer, entries[100]!, 100, size, root, proof.map((h, i) => (i === 3 ? h.map((b) => b ^ 1) : h)), checkpoint))).toThrow(
      /root hash does not match/
    )
    const other = ed25519NoteSigner(origin, Crypto.generateKeyPairSync("ed25519").privateKey)
    expect(check(entryOf(signer, entries[100]!, 100, size, root, proof, signCheckpoint({ origin, size, root }, [other])))).toThrow(/checkpoint signature/)
    expect(check(entryOf(signer, entries[100]!, 100, size, root, proof, checkpoint.replace("\n257\n", "\n258\n")))).toThrow(/checkpoint signature/)
  })
})
