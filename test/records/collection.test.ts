/**
 * The seed service's extras (SPEC 3): the optional `collection` of a submission (stored, not hashed,
 * shown by lookups and lists, filterable, carried by webhook payloads) and the batch answer's
 * `summary` with 207 Multi-Status when items are refused. On a real node and PostgreSQL, with a real
 * webhook receiver on loopback.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { query } from "../support/db.ts"
import { call } from "../support/node.ts"
import { confirmAnchor, type Receiver, startReceiver, startWebhookNode, waitFor, type WebhookNode } from "../webhooks/support.ts"

describe("collection and batch summaries", () => {
  let node: WebhookNode
  let receiver: Receiver
  let key: string
  const api = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => call(node.baseUrl, method, path, { key, body, headers })

  beforeAll(async () => {
    receiver = await startReceiver()
    node = await startWebhookNode()
    key = await node.createKey(await node.createAccount())
  }, 60_000)
  afterAll(async () => {
    await node?.stop()
    await receiver?.close()
  })

  it("is stored with the record, not hashed, and shown by the 202, lookups and lists", async () => {
    const plain = await api("POST", "/v1/anchor", { data: { invoice: "INV-1" } })
    const grouped = await api("POST", "/v1/anchor", { data: { invoice: "INV-1" }, collection: "invoices-2026" })
    expect(grouped.status).toBe(202)
    expect(grouped.json.data.collection).toBe("invoices-2026")
    expect(plain.json.data.collection).toBeNull()
    // Not hashed: the same data, the same hash.
    expect(grouped.json.data.hash).toBe(plain.json.data.hash)
    const hashOnly = await api("POST", "/v1/anchor/hash", { hash: "ab".repeat(32), collection: "invoices-2026" })
    const encrypted = await api("POST", "/v1/anchor/encrypted", { data: { a: 1 }, encryptionKey: "k".repeat(32), collection: "secret ones" })
    expect([hashOnly.status, encrypted.status]).toEqual([202, 202])
    expect(encrypted.json.data.collection).toBe("secret ones")

    const got = await api("GET", `/v1/records/${grouped.json.data.recordId}`)
    expect(got.json.data.collection).toBe("invoices-2026")
    const rows = await query<{ collection: string | null }>(node.databaseUrl, "SELECT collection FROM records WHERE id = $1", [hashOnly.json.data.recordId])
    expect(rows[0].collection).toBe("invoices-2026")

    const listed = await api("GET", "/v1/records?collection=invoices-2026&limit=1")
    expect(listed.status).toBe(200)
    expect(listed.json.data.records.map((r: any) => r.recordId)).toEqual([hashOnly.json.data.recordId])
    const next = await api("GET", `/v1/records?collection=invoices-2026&limit=1&cursor=${listed.json.data.nextCursor}`)
    expect(next.json.data.records.map((r: any) => r.recordId)).toEqual([grouped.json.data.recordId])
    expect(next.json.data.nextCursor).toBeNull()
    const spaced = await api("GET", `/v1/records?collection=${encodeURIComponent("secret ones")}`)
    expect(spaced.json.data.records.map((r: any) => r.recordId)).toEqual([encrypted.json.data.recordId])
    expect((await api("GET", "/v1/records?collection=none-such")).json.data.records).toEqual([])
  })

  it("refuses a collection that is not 1 to 128 characters without control characters, and changes nothing", async () => {
    const before = await query<{ n: number }>(node.databaseUrl, "SELECT count(*)::int AS n FROM records")
    for (const collection of ["", "x".repeat(129), "a\u0000b", "tab\there", 7, null, ["a"]]) {
      for (const path of ["/v1/anchor", "/v1/anchor/hash"]) {
        const body = path === "/v1/anchor" ? { data: { a: 1 }, collection } : { hash: "cd".repeat(32), collection }
        const r = await api("POST", path, body)
        expect(r.status, JSON.stringify(collection)).toBe(400)
        expect(r.json).toEqual({ success: false, error: expect.stringContaining("collection"), errorCode: "VALIDATION_ERROR" })
      }
    }
    const query_ = await api("GET", "/v1/records?collection=%00")
    expect(query_.status).toBe(400)
    expect(query_.json.errorCode).toBe("VALIDATION_ERROR")
    const after = await query<{ n: number }>(node.databaseUrl, "SELECT count(*)::int AS n FROM records")
    expect(after[0].n).toBe(before[0].n)
    // Immutable: PATCH names it as an immutable field.
    const rec = await api("POST", "/v1/anchor", { data: { p: 1 }, collection: "c" })
    const patched = await api("PATCH", `/v1/records/${rec.json.data.recordId}`, { collection: "d" })
    expect(patched.status).toBe(422)
    expect(patched.json.errorCode).toBe("IMMUTABLE_FIELD")
  })

  it("batch: 202 with summary when all are accepted, 207 when some or all are refused; replays keep the status", async () => {
    const all = await api("POST", "/v1/anchor/batch", { records: [{ data: { b: 1 }, collection: "batch" }, { data: { b: 2 } }] })
    expect(all.status).toBe(202)
    expect(all.json.data).toMatchObject({ accepted: 2, rejected: 0, summary: { successful: 2, failed: 0 } })
    expect(all.json.data.results[0].data.collection).toBe("batch")

    const some = await api("POST", "/v1/anchor/batch", { records: [{ data: { b: 3 } }, { data: [1] }, { data: {}, collection: "" }] }, {
      "idempotency-key": "batch-207"
    })
    expect(some.status).toBe(207)
    expect(some.json.data).toMatchObject({ accepted: 1, rejected: 2, summary: { successful: 1, failed: 2 } })
    expect(some.json.data.results.map((r: any) => r.success)).toEqual([true, false, false])
    expect(some.json.data.results[2]).toEqual({ index: 2, success: false, error: expect.stringContaining("records[2].collection"),
      errorCode: "VALIDATION_ERROR" })
    const replay = await api("POST", "/v1/anchor/batch", { records: [{ data: { b: 3 } }, { data: [1] }, { data: {}, collection: "" }] }, {
      "idempotency-key": "batch-207"
    })
    expect(replay.status).toBe(207)
    expect(replay.headers.get("idempotent-replayed")).toBe("true")
    expect(replay.text).toBe(some.text)

    const before = await query<{ n: number }>(node.databaseUrl, "SELECT count(*)::int AS n FROM records")
    const none = await api("POST", "/v1/anchor/batch", { records: [{ data: 1 }, { nope: true }] }, { "idempotency-key": "batch-none" })
    expect(none.status).toBe(207)
    expect(none.json.data).toMatchObject({ accepted: 0, rejected: 2, summary: { successful: 0, failed: 2 } })
    const after = await query<{ n: number }>(node.databaseUrl, "SELECT count(*)::int AS n FROM records")
    expect(after[0].n).toBe(before[0].n)
    // Nothing was written, so the key was not used up: the same key with a good body creates.
    const retried = await api("POST", "/v1/anchor/batch", { records: [{ data: { fixed: true } }] }, { "idempotency-key": "batch-none" })
    expect(retried.status).toBe(202)
    expect(retried.headers.get("idempotent-replayed")).toBeNull()
  })

  it("webhook payloads carry it: form B (anchor.confirmed) and form A (record.updated); records without one are unchanged", async () => {
    const grouped = await api("POST", "/v1/anchor", { data: { w: 1 }, collection: "hooks", webhookUrl: receiver.url })
    const plain = await api("POST", "/v1/anchor", { data: { w: 2 }, webhookUrl: receiver.url })
    for (const r of [grouped, plain]) await confirmAnchor(node.databaseUrl, r.json.data.recordId)
    await api("PATCH", `/v1/records/${grouped.json.data.recordId}`, { metadata: { seen: true } })
    const bodies = (await receiver.waitFor(3)).map((r) => JSON.parse(r.body))
    const formB = (id: string) => bodies.find((b) => b.type === "ANCHORED" && b.recordId === id)
    expect(formB(grouped.json.data.recordId).collection).toBe("hooks")
    expect(Object.keys(formB(plain.json.data.recordId))).not.toContain("collection")
    const updated = await waitFor("the record.updated delivery", async () => bodies.find((b) => b.event === "record.updated"))
    // form A carries the anchor of the record's last confirmation (derived from its batch event)
    expect(updated.data).toMatchObject({
      recordId: grouped.json.data.recordId,
      status: "ANCHORED",
      collection: "hooks",
      txHash: `0x${"ab".repeat(32)}`,
      blockNumber: 42
    })
  })
})
