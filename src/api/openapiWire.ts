/**
 * The few things the OpenAPI generator cannot say from the endpoint definitions, added to the
 * document as a last step (`OpenApi.Transform`, after `jsonBodiesInOpenApi`). Everything else is
 * declared on the schemas and endpoints themselves. Each item says why it cannot be.
 *
 *  1. Response headers set by middleware and the gateway, not by the endpoints' success schemas:
 *     X-RateLimit-* on every /v1 response, X-Quota-* on authenticated ones (Admission), and
 *     Idempotent-Replayed on replays (RecordCreation, also on the ingest fast path). Declaring them
 *     with `HttpApiSchema.WithHeaders` would make every handler return them and change the Effect
 *     client's result type of every endpoint, for headers no handler sets.
 *  2. Header and query values as the integers they stand for (Retry-After; `limit`): the generator
 *     describes the encoded side, which on the wire is text; OpenAPI describes parameters and headers
 *     by the value they serialize (a `type: integer` header is sent as its digits).
 *  3. Request headers by their documented spelling (`Idempotency-Key`, `X-Encryption-Key`, `If-None-Match`): the endpoints declare them as
 *     Node gives them to handlers, lower-cased, and generated clients take a header parameter's name
 *     as it is written (openapi-fetch refused `Idempotency-Key`, TS2353). HTTP header names are
 *     case-insensitive, so the node accepts either spelling.
 *  4. The items of a batch as AnchorRequest: the handler decodes items one by one so that a bad
 *     item is reported in place instead of refusing the batch, so the body schema takes any item.
 */

type Json = Record<string, any>

const integer = (description: string, extra: Json = {}) => ({ description, schema: { type: "integer", minimum: 0, ...extra } })

/** Response headers, by their canonical names (`components.headers`). */
export const RESPONSE_HEADERS: Record<string, Json> = {
  "X-RateLimit-Limit": integer("Requests allowed per second: the key's plan, or the per-address limit without a valid key"),
  "X-RateLimit-Remaining": integer("Requests left in the current one-second window"),
  "X-RateLimit-Reset": integer("Unix time (seconds) when the current window ends"),
  "X-Quota-Limit": {
    description: "Records per month of the account's plan (digits), or `unlimited` (ENTERPRISE)",
    schema: { type: "string", pattern: "^([0-9]+|unlimited)$" }
  },
  "X-Quota-Remaining": {
    description: "Records left this month (digits), or `unlimited` (ENTERPRISE)",
    schema: { type: "string", pattern: "^([0-9]+|unlimited)$" }
  },
  "X-Quota-Reset": integer("Unix time (seconds) of the first instant of next month, UTC"),
  "Retry-After": integer("Seconds to wait before retrying", { minimum: 1 }),
  "Idempotent-Replayed": { description: "`true` when this is the stored response of an earlier request with the same Idempotency-Key",
    schema: { type: "string", enum: ["true"] } },
  ETag: { description: "The document's entity tag (weak when the body is compressed), for If-None-Match", schema: { type: "string" } }
}

/** Request headers' documented names, by the lower-case name the endpoints declare. */
const REQUEST_HEADERS: Record<string, string> = {
  "idempotency-key": "Idempotency-Key",
  "x-encryption-key": "X-Encryption-Key",
  "if-none-match": "If-None-Match"
}

const RATE = ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"]
const QUOTA = ["X-Quota-Limit", "X-Quota-Remaining", "X-Quota-Reset"]
const CREATING = new Set(["/v1/anchor", "/v1/anchor/encrypted", "/v1/anchor/hash", "/v1/anchor/batch"])

/**
 * A response's header: a reference to the component, or, when it is always sent, a copy marked
 * `required` (a Reference Object cannot carry `required` beside `$ref`).
 */
const header = (name: string, required: boolean): Json => required ? { ...RESPONSE_HEADERS[name], required: true } : { $ref: `#/components/headers/${name}` }

export const wireInOpenApi = (spec: Json): Json => {
  const paths: Json = {}
  for (const [path, item] of Object.entries<Json>(spec.paths)) {
    // What Admission and the gateway add applies to /v1 (other paths, if any, answer as they declare).
    if (!path.startsWith("/v1/")) {
      paths[path] = item
      continue
    }
    const out: Json = { ...item }
    for (const [method, op] of Object.entries<Json>(item)) {
      if (typeof op !== "object" || op === null || !("responses" in op)) continue
      const secured = Array.isArray(op.security) && op.security.some((r: Json) => "bearer" in r)
      const responses: Json = {}
      for (const [status, response] of Object.entries<Json>(op.responses)) {
        const code = Number(status)
        const headers: Json = {}
        for (const [name, value] of Object.entries<Json>(response.headers ?? {})) if (name.toLowerCase() !== "retry-after") headers[name] = value
        for (const name of RATE) headers[name] = header(name, true)
        // Authenticated answers: X-Quota-* always on success; on errors when the key was valid (not 401).
        if (secured && code !== 401) { for (const name of QUOTA) headers[name] = header(name, code < 300) }
        if (code === 429 || code === 503) headers["Retry-After"] = header("Retry-After", true)
        if (CREATING.has(path) && (code === 202 || code === 207)) headers["Idempotent-Replayed"] = header("Idempotent-Replayed", false)
        if (path === "/v1/openapi.json" && (code === 200 || code === 304)) headers["ETag"] = header("ETag", true)
        responses[status] = { ...response, headers }
      }
      const parameters = (op.parameters ?? []).map((p: Json) =>
        p.in === "query" && p.name === "limit"
          ? { ...p, description: "Page size, 1 to 100 (default 50)", schema: { type: "integer", minimum: 1, maximum: 100 } }
          : p.in === "header" && typeof p.name === "string" && REQUEST_HEADERS[p.name] !== undefined
          ? { ...p, name: REQUEST_HEADERS[p.name] }
          : p
      )
      out[method] = { ...op, parameters, responses }
    }
    paths[path] = out
  }
  const schemas: Json = { ...spec.components.schemas }
  const batch = schemas["BatchAnchorRequest"]
  if (batch?.properties?.records !== undefined && schemas["AnchorRequest"] !== undefined) {
    schemas["BatchAnchorRequest"] = {
      ...batch,
      properties: { ...batch.properties, records: { ...batch.properties.records, items: { $ref: "#/components/schemas/AnchorRequest" } } }
    }
  }
  // Only the headers some response refers to (the others are copied where they are required).
  const referenced = JSON.stringify(paths)
  const headers = Object.fromEntries(Object.entries(RESPONSE_HEADERS).filter(([name]) => referenced.includes(`"#/components/headers/${name}"`)))
  return { ...spec, paths, components: { ...spec.components, schemas, headers: { ...spec.components.headers, ...headers } } }
}
