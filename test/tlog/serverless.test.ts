// A third party's log: the test log of github.com/transparency-dev/serverless-log (testdata/, Apache-2.0),
// built by its Go tools (testdata/build_log.sh: one leaf at a time, a checkpoint after each, signed with
// golang.org/x/mod/sumdb/note by the key "astra"). Our tree hashes give its roots, our signer given its
// private key writes its checkpoints byte for byte (Ed25519 is deterministic), our verifier opens them with
// its vkey, and our consistency proofs join every pair of them.
//   npx vitest run test/tlog/serverless.test.ts
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { describe, expect, it } from "vitest"
import { verifyConsistency } from "../../src/tlog/check.ts"
import { type Checkpoint, openCheckpoint, signCheckpoint } from "../../src/tlog/checkpoint.ts"
import { memoryHashReader } from "../../src/tlog/memory.ts"
import { parseSignerKey, parseVerifierKey } from "../../src/tlog/note.ts"
import { proveConsistency } from "../../src/tlog/proofs.ts"
import { appendHashes, treeHash } from "../../src/tlog/tree.ts"

const SECRET_KEY = "PRIVATE+KEY+astra+cad5a3d2+ASgwwenlc0uuYcdy7kI44pQvuz1fw8cS5NqS8RkZBXoy"
const PUBLIC_KEY = "astra+cad5a3d2+AZJqeuyE/GnknsCNh1eCtDtwdAwKBddOlS8M2eI1Jt4b"
const ORIGIN = "example.com/testdata"
const LEAVES = ["one", "two", "three", "four", "five", "six", "seven", "eit", "nain", "ten", "ileven", "twelf", "threeten", "fourten", "fivten"]

// testdata/log/checkpoint.<size>, size 0 to 15: [root, the astra signature].
const CHECKPOINTS = [
  ["47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", "ytWj0vyk8mOOKGTcc4inCsUD4jQTYNX/r820NAqdU6Fsj8PpEU+m74Z6SMW0BGapHgIw2xsYd9P3+E8PdXWcj0zTeAs="],
  ["0Nc2CrefWKseHj/mStd+LqC8B+NrX0btIiPt2SmN+ek=", "ytWj0qJ+vbcrczZs9oOK0B9o0Z2H0BJB+ekrNMeJclrjpCY60XqAE5CJV9q6jRnUqthwdpkXLMhxCkv/7OUUCtZvNwM="],
  ["T1X2GdkhUjV3iyufF9b0kVsWFxIU0VI4EpNml2Teci4=", "ytWj0hjRw9ubRMzxxs+mNZaMlB9++99U9CUeomuJ+GkPOb+/fcbOk4mWcWEG6P0QW5saBs7v+GRFOfaPQg5+8GxXxgg="],
  ["Wqx3HImawpLnS/Gv4ubjAvi1WIOy0b8Ze0amvqbavKk=", "ytWj0ueOKrf0tsoN1fnZzOcNi+KmijMdhv9niviS99k+jv3beiTCfPK0CVbltoKci4j0gFT5Lmm2zDl5xF9aFg87+gc="],
  ["zY1lN35vrXYAPixXSd59LsU29xUJtuW4o2dNNg5Y2Co=", "ytWj0nB8tPqDn24svaVacHS7B4QftyzoBsxVVHBiAY9jR24WwxScVLzLzqEKw/GsKz1/ytIx94on45wiDlgMgXOMrws="],
  ["gy5gl3aksFyiCO95a/1vLXz88A3dRq+0l9Sxte8ZqZQ=", "ytWj0sl3hjBnXaGvpD2sl/C0yObGIWtOeHjIASoBnKzhFYiJ/8g6hrzIQw/nLvcZEdc5It/ydHam4e3SOwvxz3R/qgM="],
  ["a6sWvsc2eEzmj72vah7mZ5dwFltivehh2b11qwlp5Jg=", "ytWj0v8bVfJyM+jmybi9OwGPU5CVfG/fiq3eQcZ+VjCQ1FmE2Ilbi9Mbx/90uZyHGFZ7dLD8x46SIjUnZFSClXePuQQ="],
  ["IrSXADBqJ7EQoUODSDKROySgNveeL6CFhik2w/+fS7U=", "ytWj0mbLo8zw6TpvMVTJMPVVaZTul3QfYjC4BpORAFiglmHyFihMwVJHiHXWQmyyeCdPRKAaj8YpHEKjBfDMmKPL9Q0="],
  ["bC+VwvrJbalNVjfkdI8kUgs7mJoXrqiXCE7bgnD28pY=", "ytWj0vwkDwABoRkcTQlqDTO6gxjPW5yJKQ3ohF0v+6eQCGG3R2HRbQisMteoio9aJJp04zHT6WuVLQRO+XON8qAzzgY="],
  ["CvhHViE3S9E3htHLR+25mapWoGCJ3WckMq1UtC3VmEY=", "ytWj0p3+4cahzXg243Bi/EJ5hMKipsU5Zl8+7hbgqgzd+c2Qgy1N9pLkcDMUkrlj/aP0a1oyAkjMF7hjFiRkuCgs8gs="],
  ["y8/gZsZCtitsMan09tY+k8I7Qpr7Y5fbO2tLi9GQnfU=", "ytWj0vy8CYTO6BiXMpCn3a9TC4NrU5dzXyTp3I52DXDtO7AJAd60D0v+cuAw4TaSPz/bynWW4jTkj2q6/TRSTfzXwgQ="],
  ["Yok1cS5VdokGLBy73BC2I16b3atss6KBN9jnIi6Fz/A=", "ytWj0omfGzZ0zxlY8JFZokkI8Z7px2eAY8UdMFbAt1Cweqg+caN6xcOMxxpFz0xHciHBkWsmg45qwfPQxGiQH/SibAY="],
  ["uZo6M+IhVna+CLgWCrJs0xBPUHbozHkYTQASduHSLME=", "ytWj0kRBzdccQFu4IXx3NLOdZn84CkdyPeHs+9J0hKomAJEz/fP+lMmY2cQ9WWh9qNzvNhR+knpKgKWWCCyAU4b5hw4="],
  ["av0kLH0VkkVDrTuZzBGIx7d9z5G1l/GlKz/nAV/8woQ=", "ytWj0mGI7Qtgio2aXV9ScWa+TLp5b05s6oW9ot698HWC03uQR//7FoxWqD6m+L78OzhiJTWUWnfQ1fHvrS7TU8azWQM="],
  ["SvCd38yNade7xEPY1a/aAc1M3A2AHYVF8lIiUnsH1ao=", "ytWj0ggzIhG5oKP/aDQswtPy4K6isUFRcNPXnJAzd0f5KcYrbgmRDI4Na6WYw6eQXOscao6xwSkcyGMw8FXkTbzcdgo="],
  ["rKbDipCvhuX1GZ7g5BBe8sA6BbJ7ja/1nk427v383cs=", "ytWj0iUyv3abfvt9ea52PCdTsNBiHBss+L7Z1nMhVcsoh+Re7YASWz78PrjiocC8gvkBUaDrV2Y3Ez2THNxCWnbpkQE="]
]

const run = <A, E>(e: Effect.Effect<A, E>): A => Effect.runSync(e)
const b64 = (s: string) => new Uint8Array(Buffer.from(s, "base64"))
const published = (size: number) => `${ORIGIN}\n${size}\n${CHECKPOINTS[size]![0]}\n\n— astra ${CHECKPOINTS[size]![1]}\n`

describe("transparency-dev/serverless-log's test log", () => {
  const stored: Array<Uint8Array> = []
  stored.push(...run(appendHashes(0, LEAVES.map((l) => new Uint8Array(Buffer.from(l))), memoryHashReader(stored))))
  const reader = memoryHashReader(stored)
  const verifier = Result.getOrThrow(parseVerifierKey(PUBLIC_KEY))

  it("our roots are its roots, and we write its signed checkpoints byte for byte", () => {
    const signer = Result.getOrThrow(parseSignerKey(SECRET_KEY))
    for (let size = 0; size <= 15; size++) {
      const root = run(treeHash(size, reader))
      expect(Buffer.from(root).toString("base64"), `size ${size}`).toBe(CHECKPOINTS[size]![0])
      expect(signCheckpoint({ origin: ORIGIN, size, root }, [signer])).toBe(published(size))
    }
  })

  it("we open each of its checkpoints with its vkey, and prove each one consistent with every later one", () => {
    const opened: Array<Checkpoint> = []
    for (let size = 0; size <= 15; size++) opened.push(Result.getOrThrow(openCheckpoint(published(size), ORIGIN, [verifier])).checkpoint)
    for (let n = 1; n <= 15; n++) {
      for (let m = 1; m <= n; m++) {
        const proof = run(proveConsistency(m, n, reader))
        expect(verifyConsistency(m, n, opened[m]!.root, opened[n]!.root, proof), `${m} → ${n}`).toBe(true)
        if (m < n) expect(verifyConsistency(m, n, opened[n]!.root, opened[m]!.root, proof), `${n} ↛ ${m}`).toBe(false)
      }
    }
    // One changed byte of a signature refuses the checkpoint.
    const bad = published(7).replace("ytWj0mbL", "ytWj0mbM")
    expect(Result.isFailure(openCheckpoint(bad, ORIGIN, [verifier]))).toBe(true)
    expect(b64(CHECKPOINTS[0]![0])).toEqual(run(treeHash(0, reader)))
  })
})
