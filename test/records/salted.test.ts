/**
 * Salted commitments for encrypted records (issue 23, deliverable 6; docs/verifying.md "Salted
 * commitments"): the anchored hash of a new encrypted record is sha256(JCS({"data", "salt"})) with a
 * random salt sealed inside the ciphertext, so proofs and certificates do not let anyone test guesses
 * of a low-entropy plaintext. The owner's decrypted lookup gives what recomputes the hash, and the
 * verify tools accept it; records written before keep their unsalted hash and still decrypt and verify.
 */
import * as Crypto from "node:crypto"
import * as Effect from "effect/Effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { canonicalize } from "../../src/canonical/jcs.ts"
import { seal } from "../../src/records/encryption.ts"
import { verifyBundle } from "../../src/sdk/bundle.ts"
import { readInput } from "../../src/verify/input.ts"
import { verifyInput } from "../../src/verify/verify.ts"
import { query } from "../support/db.ts"
import { call, startNode, type TestNode } from "../support/node.ts"
import { confirmAnchor } from "../webhooks/support.ts"

const KEY = "0123456789abcdef0123456789abcdef"
const sha256 = (text: string) => Crypto.createHash("sha256").update(text, "utf8").digest("hex")
/** What a salted hash commits to, computed here from the spec with a JCS of its own and node:crypto. */
const salted = (data: unknown, salt: string) => sha256(canonicalize({ data, salt }))

/** The hash check of an offline verification of a verify-tool input (the fake anchors' Merkle checks are not looked at). */
const hashCheck = async (input: unknown, data?: unknown) => {
  const report = await Effect.runPromise(verifyInput(readInput(input), {
    rpcFor: () => undefined,
    offline: true,
    ...(data === undefined ? {} : { data: { value: data } })
  }))
  return report.checks.find((c) => c.id === "hash")
}

describe("salted commitments of encrypted records", () => {
  let node: TestNode
  let key: string
  const api = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => call(node.baseUrl, method, path, { key, body, headers })

  beforeAll(async () => {
    node = await startNode()
    key = (await node.createKey(await node.createAccount())).key
  })
  afterAll(async () => {
    await node?.stop()
  })

  it("a new encrypted record's hash is salted, differs per record, and the decrypted lookup recomputes it", async () => {
    const data = { pin: "1234" }
    const first = (await api("POST", "/v1/anchor/encrypted", { data, encryptionKey: KEY })).json.data
    const second = (await api("POST", "/v1/anchor/encrypted", { data, encryptionKey: KEY })).json.data
    expect(first.hashScheme).toBe("salted-jcs-sha256")
    expect(first.salt).toMatch(/^[A-Za-z0-9_-]{43}$/)
    // Not the guessable sha256(JCS(plaintext)), and not the same for the same plaintext.
    expect(first.hash).not.toBe(sha256(canonicalize(data)))
    expect(second.hash).not.toBe(first.hash)
    expect(second.salt).not.toBe(first.salt)
    expect(first.hash).toBe(salted(data, first.salt))

    // Without the key: no data, no salt; the scheme is said.
    const hidden = (await api("GET", `/v1/records/${first.recordId}`)).json.data
    expect(hidden).toMatchObject({ data: null, hashScheme: "salted-jcs-sha256", encrypted: true })
    expect(hidden.salt).toBeUndefined()
    expect(hidden.encryptedData.ciphertext).toBeTypeOf("string")

    // With the key: the data and the salt, which recompute the hash (by hand, and by the verify tools).
    const opened = await api("GET", `/v1/records/${first.recordId}`, undefined, { "x-encryption-key": KEY })
    expect(opened.json.data).toMatchObject({ data, salt: first.salt, hashScheme: "salted-jcs-sha256", hash: first.hash })
    expect(salted(opened.json.data.data, opened.json.data.salt)).toBe(first.hash)
    expect(await hashCheck(opened.json)).toMatchObject({ status: "pass" })
    // A lookup from before salting is not what the node stores: the sealed text is the commitment itself.
    const [row] = await query<{ salted: boolean; data_jcs: string | null }>(node.databaseUrl, "SELECT salted, data_jcs FROM records WHERE id = $1", [
      first.recordId
    ])
    expect(row).toEqual({ salted: true, data_jcs: null })
  })

  it("SEPARATED: the 202 is the only place the salt is given; jcs-sha256 asks for the unsalted hash", async () => {
    const data = { vote: "yes" }
    const separated = (await api("POST", "/v1/anchor/encrypted", { data, encryptionKey: KEY, packageMode: "SEPARATED" })).json.data
    expect(separated.hash).toBe(salted(data, separated.salt))
    expect((await api("GET", `/v1/records/${separated.recordId}`)).json.data.salt).toBeUndefined()

    const plain = await api("POST", "/v1/anchor/encrypted", { data, encryptionKey: KEY, hashScheme: "jcs-sha256" })
    expect(plain.status).toBe(202)
    expect(plain.json.data).toMatchObject({ hash: sha256(canonicalize(data)), hashScheme: "jcs-sha256" })
    expect(plain.json.data.salt).toBeUndefined()
    const bad = await api("POST", "/v1/anchor/encrypted", { data, encryptionKey: KEY, hashScheme: "md5" })
    expect(bad.status).toBe(400)
    expect(bad.json.errorCode).toBe("VALIDATION_ERROR")
  })

  it("proofs and certificates of a salted record say so and carry no salt; the verify tools take data and salt", async () => {
    const data = { age: 42 }
    const rec = (await api("POST", "/v1/anchor/encrypted", { data, encryptionKey: KEY, packageMode: "IN_PLACE" })).json.data
    await confirmAnchor(node.databaseUrl, rec.recordId)
    const proof = (await api("GET", `/v1/records/${rec.recordId}/proof`)).json.data
    expect(proof).toMatchObject({ hash: rec.hash, hashScheme: "salted-jcs-sha256" })
    expect(JSON.stringify(proof)).not.toContain(rec.salt)
    const certificate = await api("GET", `/v1/records/${rec.recordId}/certificate`)
    expect(certificate.status).toBe(200)
    expect(certificate.text).not.toContain(rec.salt)

    // anchord verify proof.json --data plaintext.json: told that the hash is salted, not merely "mismatch".
    const alone = await hashCheck(proof, data)
    expect(alone).toMatchObject({ status: "fail" })
    expect(alone!.message).toContain("salted")
    expect(await hashCheck(proof, { data, salt: rec.salt })).toMatchObject({ status: "pass" })
    // The decrypted IN_PLACE document verifies as it is: its _anchor carries the salt.
    const opened = (await api("GET", `/v1/records/${rec.recordId}`, undefined, { "x-encryption-key": KEY })).json
    expect(opened.data.data._anchor).toMatchObject({ hashScheme: "salted-jcs-sha256", salt: rec.salt })
    expect(await hashCheck(opened)).toMatchObject({ status: "pass" })
    expect(await hashCheck(opened.data.data)).toMatchObject({ status: "pass" })
    // The SDK: the salt as an option.
    expect(verifyBundle(proof, { data, salt: rec.salt }).problems.filter((p) => p.includes("sha256"))).toEqual([])
    expect(verifyBundle(proof, { data }).problems.join("\n")).toContain("salted hash")
  })

  it("a record written before salting keeps its unsalted hash, decrypts and verifies unchanged", async () => {
    const account = (await query<{ account_id: string }>(node.databaseUrl, "SELECT account_id FROM api_keys ORDER BY created_at LIMIT 1"))[0].account_id
    const data = { legacy: true, n: 7 }
    const jcs = canonicalize(data)
    const sealed = seal(KEY, jcs)
    const id = Crypto.randomBytes(12).toString("hex")
    // The row as ingest wrote it before migration 0015 (no salted column named: its default).
    await query(node.databaseUrl, `
      INSERT INTO records (id, account_id, environment, hash, chain_type, network_id, package_mode, source, ciphertext, nonce, auth_tag)
      VALUES ($1, $2, 'test', $3, 'evm', 'hardhat-local', 'MANAGED', 'encrypted', $4, $5, $6)`, [id, account, sha256(jcs), sealed.ciphertext, sealed.nonce,
      sealed.tag])
    const opened = (await api("GET", `/v1/records/${id}`, undefined, { "x-encryption-key": KEY })).json
    expect(opened.data).toMatchObject({ data, hash: sha256(jcs), hashScheme: "jcs-sha256" })
    expect(opened.data.salt).toBeUndefined()
    expect(await hashCheck(opened)).toMatchObject({ status: "pass" })
    await confirmAnchor(node.databaseUrl, id)
    const proof = (await api("GET", `/v1/records/${id}/proof`)).json.data
    expect(proof.hashScheme).toBeUndefined()
    expect(await hashCheck(proof, data)).toMatchObject({ status: "pass" })
    expect(verifyBundle(proof, { data }).problems.filter((p) => p.includes("sha256"))).toEqual([])
  })
})
