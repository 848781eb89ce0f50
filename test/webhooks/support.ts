/**
 * Webhook test kit: a real node:http receiver on loopback that records every request with its raw
 * body, independent signature checks with node:crypto, and an in-process node whose DNS the test
 * may stand in for (src/webhooks/urlPolicy.ts WebhookResolver).
 */
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import { expect } from "vitest"
import { ConfigProvider, Layer } from "effect"
import { NodeLayer } from "../../src/app/layers.ts"
import { type Resolve, WebhookResolver } from "../../src/webhooks/urlPolicy.ts"
import { query } from "../support/db.ts"
import { startNode, type TestNode } from "../support/node.ts"
import { evmUnservedEnv } from "../support/process.ts"
import { waitFor } from "../support/wait.ts"

export interface Received {
  readonly path: string
  readonly method: string
  readonly headers: Http.IncomingHttpHeaders
  /** The raw header names as sent (case preserved). */
  readonly rawHeaderNames: ReadonlyArray<string>
  readonly body: string
  readonly at: number
}

export type Reply = number | "hang" | { status: number; headers?: Record<string, string>; delayMs?: number; body?: string }

export interface Receiver {
  readonly url: string
  readonly port: number
  readonly received: Array<Received>
  reply: (request: Received, index: number) => Reply
  readonly waitFor: (n: number, ms?: number, filter?: (r: Received) => boolean) => Promise<Array<Received>>
  readonly close: () => Promise<void>
}

export const startReceiver = async (reply: (request: Received, index: number) => Reply = () => 200): Promise<Receiver> => {
  const received: Array<Received> = []
  const hanging: Array<Http.ServerResponse> = []
  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const entry: Received = {
        path: req.url ?? "",
        method: req.method ?? "",
        headers: req.headers,
        rawHeaderNames: req.rawHeaders.filter((_, i) => i % 2 === 0),
        body: Buffer.concat(chunks).toString("utf8"),
        at: performance.now()
      }
      received.push(entry)
      const r = receiver.reply(entry, received.length - 1)
      if (r === "hang") {
        hanging.push(res)
        return
      }
      const { body, delayMs, headers, status } = typeof r === "number" ? { status: r, headers: {}, delayMs: 0, body: undefined } : r
      const respond = () => {
        if (res.destroyed) return
        res.writeHead(status, { "content-type": "text/plain", ...headers })
        res.end(body ?? "ok")
      }
      if (delayMs) setTimeout(respond, delayMs)
      else respond()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as { port: number }).port
  const receiver: Receiver = {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    reply,
    waitFor: async (n, ms = 15_000, filter = () => true) => {
      const until = Date.now() + ms
      while (received.filter(filter).length < n) {
        if (Date.now() > until) throw new Error(`receiver: ${received.filter(filter).length} of ${n} requests after ${ms} ms`)
        await new Promise((r) => setTimeout(r, 10))
      }
      return received.filter(filter)
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy()
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
  return receiver
}

/** The receiver's side of SPEC 5.4, written from the spec with node:crypto only. */
export const hmacHex = (secret: string, body: string) => Crypto.createHmac("sha256", secret).update(body, "utf8").digest("hex")
export const verifySignature = (secret: string, body: string, header: string | string[] | undefined): boolean => {
  if (typeof header !== "string" || !header.startsWith("sha256=")) return false
  const expected = Buffer.from(`sha256=${hmacHex(secret, body)}`, "utf8")
  const given = Buffer.from(header, "utf8")
  return given.length === expected.length && Crypto.timingSafeEqual(given, expected)
}

/** Form A: the inner `signature` is the same construction over the payload without that member. */
export const verifyInnerSignature = (secret: string, body: string): boolean => {
  const parsed = JSON.parse(body)
  const { signature, ...rest } = parsed
  return verifySignature(secret, JSON.stringify(rest), signature)
}

/** Every header of SPEC 5.3 on one delivery. */
export const expectDeliveryHeaders = (r: Received, expected: {
  event: string
  hash: string
  packageMode: string
  chain: string
  network: string
  attempt: number
  eventId?: string
}) => {
  const h = r.headers
  expect(r.method).toBe("POST")
  expect(h["x-service-event"]).toBe(expected.event)
  expect(h["x-service-hash"]).toBe(expected.hash)
  expect(h["x-service-hash"]).toMatch(/^[0-9a-f]{64}$/)
  expect(h["x-service-package"]).toBe(expected.packageMode)
  expect(h["x-service-chain"]).toBe(expected.chain)
  expect(h["x-service-network"]).toBe(expected.network)
  expect(h["x-service-retry-attempt"]).toBe(String(expected.attempt))
  expect(h["x-webhook-signature"]).toMatch(/^sha256=[0-9a-f]{64}$/)
  expect(h["x-service-event-id"]).toMatch(/^evt_[0-9a-f]+$/)
  if (expected.eventId !== undefined) expect(h["x-service-event-id"]).toBe(expected.eventId)
  const ts = Number(h["x-service-timestamp"])
  expect(Number.isInteger(ts)).toBe(true)
  expect(Math.abs(ts - Date.now() / 1000)).toBeLessThan(30)
  // Standard Webhooks (SPEC 5.3; verified with the library in standard.test.ts)
  expect(h["webhook-id"]).toBe(h["x-service-event-id"])
  expect(h["webhook-timestamp"]).toBe(h["x-service-timestamp"])
  expect(h["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=( v1,[A-Za-z0-9+/]{43}=)?$/)
  expect(h["content-type"]).toBe("application/json")
  expect(h["user-agent"]).toMatch(/^anchord\/\d+\.\d+\.\d+/)
  expect(Number(h["content-length"])).toBe(Buffer.byteLength(r.body))
  // The seed's spellings, as sent on the wire.
  for (const name of ["X-Service-Event", "X-Service-Hash", "X-Service-Package", "X-Service-Chain", "X-Service-Network", "X-Service-Retry-Attempt",
    "x-webhook-signature", "X-Service-Event-Id", "X-Service-Timestamp"])
  {
    expect(r.rawHeaderNames).toContain(name)
  }
  // compact JSON.stringify serialization
  expect(JSON.stringify(JSON.parse(r.body))).toBe(r.body)
}

export interface WebhookNode {
  readonly baseUrl: string
  readonly databaseUrl: string
  readonly createAccount: () => Promise<string>
  readonly createKey: (accountId: string, environment?: "test" | "live") => Promise<string>
  /** The secret of the account's settings of this environment (default test, like `createKey`). */
  readonly secretOf: (accountId: string, environment?: "test" | "live") => Promise<string>
  /** The node's services, for what the API cannot do (a console user with a password). */
  readonly runtime: TestNode["runtime"]
  readonly stop: () => Promise<void>
}

/**
 * An in-process node (all of NodeLayer). Dispatcher settings come from the environment (WEBHOOK_*),
 * which the test file sets before calling this; the egress policy opens loopback for the receivers
 * (WEBHOOK_ALLOW_PRIVATE=loopback from vitest.config.ts) unless `env` says otherwise.
 */
export const startWebhookNode = async (options: { env?: Record<string, string>; resolve?: Resolve; databaseUrl?: string } = {}): Promise<WebhookNode> => {
  for (const [k, v] of Object.entries(options.env ?? {})) process.env[k] = v
  const nodeLayer = options.resolve === undefined ? NodeLayer : NodeLayer.pipe(Layer.provide(Layer.succeed(WebhookResolver, options.resolve)))
  // The environment as of this start: Effect's default provider reads process.env once per process,
  // so without this a second node of the same file would see the first one's WEBHOOK_* settings.
  // EVM records wait in QUEUED without a chain: EVM_<ENV>_NETWORK_ID name the default ids (test/support/process.ts).
  const env = ConfigProvider.fromEnv({ env: { ...evmUnservedEnv(process.env), ...process.env } as Record<string, string> })
  const layer = nodeLayer.pipe(Layer.provide(Layer.succeed(ConfigProvider.ConfigProvider, env)))
  const node = await startNode({ databaseUrl: options.databaseUrl, layer })
  return {
    baseUrl: node.baseUrl,
    databaseUrl: node.databaseUrl,
    createAccount: () => node.createAccount({ name: "webhooks", ratePerSecond: 10_000 }),
    createKey: (accountId, environment = "test") => node.createKey(accountId, environment).then((k) => k.key),
    secretOf: async (accountId, environment = "test") =>
      (await query<{ webhook_secret: string }>(node.databaseUrl,
        "SELECT secret AS webhook_secret FROM webhook_settings WHERE account_id = $1 AND environment = $2", [accountId, environment]))[0].webhook_secret,
    runtime: node.runtime,
    stop: node.stop
  }
}

interface AnchorFacts {
  txHash?: string
  blockNumber?: number | null
  batchId?: number | string
  merkleProof?: Array<string>
  chainType?: string
  networkId?: string
  anchoredAt?: string
}

/** A confirmed batch of these records on one network, with their anchors (no chain behind it); its id. */
const confirmedBatch = async (databaseUrl: string, recordIds: Array<string>, facts: AnchorFacts, anchoredAt: string) => {
  const chainType = facts.chainType ?? "evm"
  const batchId = facts.batchId ?? 7
  const rows = await query<{ id: string }>(databaseUrl, `
    WITH b AS (
      INSERT INTO anchor_batches (network_id, chain_type, merkle_root, leaf_count, state, chain_batch_id, chain_batch_ref, tx_hash,
        block_number, anchored_at, confirmed_at)
      VALUES ($1, $2, $3, $4, 'CONFIRMED', $5, $6, $7, $8, $9::timestamptz, clock_timestamp()) RETURNING id
    ), a AS (
      INSERT INTO anchors (record_id, network_id, chain_type, batch_id, leaf_index, merkle_proof)
      SELECT x.r, $1, $2, b.id, x.ord - 1, $10::text[] FROM b, unnest($11::text[]) WITH ORDINALITY AS x(r, ord)
    )
    SELECT id::text AS id FROM b`, [
    facts.networkId ?? "hardhat-local",
    chainType,
    `0x${Crypto.randomBytes(32).toString("hex")}`,
    recordIds.length,
    chainType === "evm" ? batchId : null,
    chainType === "evm" ? null : String(batchId),
    facts.txHash ?? `0x${"ab".repeat(32)}`,
    facts.blockNumber === undefined ? 42 : facts.blockNumber,
    facts.anchoredAt ?? anchoredAt,
    facts.merkleProof ?? [`0x${"ef".repeat(32)}`],
    recordIds
  ])
  return rows[0]!.id
}

/**
 * What the anchoring pipeline does when records are confirmed (src/anchoring/BatchStore.ts): a
 * confirmed batch with their anchors (`facts`; a hybrid record's other anchor in its own batch from
 * `dualAnchor`; the records then read ANCHORED, migration 0016), and one `batch_events` row per account,
 * from which each record's `anchor.confirmed` is derived and fanned out (migration 0012). Each
 * record's event id, and the anchoredAt.
 */
export const confirmBatch = async (databaseUrl: string, recordIds: Array<string>, facts: AnchorFacts & {
  dualAnchor?: AnchorFacts
} = {}) => {
  const anchoredAt = new Date().toISOString()
  if (facts.dualAnchor !== undefined) await confirmedBatch(databaseUrl, recordIds, facts.dualAnchor, anchoredAt)
  const batchId = await confirmedBatch(databaseUrl, recordIds, facts, anchoredAt)
  await query(databaseUrl, `
    INSERT INTO batch_events (batch_id, account_id, record_ids)
    SELECT $1::bigint, r.account_id, array_agg(r.id ORDER BY array_position($2::text[], r.id)) FROM records r
    WHERE r.id = ANY($2::text[]) GROUP BY r.account_id`, [batchId, recordIds])
  const events = await query<{ record_id: string; event_id: string }>(databaseUrl,
    "SELECT record_id, event_id FROM anchor_confirmed_events WHERE id IN (SELECT id FROM batch_events WHERE batch_id = $1)", [batchId])
  return { eventIds: new Map(events.map((e) => [e.record_id, e.event_id])), anchoredAt }
}

/** `confirmBatch` of one record: its event id and anchoredAt. */
export const confirmAnchor = async (databaseUrl: string, recordId: string, facts: AnchorFacts & { dualAnchor?: AnchorFacts } = {}) => {
  const { eventIds, anchoredAt } = await confirmBatch(databaseUrl, [recordId], facts)
  return { eventId: eventIds.get(recordId)!, anchoredAt }
}

/**
 * Waits until the dispatcher is idle for an account: no delivery of it claimed (an attempt in flight or
 * its outcome not yet written), none due now, and no anchor.confirmed of it waiting or in flight in a chunk. A receiver has a request before the node has read the
 * answer and recorded the outcome, so the delivery log is read after this, not right after a receipt.
 */
export const deliveriesSettled = (databaseUrl: string, accountId: string, timeoutMs = 20_000) =>
  waitFor(`the deliveries of ${accountId} to settle`, async () => {
    const rows = await query<{ n: number }>(databaseUrl, `
      SELECT (SELECT count(*)::int FROM webhook_deliveries
        WHERE account_id = $1 AND state = 'PENDING' AND (locked_until IS NOT NULL OR next_attempt_at <= now()))
        -- events not yet fanned out, and chunks in flight (their delivery rows are written with their outcomes, migration 0017)
        + (SELECT count(*)::int FROM webhook_fanouts f JOIN batch_events be ON be.id = f.batch_event_id WHERE be.account_id = $1) AS n`, [accountId])
    return rows[0].n === 0
  }, timeoutMs, 20)

/** One delivery row, for waiting on its state (attempts is the number of attempts recorded in the round). */
export const deliveryRow = async (databaseUrl: string, where: { id?: string; recordId?: string; eventId?: string }) => {
  const [column, value] = where.id !== undefined ? ["id", where.id] : where.recordId !== undefined ? ["record_id", where.recordId] : ["event_id", where.eventId]
  const rows = await query<{ id: string; state: string; attempts: number; round: number; locked_until: Date | null }>(databaseUrl,
    `SELECT id, state, attempts, round, locked_until FROM webhook_deliveries WHERE ${column} = $1`, [value])
  return rows[0]
}

export { waitFor }
