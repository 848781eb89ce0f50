/**
 * Baseline for `npm run bench:ingest`: a bare node:http server doing only what no anchoring node can
 * skip — JSON.parse, RFC 8785 canonicalization and SHA-256 — with no auth, no database, no durability.
 */
import * as Http from "node:http"
import { recordHash } from "../../src/canonical/jcs.ts"

const port = Number(process.argv[2] ?? 8090)
const server = Http.createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (c: Buffer) => chunks.push(c))
  req.on("end", () => {
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
      const hash = recordHash(body.data)
      const out = JSON.stringify({ success: true, data: { hash, status: "QUEUED" } })
      res.writeHead(202, { "content-type": "application/json" })
      res.end(out)
    } catch {
      res.writeHead(400, { "content-type": "application/json" })
      res.end("{\"success\":false,\"error\":\"bad\",\"errorCode\":\"INVALID_JSON\"}")
    }
  })
})
server.keepAliveTimeout = 65_000
server.listen(port, "127.0.0.1", () => process.send?.("ready"))
