/**
 * Hard delete erases (issue 23, finding 6; docs/api.md "What a hard delete leaves"): after
 * `DELETE ?mode=hard` no copy of the record's data, metadata, collection or webhook URL is left in any
 * column of any table, although the record had a history: updated, anchored, webhooks delivered, one
 * delivery still waiting for its retry, an Idempotency-Key answer. Every text, varchar, json, jsonb,
 * array and bytea column of every table is scanned for a marker (from information_schema, so a table
 * added later is scanned too).
 */
import * as Crypto from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { query } from "../support/db.ts"
import { allEvents } from "../support/events.ts"
import { call } from "../support/node.ts"
import { confirmAnchor, type Receiver, startReceiver, startWebhookNode, waitFor, type WebhookNode } from "../webhooks/support.ts"
import { CANCELLED } from "../../src/records/RecordStore.ts"
import { eraseFromAnswer } from "../../src/records/erasure.ts"

const MARKER = `zq${Crypto.randomBytes(8).toString("hex")}`
const KEY = "k".repeat(16) + "0123456789abcdef"

/** Every (table, column) of the database whose text holds the marker. */
const scan = async (databaseUrl: string, marker: string) => {
  const columns = await query<{ table_name: string; column_name: string; data_type: string }>(databaseUrl, `
    SELECT c.table_name, c.column_name, c.data_type
    FROM information_schema.columns c
    JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
    WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
      AND c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'ARRAY', 'bytea', 'USER-DEFINED')`)
  expect(columns.length).toBeGreaterThan(50)
  const hits: Array<string> = []
  for (const c of columns) {
    const column = `"${c.column_name}"`
    const test = c.data_type === "bytea"
      ? `position(convert_to($1, 'UTF8') IN ${column}) > 0`
      : `strpos(${column}::text, $1) > 0`
    const rows = await query<{ n: number }>(databaseUrl, `SELECT count(*)::int AS n FROM "${c.table_name}" WHERE ${test}`, [marker])
    if (rows[0].n > 0) hits.push(`${c.table_name}.${c.column_name}`)
  }
  return hits
}

describe("hard delete erases the record everywhere", () => {
  let node: WebhookNode
  let receiver: Receiver
  let key: string
  let accountId: string
  const api = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => call(node.baseUrl, method, path, { key, body, headers })

  beforeAll(async () => {
    // /failing answers 500: its deliveries wait for their retry (a minute away) with their bodies stored.
    receiver = await startReceiver((r) => r.path.startsWith("/failing") ? 500 : 200)
    node = await startWebhookNode()
    accountId = await node.createAccount()
    key = await node.createKey(accountId)
  })
  afterAll(async () => {
    await node?.stop()
    await receiver?.close()
  })

  it("leaves no copy of data, metadata, collection or webhook URL in any column, and says what remains", async () => {
    const hookPath = `/hook/${MARKER}?who=${MARKER}`
    const created = await api("POST", "/v1/anchor", {
      data: { name: MARKER },
      metadata: { note: MARKER },
      collection: `c-${MARKER}`,
      webhookUrl: `${receiver.url}${hookPath}`
    }, { "idempotency-key": `idem-${MARKER.slice(0, 4)}` })
    expect(created.status).toBe(202)
    const a = created.json.data
    const sealed = await api("POST", "/v1/anchor/encrypted", {
      data: { secret: MARKER },
      encryptionKey: KEY,
      metadata: { note: MARKER },
      collection: `c-${MARKER}`,
      webhookUrl: `${receiver.url}/failing`
    })
    expect(sealed.status).toBe(202)
    const b = sealed.json.data

    // History: updated (both), anchored (a: form B carries the metadata), delivered.
    expect((await api("PATCH", `/v1/records/${a.recordId}`, { metadata: { note: `${MARKER}-2` } })).status).toBe(200)
    expect((await api("PATCH", `/v1/records/${b.recordId}`, { metadata: { note: `${MARKER}-2` } })).status).toBe(200)
    await confirmAnchor(node.databaseUrl, a.recordId)
    const toA = (n: number) => receiver.waitFor(n, 15_000, (r) => r.path === hookPath)
    const [updated, anchored] = await toA(2)
    expect(updated.body).toContain(MARKER)
    expect(anchored.body).toContain(MARKER)
    // b's record.updated failed its first attempt: pending, its body (with the metadata) stored.
    await waitFor("b's failed first attempt", async () => {
      const rows = await query<{ state: string; attempts: number; body: string | null }>(node.databaseUrl,
        "SELECT state, attempts, body FROM webhook_deliveries WHERE record_id = $1", [b.recordId])
      return rows.length === 1 && rows[0].state === "PENDING" && rows[0].attempts === 1 && rows[0].body?.includes(MARKER)
    })
    expect((await scan(node.databaseUrl, MARKER)).length).toBeGreaterThan(5)

    expect((await api("DELETE", `/v1/records/${a.recordId}?mode=hard`)).status).toBe(200)
    expect((await api("DELETE", `/v1/records/${b.recordId}?mode=hard`)).status).toBe(200)

    // The hard delete's own record.deleted still reaches the record's webhookUrl, without the erased fields.
    const [, , deleted] = await toA(3)
    expect(JSON.parse(deleted.body)).toMatchObject({ event: "record.deleted", data: { recordId: a.recordId, status: "DELETED", mode: "hard" } })
    expect(deleted.body).not.toContain(MARKER)
    await waitFor("a's record.deleted delivery to finish", async () => {
      const rows = await query<{ n: number }>(node.databaseUrl, "SELECT count(*)::int AS n FROM webhook_deliveries WHERE record_id = $1 AND state = 'PENDING'",
        [a.recordId])
      return rows[0].n === 0
    })

    expect(await scan(node.databaseUrl, MARKER)).toEqual([])
    // The derived anchor.confirmed (migration 0012) renders from what remains.
    const events = (await allEvents(node.databaseUrl, [a.recordId, b.recordId])).map((e) => ({ payload: JSON.stringify(e.payload) }))
    expect(events.length).toBe(5)
    for (const e of events) expect(e.payload).not.toContain(MARKER)

    // What remains: id, hash, anchors, times; the encrypted record's ciphertext is gone.
    const [rowA] = await query<Record<string, unknown>>(node.databaseUrl, "SELECT * FROM records WHERE id = $1", [a.recordId])
    expect(rowA).toMatchObject({ id: a.recordId, hash: a.hash, hard_deleted: true, data_jcs: null, collection: null, webhook_url: null, metadata: {} })
    const [rowB] = await query<Record<string, unknown>>(node.databaseUrl, "SELECT * FROM records WHERE id = $1", [b.recordId])
    expect(rowB).toMatchObject({ hash: b.hash, ciphertext: null, nonce: null, auth_tag: null, collection: null, webhook_url: null })
    expect((await query(node.databaseUrl, "SELECT 1 FROM anchors WHERE record_id = $1", [a.recordId])).length).toBe(1)

    // The delivery log keeps its entries (status, times, attempts), URLs cut to their origin.
    const log = (await api("GET", `/v1/webhooks/deliveries?recordId=${a.recordId}`)).json.data.deliveries
    expect(log.map((d: { status: string }) => d.status)).toEqual(["SUCCEEDED", "SUCCEEDED", "SUCCEEDED"])
    for (const d of log) expect(d.url).toBe(receiver.url)
    // b's pending delivery was cancelled; its record.deleted waits for its own retry.
    const logB = (await api("GET", `/v1/webhooks/deliveries?recordId=${b.recordId}`)).json.data.deliveries
    expect(logB.map((d: { status: string; lastError: string | null }) => [d.status, d.lastError])).toEqual([
      ["PENDING", "HTTP 500"],
      ["FAILED", CANCELLED]
    ])
    // Erased deliveries are not redelivered.
    expect((await api("POST", `/v1/webhooks/deliveries/${log[0].id}/redeliver`, {})).status).toBe(404)
    // An Idempotency-Key replay answers the erased view.
    const replay = await api("POST", "/v1/anchor", {
      data: { name: MARKER },
      metadata: { note: MARKER },
      collection: `c-${MARKER}`,
      webhookUrl: `${receiver.url}${hookPath}`
    }, { "idempotency-key": `idem-${MARKER.slice(0, 4)}` })
    expect(replay.headers.get("idempotent-replayed")).toBe("true")
    expect(replay.json.data).toMatchObject({ recordId: a.recordId, hash: a.hash, data: null, metadata: {}, collection: null, webhookUrl: null })
    expect((await api("GET", `/v1/records/${a.recordId}`)).status).toBe(410)
  }, 60_000)
})

describe("eraseFromAnswer (stored Idempotency-Key answers)", () => {
  const view = (id: string, data: string, extra = "") =>
    `{"recordId":"${id}","hash":"${"a".repeat(64)}","status":"QUEUED","collection":"c}\\"{","metadata":{"k":"}{\\"]"},` +
    `"webhookUrl":"https://x.example/p?q={","encrypted":false${extra},"anchors":[],"data":${data}}`
  const one = "0".repeat(23) + "1"
  const two = "0".repeat(23) + "2"

  it("erases one record's view of a batch answer and keeps every other byte", () => {
    const deep = `${"[".repeat(64)}"}"${"]".repeat(64)}`
    // the other record refers to this one by id, in its data and in its metadata (not JCS-ordered)
    const other = view(two, `{"ref":{"recordId":"${one}","x":1},"s":"{\\"recordId\\":\\"${one}\\""}`)
      .replace("\"metadata\":{", `"metadata":{"success":true,"data":{"recordId":"${one}"},`)
    const body = `{"success":true,"data":{"accepted":2,"rejected":1,"summary":{"successful":2,"failed":1},"results":[` +
      `{"index":0,"success":true,"data":${other}},{"index":1,"success":false,"error":"data: must be a JSON object","errorCode":"VALIDATION_ERROR"},` +
      `{"index":2,"success":true,"data":${view(one, `{"deep":${deep}}`)}}]}}`
    JSON.parse(body)
    const erased = eraseFromAnswer(body, one)!
    const parsed = JSON.parse(erased)
    expect(parsed.data.results[2].data).toEqual({
      recordId: one,
      hash: "a".repeat(64),
      status: "QUEUED",
      collection: null,
      metadata: {},
      webhookUrl: null,
      encrypted: false,
      anchors: [],
      data: null
    })
    expect(erased.startsWith(body.slice(0, body.indexOf("{\"index\":2")))).toBe(true)
    expect(eraseFromAnswer(body, "f".repeat(24))).toBeUndefined()
  })

  it("drops an encrypted record's ciphertext and salt", () => {
    const body = `{"success":true,"data":${
      view(one, "null",
        `,"encryptedData":{"algorithm":"AES-256-GCM","ciphertext":"Zm9v","nonce":"YQ==","tag":"Yg=="},"hashScheme":"salted-jcs-sha256","salt":"${
          "s".repeat(43)
        }"`)
    }}`
    const erased = JSON.parse(eraseFromAnswer(body, one)!).data
    expect(erased.encryptedData).toBeUndefined()
    expect(erased.salt).toBeUndefined()
    expect(erased.hashScheme).toBe("salted-jcs-sha256")
  })
})
