/**
 * `anchord/client` (src/sdk) against a real node anchoring on a real chain (anvil): every method,
 * the API's errors as AnchordError, pagination over several pages, waitForAnchored, and verifyBundle
 * on the proof the node serves (and on tampered copies).
 *   npx vitest run test/sdk/client.test.ts
 */
import { inspect } from "node:util"
import { StandardMerkleTree } from "@openzeppelin/merkle-tree"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AnchordClient, AnchordError, type AnchordRecord, verifyBundle } from "../../src/sdk/index.ts"
import { startAnvil, type Anvil } from "../evm/anvil.ts"
import { deploy, network, startEvmNode, type EvmTestNode } from "../evm/support.ts"

// Fabric and hybrid records are refused on a node no Fabric network serves (CHAIN_NOT_CONFIGURED);
// naming one here, served by no node of this test, keeps them accepted and QUEUED, as this file needs.
process.env.FABRIC_TEST_NETWORK_ID = "fabric-unserved"
process.env.FABRIC_LIVE_NETWORK_ID = "fabric-unserved"

const ENC_KEY = "0123456789abcdef0123456789abcdef"

/** The AnchordError a call fails with (or a test failure if it succeeds or throws something else). */
const failure = async (p: Promise<unknown>): Promise<AnchordError> => {
  const e = await p.then(() => undefined, (x: unknown) => x)
  expect(e).toBeInstanceOf(AnchordError)
  return e as AnchordError
}

describe("anchord/client against a node on anvil", () => {
  let anvil: Anvil
  let node: EvmTestNode
  let key: string
  let client: AnchordClient

  beforeAll(async () => {
    anvil = await startAnvil()
    const pk = await anvil.fundedKey()
    const d = await deploy(anvil.rpcUrl, pk)
    node = await startEvmNode({
      networks: [network({
        networkId: "anvil-sdk",
        rpcUrl: anvil.rpcUrl,
        chainId: d.chainId,
        contractAddress: d.address,
        confirmations: 1,
        environment: "test",
        batchMaxSize: 50,
        batchWindowMs: 200,
        pollIntervalMs: 150
      }, pk)]
    })
    key = await node.createKey(await node.createAccount())
    client = new AnchordClient({ baseUrl: node.baseUrl, apiKey: key })
  }, 60_000)
  afterAll(async () => {
    await node?.stop()
    await anvil?.stop()
  })

  it("anchor, anchorEncrypted, anchorHash, anchorBatch, get, update, delete", async () => {
    const rec = await client.anchor({ invoice: "INV-1", total: 12.5 }, { metadata: { customer: "acme" } })
    expect(rec).toMatchObject({ status: "QUEUED", data: { invoice: "INV-1", total: 12.5 }, metadata: { customer: "acme" }, networkId: "anvil-sdk" })
    expect(rec.hash).toMatch(/^[0-9a-f]{64}$/)
    expect(await client.get(rec.recordId)).toEqual(rec)

    const enc = await client.anchorEncrypted({ patient: "Ada" }, ENC_KEY)
    expect(enc.encrypted).toBe(true)
    const sealed = await client.get(enc.recordId)
    expect(sealed.data).toBeNull()
    expect(sealed.encryptedData?.algorithm).toBe("AES-256-GCM")
    expect((await client.get(enc.recordId, { encryptionKey: ENC_KEY })).data).toEqual({ patient: "Ada" })

    const byHash = await client.anchorHash("93a23971a914e5eacbf0a8d25154cda309c3c1c72fbb9914d47c60f3cb681588", { metadata: { own: true } })
    expect(byHash).toMatchObject({ hash: "93a23971a914e5eacbf0a8d25154cda309c3c1c72fbb9914d47c60f3cb681588", packageMode: "SEPARATED", data: null })

    const batch = await client.anchorBatch([{ data: { n: 1 } }, { data: "not an object" as never }, { data: { n: 3 }, packageMode: "SEPARATED" }])
    // answered 207 (one item refused): resolved like a 202, the counts in `summary` too
    expect(batch).toMatchObject({ accepted: 2, rejected: 1, summary: { successful: 2, failed: 1 } })
    const grouped = await client.anchor({ g: 1 }, { collection: "sdk-group" })
    expect(grouped.collection).toBe("sdk-group")
    const pages = []
    for await (const page of client.list({ collection: "sdk-group" })) pages.push(...page.records.map((r) => r.recordId))
    expect(pages).toEqual([grouped.recordId])
    expect(batch.results.map((r) => r.success)).toEqual([true, false, true])
    const refused = batch.results[1]
    expect(refused.success === false && refused.errorCode).toBe("VALIDATION_ERROR")

    // the same Idempotency-Key answers the first response again: no second record
    const once = await client.anchor({ order: 42 }, { idempotencyKey: "order-42" })
    expect(await client.anchor({ order: 42 }, { idempotencyKey: "order-42" })).toEqual(once)

    const updated = await client.update(rec.recordId, { metadata: { customer: "acme", paid: true }, webhookUrl: "http://127.0.0.1:9/hook" })
    expect(updated).toMatchObject({ metadata: { customer: "acme", paid: true }, webhookUrl: "http://127.0.0.1:9/hook" })
    expect((await client.update(rec.recordId, { webhookUrl: null })).webhookUrl).toBeNull()

    const deleted = await client.delete(byHash.recordId)
    expect(deleted).toMatchObject({ recordId: byHash.recordId, mode: "soft" })
    expect((await client.get(byHash.recordId, { includeDeleted: true })).status).toBe("DELETED")
    expect((await client.delete(byHash.recordId, { mode: "hard" })).mode).toBe("hard")
  })

  it("errors: the API's status, errorCode and message, for 400, 401, 404, 409, 410; never the key", async () => {
    const queued = await client.anchor({ fresh: Date.now() })
    const notAnchored = await failure(client.proof(queued.recordId))
    expect([notAnchored.status, notAnchored.errorCode]).toEqual([409, "NOT_ANCHORED"])
    expect(notAnchored.message).toMatch(/not anchored/)

    const missing = await failure(client.get("0".repeat(24)))
    expect([missing.status, missing.errorCode, missing.name]).toEqual([404, "RECORD_NOT_FOUND", "AnchordError"])

    await client.delete(queued.recordId)
    const gone = await failure(client.get(queued.recordId))
    expect([gone.status, gone.errorCode]).toEqual([410, "RECORD_DELETED"])

    const badKey = await failure(client.anchorEncrypted({ x: 1 }, "too short"))
    expect([badKey.status, badKey.errorCode]).toEqual([400, "INVALID_ENCRYPTION_KEY"])
    const invalid = await failure(client.anchor([1, 2] as never))
    expect([invalid.status, invalid.errorCode]).toEqual([400, "VALIDATION_ERROR"])
    expect(invalid.message).toMatch(/data/)
    const immutable = await failure(client.update(queued.recordId, { hash: "x" } as never))
    expect([immutable.status, immutable.errorCode]).toEqual([422, "IMMUTABLE_FIELD"])

    const wrongKey = `dcp_test_${"A".repeat(32)}`
    const unauthorized = await failure(new AnchordClient({ baseUrl: node.baseUrl, apiKey: wrongKey }).get(queued.recordId))
    expect([unauthorized.status, unauthorized.errorCode]).toEqual([401, "INVALID_API_KEY"])
    const malformed = await failure(new AnchordClient({ baseUrl: node.baseUrl, apiKey: "not-a-key" }).anchor({ a: 1 }))
    expect([malformed.status, malformed.errorCode]).toEqual([401, "INVALID_API_KEY"])
    for (const e of [unauthorized, malformed, notAnchored]) {
      expect(`${e.message} ${e.stack} ${inspect(e)}`).not.toContain(wrongKey)
      expect(`${e.message} ${e.stack} ${inspect(e)}`).not.toContain(key)
    }
    // the client itself does not show its key either
    expect(inspect(client, { showHidden: true, depth: 5 })).not.toContain(key)
    expect(JSON.stringify(client)).not.toContain(key)
  })

  it("list: an async iterator over pages, more than one, newest first, no gaps or repeats; a status filter", async () => {
    const own = new AnchordClient({ baseUrl: node.baseUrl, apiKey: await node.createKey(await node.createAccount()) })
    const ids: Array<string> = []
    for (let i = 0; i < 5; i++) ids.push((await own.anchor({ page: i })).recordId)
    const pages: Array<ReadonlyArray<AnchordRecord>> = []
    for await (const page of own.list({ limit: 2 })) pages.push(page.records)
    expect(pages.map((p) => p.length)).toEqual([2, 2, 1])
    expect(pages.flat().map((r) => r.recordId)).toEqual([...ids].reverse())
    await own.delete(ids[0])
    const deleted: Array<string> = []
    for await (const page of own.list({ status: "DELETED", limit: 100 })) deleted.push(...page.records.map((r) => r.recordId))
    expect(deleted).toEqual([ids[0]])
  })

  it("waitForAnchored on the chain; the proof bundle verifies offline, and a tampered one does not", async () => {
    // several records in one batch: non-empty Merkle proofs
    const batch = await client.anchorBatch([{ data: { lot: 1 } }, { data: { lot: 2 } }, { data: { lot: 3 } }])
    const ids = batch.results.flatMap((r) => r.success ? [r.data.recordId] : [])
    expect(ids).toHaveLength(3)
    const anchored = await Promise.all(ids.map((id) => client.waitForAnchored(id, { timeoutMs: 60_000, pollMs: 100 })))
    for (const r of anchored) {
      expect(r.status).toBe("ANCHORED")
      expect(r.anchors[0].txHash).toMatch(/^0x[0-9a-f]{64}$/)
    }
    const bundle = await client.proof(ids[1])
    expect(bundle.anchors[0].merkleProof.length).toBeGreaterThan(0)
    // the reference library agrees with the node's proof (the SDK's check must agree with both)
    expect(
      StandardMerkleTree.verify(bundle.anchors[0].merkleRoot as `0x${string}`, ["bytes32"], [`0x${bundle.hash}`],
        bundle.anchors[0].merkleProof as Array<`0x${string}`>)
    ).toBe(true)

    expect(verifyBundle(bundle)).toEqual({
      valid: true,
      hash: bundle.hash,
      hashSource: "bundle",
      problems: [],
      anchors: [{ chainType: "evm", networkId: "anvil-sdk", merkleRoot: bundle.anchors[0].merkleRoot, valid: true }]
    })
    expect(verifyBundle(bundle, { data: { lot: 2 } })).toMatchObject({ valid: true, hashSource: "data", hash: bundle.hash })

    // tampered: other data, another hash, a changed proof element, another root, an unknown version
    const other = verifyBundle(bundle, { data: { lot: 4 } })
    expect(other.valid).toBe(false)
    expect(other.problems.join("\n")).toMatch(/not what was anchored/)
    expect(verifyBundle({ ...bundle, hash: "0".repeat(64) }).valid).toBe(false)
    const flipped = bundle.anchors[0].merkleProof.map((p, i) => i === 0 ? `${p.slice(0, -1)}${p.endsWith("0") ? "1" : "0"}` : p)
    const badProof = verifyBundle({ ...bundle, anchors: [{ ...bundle.anchors[0], merkleProof: flipped }] })
    expect(badProof).toMatchObject({ valid: false, anchors: [{ valid: false }] })
    expect(verifyBundle({ ...bundle, anchors: [{ ...bundle.anchors[0], merkleRoot: `0x${"ab".repeat(32)}` }] }).valid).toBe(false)
    expect(verifyBundle({ ...bundle, version: 2 }).problems.join("\n")).toMatch(/version/)
    expect(verifyBundle({ ...bundle, anchors: [] }).valid).toBe(false)
    // another record's proof does not fit this hash
    const sibling = await client.proof(ids[0])
    expect(verifyBundle({ ...bundle, anchors: sibling.anchors }).valid).toBe(sibling.anchors[0].merkleProof.join() === bundle.anchors[0].merkleProof.join())
  }, 90_000)

  it("waitForAnchored gives up after its timeout with TIMEOUT", async () => {
    const other = new AnchordClient({ baseUrl: node.baseUrl, apiKey: await node.createKey(await node.createAccount()) })
    // a hybrid record waits for a Fabric network this node does not have: it stays QUEUED
    const rec = await other.anchor({ waits: true }, { chain: "hybrid" })
    const t0 = Date.now()
    const e = await failure(other.waitForAnchored(rec.recordId, { timeoutMs: 600, pollMs: 100 }))
    expect([e.status, e.errorCode]).toEqual([0, "TIMEOUT"])
    expect(Date.now() - t0).toBeGreaterThanOrEqual(600)
  })
})
