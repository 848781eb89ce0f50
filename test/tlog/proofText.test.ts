// src/tlog/proofText.ts: C2SP tlog-proof, produced from a stored log and checked, the spec's example parsed,
// and every tampering refused.
//   npx vitest run test/tlog/proofText.test.ts
import * as Crypto from "node:crypto"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { describe, expect, it } from "vitest"
import { signCheckpoint } from "../../src/tlog/checkpoint.ts"
import { memoryHashReader } from "../../src/tlog/memory.ts"
import { ed25519NoteSigner, parseVerifierKey } from "../../src/tlog/note.ts"
import { proveInclusion } from "../../src/tlog/proofs.ts"
import { checkProofText, formatProofText, parseProofText } from "../../src/tlog/proofText.ts"
import { appendHashes, treeHash } from "../../src/tlog/tree.ts"

const run = <A, E>(e: Effect.Effect<A, E>): A => Effect.runSync(e)
const tag = <A, E extends { _tag: string }>(r: Result.Result<A, E>) => (Result.isFailure(r) ? r.failure._tag : "ok")

// c2sp.org/tlog-proof's example (its signatures elided with [...], so only the proof part is checked).
const SPEC_EXAMPLE = `c2sp.org/tlog-proof@v1
extra YWdlLXYxLjIuMS1kYXJ3aW4tYXJtNjQudGFyLmd6kYXJ3aW4tYXJ
index 73894
gSKyXoYZUgZ6jduWYrkDOARinOMGJveXjgMkBTcdPlQ=
B95lDa8R83lS8n0eG+o0buTxRKQTYFi//1U8anccXmA=
EKNzoDWG8LGC0Yp9o+sv3qllpMP9uHQ9B20KNL+Q1zs=
RoopEkOdqkYqMB4MJXrbt/hMjOxsVn0IrWjpz1ZMMes=
AHCioX9nLjsrse6YhjRRmk1WUEirVOLLRoOQ6vfO5vk=

example.com/fancylog
109482
sFodV/vSp5O8n9a8QpW6PRY97tfOSW5bsc2Xl/EQi08=

— example.com/fancylog hI2DJw[...]1roloI=
— witness1.example mJirIklj[...]qY9v2B/5bg==
`

describe("tlog-proof", () => {
  const origin = "anchord.example/log/hardhat-local"
  const signer = ed25519NoteSigner(origin, Crypto.generateKeyPairSync("ed25519").privateKey)
  const verifier = Result.getOrThrow(parseVerifierKey(signer.verifierKey))
  const entries = Array.from({ length: 77 }, (_, i) => new Uint8Array(Crypto.createHash("sha256").update(`record ${i}`).digest()))
  const stored: Array<Uint8Array> = []
  stored.push(...run(appendHashes(0, entries, memoryHashReader(stored))))
  const size = 77
  const checkpoint = signCheckpoint({ origin, size, root: run(treeHash(size, memoryHashReader(stored))) }, [signer])

  it("parses the spec's example", () => {
    const p = Result.getOrThrow(parseProofText(SPEC_EXAMPLE))
    expect(p.index).toBe(73894)
    expect(Buffer.from(p.extra!).subarray(0, 30).toString()).toBe("age-v1.2.1-darwin-arm64.tar.gz")
    expect(p.proof.map((h) => Buffer.from(h).toString("base64"))[4]).toBe("AHCioX9nLjsrse6YhjRRmk1WUEirVOLLRoOQ6vfO5vk=")
    expect(p.checkpoint.startsWith("example.com/fancylog\n109482\n")).toBe(true)
    expect(formatProofText(p)).toBe(SPEC_EXAMPLE)
  })

  it("a proof made from the log checks for every leaf, with and without extra data; round trips through its text", () => {
    for (let index = 0; index < size; index++) {
      const proof = run(proveInclusion(index, size, memoryHashReader(stored)))
      const extra = index % 2 === 0 ? undefined : new Uint8Array([index])
      const text = formatProofText({ extra, index, proof, checkpoint })
      const checked = Result.getOrThrow(checkProofText(text, entries[index]!, origin, [verifier]))
      expect(checked.checkpoint.size).toBe(size)
      expect(checked.proof.index).toBe(index)
      expect(checked.proof.extra).toEqual(extra)
      expect(formatProofText(checked.proof)).toBe(text)
    }
  })

  it("refuses another entry, another index, a changed proof hash, another origin or key, and malformed text", () => {
    const index = 40
    const proof = run(proveInclusion(index, size, memoryHashReader(stored)))
    const text = formatProofText({ index, proof, checkpoint })
    expect(tag(checkProofText(text, entries[index]!, origin, [verifier]))).toBe("ok")
    expect(tag(checkProofText(text, entries[41]!, origin, [verifier]))).toBe("ProofNotVerified")
    expect(tag(checkProofText(text.replace("index 40\n", "index 41\n"), entries[index]!, origin, [verifier]))).toBe("ProofNotVerified")
    const flipped = formatProofText({ index, proof: proof.map((h, i) => (i === 2 ? h.map((b, j) => (j === 5 ? b ^ 4 : b)) : h)), checkpoint })
    expect(tag(checkProofText(flipped, entries[index]!, origin, [verifier]))).toBe("ProofNotVerified")
    expect(tag(checkProofText(text, entries[index]!, "anchord.example/log/other", [verifier]))).toBe("NoteNotVerified")
    const stranger = Result.getOrThrow(parseVerifierKey(ed25519NoteSigner(origin, Crypto.generateKeyPairSync("ed25519").privateKey).verifierKey))
    expect(tag(checkProofText(text, entries[index]!, origin, [stranger]))).toBe("NoteNotVerified")

    const lines = text.split("\n")
    const bad = [
      text.replace("c2sp.org/tlog-proof@v1", "c2sp.org/tlog-proof@v2"),
      text.replace("index 40", "index 040"),
      text.replace("index 40", "index  40"),
      text.replace("index 40\n", ""),
      text.replace("index 40\n", "extra \nindex 40\n"),
      text.replace("index 40\n", "index 40\nextra AQ==\n"),
      text.replace(lines[2]!, lines[2]!.slice(0, -2)),
      text.replace(lines[2]!, `${lines[2]!}AAAA`),
      text.replace("\n\n", "\n"),
      text.slice(0, text.indexOf("\n\n") + 2),
      `${lines.slice(0, 2).join("\n")}\n\n\n${checkpoint}`
    ]
    for (const t of bad) expect(tag(parseProofText(t)), JSON.stringify(t.slice(0, 120))).toBe("MalformedInput")
  })
})
