// src/tlog/note.ts and checkpoint.ts: C2SP signed-note and tlog-checkpoint against Go's
// golang.org/x/mod/sumdb/note tests (note_test.go: its keys, its signed note byte for byte, its Open cases,
// ported) and the examples of c2sp.org/signed-note and c2sp.org/tlog-checkpoint.
//   npx vitest run test/tlog/note.test.ts
import * as Crypto from "node:crypto"
import * as Result from "effect/Result"
import { describe, expect, it } from "vitest"
import { formatCheckpoint, openCheckpoint, parseCheckpoint, signCheckpoint } from "../../src/tlog/checkpoint.ts"
import { ed25519NoteSigner, ed25519VerifierKey, type NoteVerifier, openNote, parseSignerKey, parseVerifierKey, signNote } from "../../src/tlog/note.ts"

const ok = <A, E>(r: Result.Result<A, E>): A => {
  if (Result.isFailure(r)) throw new Error(`expected success, got ${String(r.failure)}`)
  return r.success
}
const failure = <A, E>(r: Result.Result<A, E>): E => {
  if (Result.isSuccess(r)) throw new Error("expected a failure")
  return r.failure
}

// note_test.go's keys and note.
const PETER_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
const PETER_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
const ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
const TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
const PETER_SIG = "— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
const ENOCH_SIG = "— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n"
const peter = { name: "PeterNeumann", keyId: 0xc74f20a3,
  signature: "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=" }
const enoch = { name: "EnochRoot", keyId: 0xaf0cfe78,
  signature: "rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=" }

describe("signed-note keys (note_test.go)", () => {
  it("TestNewVerifier: the vkey parses, and every substring and every one-byte change of it is refused", () => {
    ok(parseVerifierKey(PETER_VKEY))
    const b = Buffer.from(PETER_VKEY)
    for (let i = 0; i <= b.length; i++) {
      for (let j = i + 1; j <= b.length; j++) {
        if (i !== 0 || j !== b.length) expect(Result.isFailure(parseVerifierKey(b.subarray(i, j).toString())), b.subarray(i, j).toString()).toBe(true)
      }
    }
    for (let i = 0; i < b.length; i++) {
      const c = Buffer.from(b)
      c[i]!++
      expect(Result.isFailure(parseVerifierKey(c.toString())), c.toString()).toBe(true)
    }
    // Wrong key length and unknown algorithm, each with a key id that matches.
    expect(Result.isFailure(parseVerifierKey("PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY=="))).toBe(true)
    expect(Result.isFailure(parseVerifierKey("PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"))).toBe(true)
    // Upper-case hex (Go takes it; the spec says lowercase).
    expect(Result.isFailure(parseVerifierKey("PeterNeumann+C74F20A3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"))).toBe(true)
  })

  it("TestNewSigner: the Go private key parses to the same key id and vkey; its substrings are refused", () => {
    const signer = ok(parseSignerKey(PETER_SKEY))
    expect(signer.keyId).toBe(0xc74f20a3)
    expect(signer.verifierKey).toBe(PETER_VKEY)
    const b = Buffer.from(PETER_SKEY)
    for (let i = 0; i <= b.length; i += 3) {
      for (let j = i + 1; j <= b.length; j += 2) {
        if (i !== 0 || j !== b.length) expect(Result.isFailure(parseSignerKey(b.subarray(i, j).toString())), b.subarray(i, j).toString()).toBe(true)
      }
    }
  })

  it("TestGenerateKey / TestFromEd25519: a fresh key signs what its vkey verifies, and nothing else", () => {
    const { privateKey, publicKey } = Crypto.generateKeyPairSync("ed25519")
    const signer = ed25519NoteSigner("EnochRoot", privateKey)
    const raw = new Uint8Array(Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url"))
    expect(signer.verifierKey).toBe(ed25519VerifierKey("EnochRoot", raw))
    const verifier = ok(parseVerifierKey(signer.verifierKey))
    expect([verifier.name, verifier.keyId]).toEqual([signer.name, signer.keyId])
    const msg = new Uint8Array(Buffer.from("hi"))
    const sig = signer.sign(msg)
    expect(verifier.verify(msg, sig)).toBe(true)
    expect(verifier.verify(msg, Uint8Array.from(sig, (x, i) => (i === 0 ? x + 1 : x)))).toBe(false)
    expect(verifier.verify(new Uint8Array(Buffer.from("hj")), sig)).toBe(false)
    expect(() => ed25519VerifierKey("EnochRoot", raw.subarray(1))).toThrow()
    expect(() => ed25519NoteSigner("bad name", privateKey)).toThrow()
  })
})

describe("signed notes (note_test.go)", () => {
  const peterV = ok(parseVerifierKey(PETER_VKEY))
  const enochV = ok(parseVerifierKey(ENOCH_VKEY))

  it("TestSign: Go's signed note, byte for byte (Ed25519 is deterministic)", () => {
    expect(signNote(TEXT, [ok(parseSignerKey(PETER_SKEY))])).toBe(`${TEXT}\n${PETER_SIG}`)
    expect(() => signNote("abc", [ok(parseSignerKey(PETER_SKEY))])).toThrow()
    expect(() => signNote(TEXT, [{ ...ok(parseSignerKey(PETER_SKEY)), name: "bad name" }])).toThrow()
  })

  it("TestOpen: verified and unverified signatures", () => {
    let n = ok(openNote(TEXT + "\n" + PETER_SIG + ENOCH_SIG, [peterV]))
    expect(n.text).toBe(TEXT)
    expect(n.signatures).toEqual([peter])
    expect(n.unverified).toEqual([enoch])

    n = ok(openNote(TEXT + "\n" + PETER_SIG + ENOCH_SIG, [peterV, enochV]))
    expect(n.signatures).toEqual([peter, enoch])
    expect(n.unverified).toEqual([])

    const e = failure(openNote(TEXT + "\n" + PETER_SIG + ENOCH_SIG, []))
    expect(e._tag === "NoteNotVerified" && e.reason).toBe("unverified")

    // Duplicated verifier: ambiguous only when used.
    const dup = failure(openNote(TEXT + "\n" + ENOCH_SIG, [enochV, peterV, enochV]))
    expect(dup._tag === "NoteNotVerified" && dup.reason).toBe("ambiguous-key")
    ok(openNote(TEXT + "\n" + PETER_SIG, [enochV, peterV, enochV]))

    // Too many signatures.
    expect(failure(openNote(TEXT + "\n" + PETER_SIG.repeat(101), [peterV]))._tag).toBe("MalformedInput")
    expect(failure(openNote(TEXT + "\n" + PETER_SIG.repeat(101), []))._tag).toBe("MalformedInput")

    // A known key's invalid signature refuses the note.
    const bad = failure(openNote(TEXT + "\n" + PETER_SIG.slice(0, 60) + "ABCD" + PETER_SIG.slice(60), [peterV]))
    expect(bad._tag === "NoteNotVerified" && bad.reason).toBe("invalid-signature")

    // Duplicated verified and unverified signatures: each kept once.
    const enochABCD = { ...enoch, signature: enoch.signature.slice(0, 48) + "ABCD" + enoch.signature.slice(48) }
    n = ok(openNote(TEXT + "\n" + PETER_SIG + PETER_SIG + ENOCH_SIG + ENOCH_SIG + ENOCH_SIG.slice(0, 60) + "ABCD" + ENOCH_SIG.slice(60), [peterV]))
    expect(n.signatures).toEqual([peter])
    expect(n.unverified).toEqual([enoch, enochABCD])
  })

  it("TestOpen: malformed notes are refused", () => {
    const bad = [
      TEXT,
      TEXT + "\n",
      TEXT + "\n" + PETER_SIG.slice(0, -1),
      "\x01" + TEXT + "\n" + PETER_SIG,
      TEXT + "\n" + "— Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=",
      TEXT + "\n" + PETER_SIG + "Unexpected line.\n",
      // Stricter than Go: non-canonical base64 (a padding bit set) and a hyphen instead of the em dash.
      TEXT + "\n" + PETER_SIG.replace("AM=\n", "AN=\n"),
      TEXT + "\n" + PETER_SIG.replace("—", "-")
    ]
    for (const msg of bad) expect(failure(openNote(msg, [peterV]))._tag, JSON.stringify(msg)).toBe("MalformedInput")
    // Invalid UTF-8 as bytes ("\xff" in Go's list).
    expect(failure(openNote(new Uint8Array([0xff, ...Buffer.from(TEXT + "\n" + PETER_SIG)]), [peterV]))._tag).toBe("MalformedInput")
    expect(failure(openNote("\ud800" + TEXT + "\n" + PETER_SIG, [peterV]))._tag).toBe("MalformedInput")
  })

  it("a verifier answering for another name or key id is never asked (Go: errMismatchedVerifier)", () => {
    let asked = 0
    const liar: NoteVerifier = { name: "PeterNeumann", keyId: 0xc74f20a3, verify: () => (asked++, true) }
    expect(failure(openNote(TEXT + "\n" + PETER_SIG.replace("PeterNeumann", "CarmenSandiego"), [liar]))._tag).toBe("NoteNotVerified")
    expect(failure(openNote(TEXT + "\n" + PETER_SIG.replace("x08g", "xxxx"), [liar]))._tag).toBe("NoteNotVerified")
    expect(asked).toBe(0)
  })

  it("a text with blank lines: the signatures start after the last one (c2sp.org/signed-note's poem)", () => {
    const signer = ok(parseSignerKey(PETER_SKEY))
    const poem = "Ognuno sta solo sul cuor della terra\ntrafitto da un raggio di sole:\n\ned è subito sera.\n"
    const n = ok(openNote(signNote(poem, [signer]), [peterV]))
    expect(n.text).toBe(poem)
    expect(n.signatures.map((s) => s.name)).toEqual(["PeterNeumann"])
  })

  it("c2sp.org/signed-note's example verifies with its vkey", () => {
    const v = ok(parseVerifierKey("example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"))
    const note =
      "This is an example message.\n\n— example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n"
    expect(ok(openNote(note, [v])).text).toBe("This is an example message.\n")
    expect(ok(openNote(new Uint8Array(Buffer.from(note)), [v])).signatures).toHaveLength(1)
  })
})

describe("tlog-checkpoint", () => {
  const EXAMPLE = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"

  it("parses c2sp.org/tlog-checkpoint's example and formats it back", () => {
    const c = ok(parseCheckpoint(EXAMPLE))
    expect(c.origin).toBe("example.com/behind-the-sofa")
    expect(c.size).toBe(20852163)
    expect(Buffer.from(c.root).toString("base64")).toBe("CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=")
    expect(formatCheckpoint(c)).toBe(EXAMPLE)
    const ext = ok(parseCheckpoint(EXAMPLE + "ext one\n— not a signature\n"))
    expect(ext.extensions).toEqual(["ext one", "— not a signature"])
    expect(formatCheckpoint(ext)).toBe(EXAMPLE + "ext one\n— not a signature\n")
    expect(formatCheckpoint({ origin: "o", size: 0, root: Crypto.createHash("sha256").digest() })).toBe("o\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n")
  })

  it("refuses malformed checkpoints", () => {
    const [origin, , root] = EXAMPLE.split("\n")
    const bad = [
      EXAMPLE.slice(0, -1),
      `${origin}\n20852163\n`,
      `\n20852163\n${root}\n`,
      `${origin}\n020852163\n${root}\n`,
      `${origin}\n+20852163\n${root}\n`,
      `${origin}\n0x13e2\n${root}\n`,
      `${origin}\n 20852163\n${root}\n`,
      `${origin}\n${2 ** 53}\n${root}\n`,
      `${origin}\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I\n`,
      `${origin}\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2J=\n`,
      `${origin}\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=AAAA\n`,
      `${origin}\n20852163\n${root}\n\n`,
      `${origin}\n20852163\n${root}\next\n\nmore\n`
    ]
    for (const text of bad) expect(failure(parseCheckpoint(text))._tag, JSON.stringify(text)).toBe("MalformedInput")
  })

  it("signs and opens a checkpoint: the origin must match, witnesses' signatures pass unchecked", () => {
    const log = ed25519NoteSigner("anchord.example/log/hardhat-local", Crypto.generateKeyPairSync("ed25519").privateKey)
    const witness = ed25519NoteSigner("witness.example", Crypto.generateKeyPairSync("ed25519").privateKey)
    const c = { origin: "anchord.example/log/hardhat-local", size: 5, root: new Uint8Array(32).fill(7) }
    const signed = signCheckpoint(c, [log, witness])
    const v = ok(parseVerifierKey(log.verifierKey))
    const opened = ok(openCheckpoint(signed, c.origin, [v]))
    expect(opened.checkpoint).toEqual(c)
    expect(opened.note.unverified.map((s) => s.name)).toEqual(["witness.example"])
    const wrong = failure(openCheckpoint(signed, "anchord.example/log/other", [v]))
    expect(wrong._tag === "NoteNotVerified" && wrong.reason).toBe("wrong-origin")
    // A size changed after signing breaks the signature.
    expect(failure(openCheckpoint(signed.replace("\n5\n", "\n6\n"), c.origin, [v]))._tag).toBe("NoteNotVerified")
  })
})
