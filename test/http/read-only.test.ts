/**
 * The endpoint leading to a server that cannot write: during a failover behind HAProxy, a connection may
 * reach the demoted primary (now a standby) in the second or two before the health check drops it, and a
 * write there fails with SQLSTATE 25006 "cannot execute INSERT in a read-only transaction" (seen in
 * `npm run soak:patroni`). That is the database unavailable for writes, not a bug: 503 with Retry-After,
 * never 500; and writes succeed again once the endpoint leads to a primary. Here the read-only server is
 * the test's own database with default_transaction_read_only on for new sessions (set from another database).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { adminUrl, query } from "../support/db.ts"
import { call, startNode, type TestNode } from "../support/node.ts"
import { waitFor } from "../support/wait.ts"

describe("a database that became read-only under the node", () => {
  let node: TestNode
  let key = ""
  let db = ""

  /** Ends the node's sessions so that its pool reconnects and meets the database's current setting. */
  const reconnect = async () => {
    await query(adminUrl(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", [db])
    await waitFor("the node's database up again", async () => (await call(node.baseUrl, "GET", "/v1/health")).json?.data?.database?.status === "up", 30_000)
  }
  const anchor = (i: number) => call(node.baseUrl, "POST", "/v1/anchor", { key, body: { data: { readOnly: i } } })

  beforeAll(async () => {
    node = await startNode()
    key = (await node.createKey(await node.createAccount())).key
    db = new URL(node.databaseUrl).pathname.slice(1)
  }, 60_000)

  afterAll(async () => {
    await query(adminUrl(), `ALTER DATABASE "${db}" RESET default_transaction_read_only`).catch(() => undefined)
    await node?.stop()
  })

  it("writes are 503 with Retry-After while it cannot write, and 202 once it can", async () => {
    expect((await anchor(0)).status).toBe(202)
    await query(adminUrl(), `ALTER DATABASE "${db}" SET default_transaction_read_only = on`)
    await reconnect()
    for (let i = 1; i <= 5; i++) {
      const res = await anchor(i)
      expect(res.status, res.text).toBe(503)
      expect(res.json.errorCode).toBe("SERVICE_UNAVAILABLE")
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0)
    }
    await query(adminUrl(), `ALTER DATABASE "${db}" RESET default_transaction_read_only`)
    await reconnect()
    const back = await waitFor("a 202 again", async () => {
      const res = await anchor(100)
      return res.status === 202 ? res : undefined
    }, 30_000)
    expect(back.json.data.status).toBe("QUEUED")
  }, 120_000)
})
