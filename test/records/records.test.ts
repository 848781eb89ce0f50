/** The records API's behaviour (SPEC 3, 4) against real PostgreSQL over a real socket. */
import * as Crypto from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { canonicalize } from "../../src/canonical/jcs.ts"
import { indexPlan, query } from "../support/db.ts"
import { expectError } from "../support/expect.ts"
import { call, startNode, type TestNode } from "../support/node.ts"
import { sleep, waitFor } from "../support/wait.ts"

const sha256 = (s: string) => Crypto.createHash("sha256").update(s, "utf8").digest("hex")
const ENC_KEY = "k".repeat(16) + "0123456789ABCDEF"

describe("records", () => {
  let node: TestNode
  let key: string
  beforeAll(async () => {
    node = await startNode()
    key = (await node.createKey(await node.createAccount())).key
  })
  afterAll(() => node.stop())
  const api = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => call(node.baseUrl, method, path, { key, body, headers })

  it("POST /v1/anchor: 202, QUEUED, hash = sha256(JCS(data)), the full representation", async () => {
    const data = { b: [1, 2.5, "x"], a: { "€": true, "\r": null }, n: 1e21 }
    const r = await api("POST", "/v1/anchor", { data, metadata: { ref: "inv-1" }, webhookUrl: "http://127.0.0.1:9/hook" })
    expect(r.status).toBe(202)
    const rec = r.json.data
    expect(rec.hash).toBe(sha256(canonicalize(data)))
    expect(rec.hash).toBe(sha256("{\"a\":{\"\\r\":null,\"€\":true},\"b\":[1,2.5,\"x\"],\"n\":1e+21}"))
    expect(rec).toMatchObject({
      status: "QUEUED",
      environment: "test",
      chainType: "evm",
      networkId: "hardhat-local",
      packageMode: "MANAGED",
      metadata: { ref: "inv-1" },
      webhookUrl: "http://127.0.0.1:9/hook",
      data,
      encrypted: false,
      anchors: [],
      anchoredAt: null,
      deletedAt: null
    })
    expect(rec.recordId).toMatch(/^[0-9a-f]{24}$/)
    expect(parseInt(rec.recordId.slice(0, 8), 16)).toBeCloseTo(Date.now() / 1000, -1)
    expect(rec.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    const got = await api("GET", `/v1/records/${rec.recordId}`)
    expect(got.json.data).toEqual(rec)
  })

  it("the table refuses an id or hash that is not lowercase hex of the right length (migration 0005's checks)", async () => {
    const rec = (await api("POST", "/v1/anchor", { data: { check: 1 } })).json.data
    const copy = (id: string, hash: string) =>
      query(node.databaseUrl, `
        INSERT INTO records (id, account_id, environment, hash, chain_type, network_id, package_mode, source)
        SELECT $1, account_id, environment, $2, chain_type, network_id, package_mode, source FROM records WHERE id = $3`, [id, hash, rec.recordId])
    /** The constraint a refused insert names (PostgreSQL's error, under the client's), or "accepted". */
    const outcome = (id: string, hash: string) => copy(id, hash).then(() => "accepted", (e) => String(e?.reason?.cause?.constraint ?? e))
    const goodHash = "0".repeat(64)
    for (const id of ["0123456789abcdef0123456", "0123456789abcdef012345678", "0123456789ABCDEF01234567", "0123456789abcdef0123456g",
      "0123456789abcdef0123456é"])
    {
      expect(await outcome(id, goodHash), id).toBe("records_id_check")
    }
    for (const hash of ["a".repeat(63), "a".repeat(65), "A".repeat(64), `${"a".repeat(63)} `, `${"a".repeat(63)}é`]) {
      expect(await outcome("0123456789abcdef01234567", hash), hash).toBe("records_hash_check")
    }
    expect(await outcome("0123456789abcdef01234567", "0123456789abcdef".repeat(4))).toBe("accepted")
    expect(await query(node.databaseUrl, "SELECT hash FROM records WHERE id = '0123456789abcdef01234567'"))
      .toEqual([{ hash: "0123456789abcdef".repeat(4) }])
  })

  it("U+0000 in metadata or a control character in webhookUrl: 400, nothing stored, and the records committed alongside are not affected", async () => {
    const count = async () => Number((await query<{ n: string }>(node.databaseUrl, "SELECT count(*) AS n FROM records"))[0].n)
    const before = await count()
    const bad = [{ ref: "a\u0000b" }, { "k\u0000": 1 }, { deep: [{ x: "\u0000" }] }]
    // Sent together with valid records, so that they would share a group commit with them.
    const results = await Promise.all([
      ...bad.map((metadata) => api("POST", "/v1/anchor", { data: { n: 1 }, metadata })),
      api("POST", "/v1/anchor", { data: { n: 2 }, webhookUrl: "http://127.0.0.1:9/\u0000" }),
      api("POST", "/v1/anchor", { data: { n: 3 }, webhookUrl: "http://127.0.0.1:9/a\nb" }),
      ...Array.from({ length: 10 }, (_, i) => api("POST", "/v1/anchor", { data: { good: i }, metadata: { ok: "\u0001" } }))
    ])
    for (const r of results.slice(0, 3)) expectError(r, 400, "VALIDATION_ERROR", /^metadata: U\+0000 is not allowed in member names or strings$/)
    for (const r of results.slice(3, 5)) expectError(r, 400, "INVALID_WEBHOOK_URL", /control characters/)
    for (const r of results.slice(5)) expect(r.status, JSON.stringify(r.json)).toBe(202)
    expect(await count()).toBe(before + 10)

    const batch = await api("POST", "/v1/anchor/batch", { records: [{ data: { b: 1 } }, { data: { b: 2 }, metadata: { x: "\u0000" } }] })
    // 207 Multi-Status: one item refused
    expect(batch.status).toBe(207)
    expect(batch.json.data).toMatchObject({ accepted: 1, rejected: 1 })
    expect(batch.json.data.results[1]).toEqual({
      index: 1,
      success: false,
      errorCode: "VALIDATION_ERROR",
      error: "records[1].metadata: U+0000 is not allowed in member names or strings"
    })

    const rec = results[5].json.data
    const patched = await api("PATCH", `/v1/records/${rec.recordId}`, { metadata: { "\u0000": true } })
    expectError(patched, 400, "VALIDATION_ERROR", /U\+0000/)
    const patchedUrl = await api("PATCH", `/v1/records/${rec.recordId}`, { webhookUrl: "http://127.0.0.1:9/\u0000" })
    expectError(patchedUrl, 400, "INVALID_WEBHOOK_URL", /control characters/)
    expect((await api("GET", `/v1/records/${rec.recordId}`)).json.data).toMatchObject({ metadata: { ok: "\u0001" }, webhookUrl: null })
  })

  it("a row the database refuses fails only its own request, not the others committed in the same group", async () => {
    // The refusal is caused by a trigger (nothing the API accepts is refused by the table itself).
    await query(node.databaseUrl, `
      CREATE FUNCTION test_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.metadata ? 'poison' THEN RAISE EXCEPTION 'poisoned row'; END IF; RETURN NEW; END $$`)
    await query(node.databaseUrl, "CREATE TRIGGER test_poison BEFORE INSERT ON records FOR EACH ROW EXECUTE FUNCTION test_poison()")
    try {
      const first = await api("POST", "/v1/anchor", { data: { group: "first" } })
      expect(first.status).toBe(202)
      const account =
        (await query<{ account_id: string }>(node.databaseUrl, "SELECT account_id FROM records WHERE id = $1", [first.json.data.recordId]))[0].account_id
      // Hold the account's usage row (until released, at most 30 s): the next commit waits, and the
      // requests after it queue into one group.
      await query(node.databaseUrl, "CREATE TABLE test_release (released boolean)")
      const holding = query(node.databaseUrl, `
        DO $$ BEGIN
          PERFORM 1 FROM usage_monthly WHERE account_id = '${account.replaceAll("'", "''")}' FOR UPDATE;
          FOR i IN 1..1500 LOOP
            EXIT WHEN EXISTS (SELECT 1 FROM test_release);
            PERFORM pg_sleep(0.02);
          END LOOP;
        END $$`)
      const activity = (where: string) =>
        query<{ n: number }>(node.databaseUrl, `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND ${where}`)
          .then((rows) => rows[0].n > 0)
      await waitFor("the usage row held", () => activity("wait_event = 'PgSleep' AND query LIKE '%test_release%'"))
      const blocked = api("POST", "/v1/anchor", { data: { group: "blocked" } })
      await waitFor("the next commit waiting on the row", () => activity("wait_event_type = 'Lock'"))
      const grouped = Promise.all([
        api("POST", "/v1/anchor", { data: { group: "poison" }, metadata: { poison: true } }),
        ...Array.from({ length: 20 }, (_, i) => api("POST", "/v1/anchor", { data: { group: i } }))
      ])
      // Kept sleep: time for the 21 requests to reach the node's queue, which nothing outside the node
      // shows. It only shapes the scenario: released early, the group is split and every assertion holds.
      await sleep(300)
      await query(node.databaseUrl, "INSERT INTO test_release VALUES (true)")
      await holding
      const group = await grouped
      expect((await blocked).status).toBe(202)
      expectError(group[0], 500, "INTERNAL_ERROR", /^Internal error$/)
      for (const r of group.slice(1)) expect(r.status, JSON.stringify(r.json)).toBe(202)
      const ids = group.slice(1).map((r) => r.json.data.recordId)
      expect((await query(node.databaseUrl, "SELECT id FROM records WHERE id = ANY($1)", [ids])).length).toBe(20)
      expect(await query(node.databaseUrl, "SELECT id FROM records WHERE metadata ? 'poison'")).toEqual([])
    } finally {
      await query(node.databaseUrl, "DROP TABLE IF EXISTS test_release")
      await query(node.databaseUrl, "DROP TRIGGER test_poison ON records")
      await query(node.databaseUrl, "DROP FUNCTION test_poison()")
    }
  })

  it("stores the canonical text byte for byte: escapes, control characters, non-ASCII, U+2028, nesting", async () => {
    const data = {
      z: "quote \" backslash \\ slash / tab \t nl \n nul \u0000 del \u007f",
      "é€😀": ["\u2028\u2029", -0, 1e-7, 123456789012345, { "": { "\\": [] } }],
      a: { "\"}": "{\"not\":\"json\"}", n: null, t: true }
    }
    const single = await api("POST", "/v1/anchor", { data })
    const batch = await api("POST", "/v1/anchor/batch", { records: [{ data }, { data: { only: "one" } }] })
    expect(single.status, JSON.stringify(single.json)).toBe(202)
    expect(batch.status, JSON.stringify(batch.json)).toBe(202)
    const ids = [single.json.data.recordId, batch.json.data.results[0].data.recordId, batch.json.data.results[1].data.recordId]
    const rows = await query<{ id: string; data_jcs: string; hash: string }>(
      node.databaseUrl,
      "SELECT id, data_jcs, hash FROM records WHERE id = ANY($1)",
      [ids]
    )
    const byId = new Map(rows.map((r) => [r.id, r]))
    for (const [id, expected] of [[ids[0], data], [ids[1], data], [ids[2], { only: "one" }]] as const) {
      expect(byId.get(id)!.data_jcs).toBe(canonicalize(expected))
      expect(byId.get(id)!.hash).toBe(sha256(canonicalize(expected)))
    }
    const asJson = JSON.parse(JSON.stringify(data)) // -0 is 0 in JSON
    expect(single.json.data.data).toEqual(asJson)
    expect(batch.json.data.results[0].data.data).toEqual(asJson)
  })

  it("metadata and data come back exactly as sent: no key renamed, order and escapes intact", async () => {
    const metadata = { my_key: 1, Nested_Key: { a_b: [{ snake_case: true }] }, "\\": "\"", "é": null }
    const data = { user_id: 7, "a\"b": { x_y: 1 } }
    const r = await api("POST", "/v1/anchor", { data, metadata })
    expect(r.json.data.metadata).toEqual(metadata)
    const got = await api("GET", `/v1/records/${r.json.data.recordId}`)
    expect(got.json.data.metadata).toEqual(metadata)
    expect(got.json.data.data).toEqual(data)
    const listed = await api("GET", "/v1/records?limit=1")
    expect(listed.json.data.records[0].metadata).toEqual(metadata)
    const patched = await api("PATCH", `/v1/records/${r.json.data.recordId}`, { metadata: { other_key: { deep_er: 1 } } })
    expect(patched.json.data.metadata).toEqual({ other_key: { deep_er: 1 } })
  })

  it("package modes: SEPARATED discards the data, IN_PLACE and MANAGED keep it", async () => {
    const separated = await api("POST", "/v1/anchor", { data: { secret: 1 }, packageMode: "SEPARATED" })
    expect(separated.json.data.data).toBeNull()
    const rows = await query<{ data_jcs: string | null }>(node.databaseUrl, "SELECT data_jcs FROM records WHERE id = $1", [separated.json.data.recordId])
    expect(rows[0].data_jcs).toBeNull()
    expect((await api("GET", `/v1/records/${separated.json.data.recordId}`)).json.data.hash).toBe(sha256("{\"secret\":1}"))
    const inPlace = await api("POST", "/v1/anchor", { data: { x: 1 }, packageMode: "IN_PLACE" })
    expect(inPlace.json.data).toMatchObject({ packageMode: "IN_PLACE", data: { x: 1 } })
  })

  it("POST /v1/anchor/hash anchors a client-computed hash without data", async () => {
    const hash = sha256("my document").toUpperCase()
    const r = await api("POST", "/v1/anchor/hash", { hash, metadata: { name: "doc" } })
    expect(r.status).toBe(202)
    expect(r.json.data).toMatchObject({ hash: hash.toLowerCase(), data: null, packageMode: "SEPARATED" })
  })

  it("encrypted records: ciphertext only at rest, decrypted with X-Encryption-Key, wrong key → 400", async () => {
    const data = { patient: "Ada", dose: 5 }
    const r = await api("POST", "/v1/anchor/encrypted", { data, encryptionKey: ENC_KEY })
    expect(r.status).toBe(202)
    const id = r.json.data.recordId
    // salted by default (issue 23, docs/verifying.md): the hash commits to {"data", "salt"}, the salt in the answer
    expect(r.json.data.hash).toBe(sha256(canonicalize({ data, salt: r.json.data.salt })))
    expect(r.json.data.encrypted).toBe(true)
    const rows = await query<Record<string, unknown>>(node.databaseUrl, "SELECT * FROM records WHERE id = $1", [id])
    const stored = JSON.stringify(rows[0])
    expect(stored).not.toContain("Ada")
    expect(stored).not.toContain(ENC_KEY)
    expect(rows[0].data_jcs).toBeNull()
    const sealed = await api("GET", `/v1/records/${id}`)
    expect(sealed.json.data.data).toBeNull()
    expect(sealed.json.data.encryptedData.algorithm).toBe("AES-256-GCM")
    // the ciphertext is what it says: AES-256-GCM under the UTF-8 bytes of the key
    const { ciphertext, nonce, tag } = sealed.json.data.encryptedData
    const decipher = Crypto.createDecipheriv("aes-256-gcm", Buffer.from(ENC_KEY, "utf8"), Buffer.from(nonce, "base64"))
    decipher.setAuthTag(Buffer.from(tag, "base64"))
    const plain = Buffer.concat([decipher.update(Buffer.from(ciphertext, "base64")), decipher.final()]).toString("utf8")
    // the sealed text is the committed JSON itself
    expect(sha256(plain)).toBe(r.json.data.hash)
    expect(JSON.parse(plain)).toEqual({ data, salt: r.json.data.salt })
    const opened = await api("GET", `/v1/records/${id}`, undefined, { "x-encryption-key": ENC_KEY })
    expect(opened.json.data.data).toEqual(data)
    expect(opened.json.data.encryptedData).toBeUndefined()
    expectError(await api("GET", `/v1/records/${id}`, undefined, { "x-encryption-key": "x".repeat(32) }), 400, "INVALID_ENCRYPTION_KEY")
    expectError(await api("POST", "/v1/anchor/encrypted", { data }), 400, "VALIDATION_ERROR", /encryptionKey/)
  })

  it("Idempotency-Key: same body replays the original response; another body is 409", async () => {
    const idem = { "idempotency-key": `k-${Date.now()}` }
    const first = await api("POST", "/v1/anchor", { data: { pay: 1 } }, idem)
    expect(first.status).toBe(202)
    const again = await api("POST", "/v1/anchor", { data: { pay: 1 } }, idem)
    expect(again.status).toBe(202)
    expect(again.text).toBe(first.text)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expectError(await api("POST", "/v1/anchor", { data: { pay: 2 } }, idem), 409, "IDEMPOTENCY_CONFLICT")
    const rows = await query<{ n: string }>(node.databaseUrl, "SELECT count(*) AS n FROM records WHERE hash = $1", [first.json.data.hash])
    expect(Number(rows[0].n)).toBe(1)
    // concurrent requests with one key: exactly one record
    const k2 = { "idempotency-key": `c-${Date.now()}` }
    const all = await Promise.all(Array.from({ length: 8 }, () => api("POST", "/v1/anchor", { data: { race: k2["idempotency-key"] } }, k2)))
    expect(new Set(all.map((r) => r.json.data.recordId)).size).toBe(1)
    expect(all.every((r) => r.status === 202)).toBe(true)
  })

  it("POST /v1/anchor/batch: per-item results, valid items accepted", async () => {
    const r = await api("POST", "/v1/anchor/batch", {
      records: [{ data: { i: 0 } }, { data: "no" }, { data: { i: 2 }, encryptionKey: "x" }, { data: { i: 3 }, chain: "evm" }]
    })
    // 207 Multi-Status: some items refused (202 only when all are accepted)
    expect(r.status).toBe(207)
    expect(r.json.data.accepted).toBe(2)
    expect(r.json.data.rejected).toBe(2)
    expect(r.json.data.summary).toEqual({ successful: 2, failed: 2 })
    expect(r.json.data.results[0]).toMatchObject({ index: 0, success: true, data: { status: "QUEUED" } })
    expect(r.json.data.results[1]).toMatchObject({ index: 1, success: false, errorCode: "VALIDATION_ERROR" })
    expect(r.json.data.results[1].error).toMatch(/records\[1\]\.data/)
    expect(r.json.data.results[2]).toMatchObject({ index: 2, success: false, errorCode: "VALIDATION_ERROR" })
    expectError(await api("POST", "/v1/anchor/batch", { records: [] }), 400, "VALIDATION_ERROR", /records/)
    expectError(await api("POST", "/v1/anchor/batch", { records: Array.from({ length: 101 }, () => ({ data: {} })) }), 400, "VALIDATION_ERROR", /records/)
  })

  it("PATCH updates metadata and webhookUrl only (422 IMMUTABLE_FIELD otherwise) and writes record.updated", async () => {
    const created = (await api("POST", "/v1/anchor", { data: { v: 1 } })).json.data
    const r = await api("PATCH", `/v1/records/${created.recordId}`, { metadata: { tag: "x" }, webhookUrl: null })
    expect(r.status).toBe(200)
    expect(r.json.data).toMatchObject({ metadata: { tag: "x" }, webhookUrl: null, hash: created.hash })
    expect(r.json.data.updatedAt >= created.updatedAt).toBe(true)
    for (const body of [{ data: { v: 2 } }, { hash: "0".repeat(64) }, { status: "ANCHORED" }, { metadata: {}, packageMode: "MANAGED" }]) {
      expectError(await api("PATCH", `/v1/records/${created.recordId}`, body), 422, "IMMUTABLE_FIELD")
    }
    expectError(await api("PATCH", `/v1/records/${created.recordId}`, { metadata: [1] }), 400, "VALIDATION_ERROR")
    const events = await query<{ kind: string; payload: any }>(node.databaseUrl, "SELECT kind, payload FROM all_events WHERE record_id = $1", [
      created.recordId
    ])
    // webhookUrl was null already: not a change, so not in `changes` (docs/api.md, "Update and delete")
    // The changed metadata is stored as its JSON text (jsonb would sort its members: src/outbox/events.ts).
    expect(events).toEqual([{ kind: "record.updated",
      payload: expect.objectContaining({ recordId: created.recordId, changes: { metadata: "{\"tag\":\"x\"}" } }) }])
    const unchanged = await query<{ data_jcs: string }>(node.databaseUrl, "SELECT data_jcs FROM records WHERE id = $1", [created.recordId])
    expect(unchanged[0].data_jcs).toBe("{\"v\":1}")
  })

  it("PATCH answers the metadata in the client's member order (jsonb would sort it), nested members too", async () => {
    const created = (await api("POST", "/v1/anchor", { data: { order: 1 } })).json.data
    // Sorted by jsonb these would read a_2, mm, zzz_1 (shorter keys first, then bytes): the client sent them otherwise.
    const text = "{\"zzz_1\":1,\"mm\":{\"y\":1,\"b\":[{\"q\":1,\"a\":2}]},\"a_2\":2}"
    const r = await fetch(`${node.baseUrl}/v1/records/${created.recordId}`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: `{"metadata":${text}}`
    })
    expect(r.status).toBe(200)
    const answer: any = await r.json()
    expect(JSON.stringify(answer.data.metadata)).toBe(text)
    // Sent again in another order: no change (the same JSON value), and the answer follows this request's order.
    const again = await api("PATCH", `/v1/records/${created.recordId}`, { metadata: { a_2: 2, mm: { b: [{ a: 2, q: 1 }], y: 1 }, zzz_1: 1 } })
    expect(JSON.stringify(again.json.data.metadata)).toBe("{\"a_2\":2,\"mm\":{\"b\":[{\"a\":2,\"q\":1}],\"y\":1},\"zzz_1\":1}")
    const events = await query<{ payload: any }>(node.databaseUrl, "SELECT payload FROM all_events WHERE record_id = $1", [created.recordId])
    expect(events.map((e) => e.payload.changes)).toEqual([{ metadata: text }])
  })

  it("PATCH that changes nothing ({} or the current values): 200 with the record as it is, no event, updatedAt kept", async () => {
    const created =
      (await api("POST", "/v1/anchor", { data: { noop: 1 }, metadata: { a: 1, b: { c: [1, 2] } }, webhookUrl: "http://127.0.0.1:9/hook" })).json.data
    const eventsOf = () => query<{ payload: any }>(node.databaseUrl, "SELECT payload FROM all_events WHERE record_id = $1 ORDER BY id", [created.recordId])
    for (const body of [{}, { metadata: { b: { c: [1, 2] }, a: 1 } }, { webhookUrl: "http://127.0.0.1:9/hook" }, { metadata: { a: 1, b: { c: [1, 2] } },
      webhookUrl: "http://127.0.0.1:9/hook" }])
    {
      const r = await api("PATCH", `/v1/records/${created.recordId}`, body)
      expect(r.status, JSON.stringify(body)).toBe(200)
      expect(r.json.data).toEqual(created)
    }
    expect(await eventsOf()).toEqual([])
    // one member changed, the other sent as it was: only the changed one is in `changes`
    const r = await api("PATCH", `/v1/records/${created.recordId}`, { metadata: { a: 2 }, webhookUrl: "http://127.0.0.1:9/hook" })
    expect(r.json.data).toMatchObject({ metadata: { a: 2 }, webhookUrl: "http://127.0.0.1:9/hook" })
    expect(r.json.data.updatedAt >= created.updatedAt).toBe(true)
    expect((await eventsOf()).map((e) => e.payload.changes)).toEqual([{ metadata: "{\"a\":2}" }])
    // clearing the URL is a change; clearing it again is not
    await api("PATCH", `/v1/records/${created.recordId}`, { webhookUrl: null })
    await api("PATCH", `/v1/records/${created.recordId}`, { webhookUrl: null })
    expect((await eventsOf()).map((e) => e.payload.changes)).toEqual([{ metadata: "{\"a\":2}" }, { webhookUrl: null }])
  })

  it("soft delete hides the record (410), hard delete erases data and keeps a tombstone", async () => {
    const soft = (await api("POST", "/v1/anchor", { data: { s: 1 }, metadata: { m: 1 } })).json.data
    const del = await api("DELETE", `/v1/records/${soft.recordId}`)
    expect(del.status).toBe(200)
    expect(del.json.data).toMatchObject({ recordId: soft.recordId, mode: "soft" })
    expectError(await api("GET", `/v1/records/${soft.recordId}`), 410, "RECORD_DELETED")
    expectError(await api("PATCH", `/v1/records/${soft.recordId}`, { metadata: {} }), 410, "RECORD_DELETED")
    expectError(await api("DELETE", `/v1/records/${soft.recordId}`), 410, "RECORD_DELETED")
    const owner = await api("GET", `/v1/records/${soft.recordId}?includeDeleted=true`)
    expect(owner.json.data).toMatchObject({ status: "DELETED", data: { s: 1 }, metadata: { m: 1 } })
    expect((await api("GET", "/v1/records?limit=100")).json.data.records.map((r: any) => r.recordId)).not.toContain(soft.recordId)
    expect((await api("GET", "/v1/records?status=DELETED")).json.data.records.map((r: any) => r.recordId)).toContain(soft.recordId)

    const hard = (await api("POST", "/v1/anchor/encrypted", { data: { h: 1 }, encryptionKey: ENC_KEY, metadata: { m: 2 } })).json.data
    expect((await api("DELETE", `/v1/records/${hard.recordId}?mode=hard`)).json.data.mode).toBe("hard")
    const rows = await query<Record<string, unknown>>(node.databaseUrl, "SELECT * FROM records WHERE id = $1", [hard.recordId])
    expect(rows[0]).toMatchObject({ data_jcs: null, ciphertext: null, nonce: null, auth_tag: null, metadata: {}, hard_deleted: true, hash: hard.hash })
    expectError(await api("GET", `/v1/records/${hard.recordId}?includeDeleted=true`), 410, "RECORD_DELETED")
    // a soft-deleted record can still be erased for good
    expect((await api("DELETE", `/v1/records/${soft.recordId}?mode=hard`)).status).toBe(200)
    expectError(await api("DELETE", `/v1/records/${soft.recordId}?mode=nope`), 400, "VALIDATION_ERROR", /mode/)
    const events = await query<{ kind: string; payload: any }>(node.databaseUrl, "SELECT kind, payload FROM all_events WHERE record_id = ANY($1) ORDER BY id", [
      [soft.recordId, hard.recordId]
    ])
    expect(events.map((e) => `${e.kind}:${e.payload.mode}`)).toEqual(["record.deleted:soft", "record.deleted:hard", "record.deleted:hard"])
  })

  it("GET /v1/records: newest first, cursor pagination without gaps or repeats, status filter", async () => {
    const fresh = (await node.createKey(await node.createAccount())).key
    const ids: Array<string> = []
    for (let i = 0; i < 7; i++) ids.push((await call(node.baseUrl, "POST", "/v1/anchor", { key: fresh, body: { data: { i } } })).json.data.recordId)
    const seen: Array<string> = []
    let cursor: string | null = null
    do {
      const page: any = await call(node.baseUrl, "GET", `/v1/records?limit=3${cursor ? `&cursor=${cursor}` : ""}`, { key: fresh })
      expect(page.status).toBe(200)
      expect(page.json.data.records.length).toBeLessThanOrEqual(3)
      seen.push(...page.json.data.records.map((r: any) => r.recordId))
      cursor = page.json.data.nextCursor
    } while (cursor)
    expect(seen).toEqual([...ids].reverse())
    expect((await call(node.baseUrl, "GET", "/v1/records?status=ANCHORED", { key: fresh })).json.data.records).toEqual([])
    expect((await call(node.baseUrl, "GET", "/v1/records?status=QUEUED&limit=100", { key: fresh })).json.data.records.length).toBe(7)
  })

  it("GET /v1/proof/{hash}: the caller's records with that hash", async () => {
    const data = { proof: "me" }
    const a = (await api("POST", "/v1/anchor", { data })).json.data
    const b = (await api("POST", "/v1/anchor", { data })).json.data
    const r = await api("GET", `/v1/proof/${a.hash}`)
    expect(r.status).toBe(200)
    expect(r.json.data.hash).toBe(a.hash)
    expect(r.json.data.records.map((x: any) => x.recordId).sort()).toEqual([a.recordId, b.recordId].sort())
    expectError(await api("GET", `/v1/proof/${"f".repeat(64)}`), 404, "RECORD_NOT_FOUND")
  })

  it("GET /v1/proof/{hash}: the same hash anchored by another account or environment stays theirs; the lookup is an index probe", async () => {
    const data = { proof: "shared" }
    const mine = (await api("POST", "/v1/anchor", { data })).json.data
    const accountId = await node.createAccount()
    const otherKey = (await node.createKey(accountId)).key
    const liveKey = (await node.createKey(accountId, "live")).key
    const theirs = (await call(node.baseUrl, "POST", "/v1/anchor", { key: otherKey, body: { data } })).json.data
    const theirsLive = (await call(node.baseUrl, "POST", "/v1/anchor", { key: liveKey, body: { data } })).json.data
    expect(new Set([mine.hash, theirs.hash, theirsLive.hash]).size).toBe(1)
    const ids = async (k: string) => (await call(node.baseUrl, "GET", `/v1/proof/${mine.hash}`, { key: k })).json.data.records.map((x: any) => x.recordId)
    expect(await ids(key)).toEqual([mine.recordId])
    expect(await ids(otherKey)).toEqual([theirs.recordId])
    expect(await ids(liveKey)).toEqual([theirsLive.recordId])
    // For an account with many records, the records_hash index answers the lookup, not a walk
    // through all of the account's records.
    await query(node.databaseUrl, `
      INSERT INTO records (id, account_id, environment, hash, chain_type, network_id, package_mode, source)
      SELECT lpad(to_hex(g), 24, '0'), account_id, environment, md5(g::text) || md5((-g)::text), chain_type, network_id, package_mode, source
      FROM records, generate_series(1, 5000) AS g WHERE id = $1`, [theirs.recordId])
    await query(node.databaseUrl, "ANALYZE records")
    const plan = await indexPlan(node.databaseUrl, `
      SELECT * FROM records WHERE account_id = $1 AND environment = 'test' AND hash = $2
      AND deleted_at IS NULL ORDER BY id DESC LIMIT 100`, [accountId, mine.hash])
    expect(plan).toMatch(/Index Scan using records_hash on records/)
    expect(plan).not.toMatch(/records_list/)
  })

  it("a live key needs an https webhook to a public address; a test key may use http; loopback is open to both here", async () => {
    const live = (await node.createKey(await node.createAccount(), "live")).key
    // The whole egress policy: test/webhooks/ssrf.test.ts. These nodes open loopback (vitest.config.ts).
    for (const url of ["http://example.com/h", "http://127.0.0.1/h", "https://10.0.0.8/h", "https://169.254.169.254/latest",
      "https://metadata.google.internal/x", "https://192.168.1.1/h", "https://[::ffff:10.0.0.8]/h"])
    {
      const r = await call(node.baseUrl, "POST", "/v1/anchor", { key: live, body: { data: {}, webhookUrl: url } })
      expectError(r, 400, "INVALID_WEBHOOK_URL")
    }
    const ok = await call(node.baseUrl, "POST", "/v1/anchor", { key: live, body: { data: {}, webhookUrl: "https://93.184.215.14/hook" } })
    expect(ok.status).toBe(202)
    expect(ok.json.data.environment).toBe("live")
    expect((await api("POST", "/v1/anchor", { data: {}, webhookUrl: "http://localhost:3000/h" })).status).toBe(202)
    expect((await call(node.baseUrl, "POST", "/v1/anchor", { key: live, body: { data: {}, webhookUrl: "https://[::1]:3000/h" } })).status).toBe(202)
    expectError(await api("POST", "/v1/anchor", { data: {}, webhookUrl: "http://10.0.0.8/h" }), 400, "INVALID_WEBHOOK_URL")
  })

  it("GET /v1/health and /v1/openapi.json need no key", async () => {
    const health = await call(node.baseUrl, "GET", "/v1/health")
    expect(health.status).toBe(200)
    expect(health.json.data).toMatchObject({ status: "ok", database: { status: "up" } })
    const spec = await call(node.baseUrl, "GET", "/v1/openapi.json")
    expect(spec.status).toBe(200)
    expect(spec.json.openapi).toMatch(/^3\./)
    for (const path of ["/v1/anchor", "/v1/anchor/encrypted", "/v1/anchor/hash", "/v1/anchor/batch", "/v1/records", "/v1/records/{recordId}",
      "/v1/proof/{hash}", "/v1/usage", "/v1/health"])
    {
      expect(Object.keys(spec.json.paths)).toContain(path)
    }
  })
})
