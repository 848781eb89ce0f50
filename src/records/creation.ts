/**
 * The record-creating POSTs (SPEC 3.1): /v1/anchor, /v1/anchor/encrypted, /v1/anchor/hash and
 * /v1/anchor/batch, from a strictly parsed body to the 202 response (or the typed failure).
 *
 * This is the ingest hot path. The gateway (src/http/gateway.ts) calls it directly once it has
 * authenticated the key, applied the limits and parsed the body, rather than through the generic
 * HttpApi handler chain, which measured ~75 µs of CPU per request on the reference machine (a third
 * of the whole budget). The HttpApi handlers of these endpoints (./http.ts) call the same function,
 * and their definitions (./api.ts) still describe them in the OpenAPI document and the typed client.
 */
import { Context, Effect, Layer } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import type { Principal } from "../api/auth.ts"
import { type BadRequest, type Conflict, type TooManyRequests, badRequest, conflict } from "../api/errors.ts"
import { stateOf } from "../http/requestState.ts"
import { decodeBody } from "../http/decode.ts"
import { decodeSubmission, Ingest, sha256Hex, type SubmissionKind } from "./Ingest.ts"
import type { NewRecord } from "./IngestWriter.ts"
import { toView } from "./model.ts"
import { RecordStore } from "./RecordStore.ts"
import { BatchAnchorBody, MAX_BATCH_RECORDS } from "../api/recordSchemas.ts"

export type CreateEndpoint = "anchor" | "anchorEncrypted" | "anchorHash" | "anchorBatch"
export const CREATE_ENDPOINTS: ReadonlySet<string> = new Set<CreateEndpoint>(["anchor", "anchorEncrypted", "anchorHash", "anchorBatch"])

const KIND: Record<Exclude<CreateEndpoint, "anchorBatch">, SubmissionKind> = {
  anchor: "data",
  anchorEncrypted: "encrypted",
  anchorHash: "hash"
}

/**
 * The record view of a new row as JSON text. Its `data` is the canonical text itself (the same JSON
 * value as submitted, members in RFC 8785 order: what GET returns later), written last.
 *
 * Written out directly for rows without ciphertext (every 202 of the hot path): the same text as
 * `viewOf` below, which goes through `toView` (tested equal in test/records/submission.test.ts), for
 * ~5% less CPU per request. Ids, hashes and the enumerated fields need no escaping.
 */
export const acceptedView = (row: NewRecord): string => {
  if (row.ciphertext !== null) return viewOf(row)
  const created = row.createdAt.toISOString()
  const updated = row.updatedAt === row.createdAt ? created : row.updatedAt.toISOString()
  return `{"recordId":"${row.id}","hash":"${row.hash}","status":"QUEUED","environment":"${row.environment}",` +
    `"chainType":"${row.chainType}","networkId":${JSON.stringify(row.networkId)},"packageMode":"${row.packageMode}",` +
    `"metadata":${JSON.stringify(row.metadata)},"webhookUrl":${JSON.stringify(row.webhookUrl)},` +
    `"createdAt":"${created}","updatedAt":"${updated}","anchoredAt":null,"deletedAt":null,` +
    `"encrypted":${row.source === "encrypted"},"anchors":[],"data":${row.dataJcs ?? "null"}}`
}

/** `acceptedView` through the general `toView`. */
export const viewOf = (row: NewRecord): string => {
  const { data: _data, ...view } = toView({
    ...row,
    dataJcs: null,
    status: "QUEUED",
    anchoredAt: null,
    deletedAt: null,
    hardDeleted: false
  })
  const head = JSON.stringify(view)
  return `${head.slice(0, -1)},"data":${row.dataJcs ?? "null"}}`
}

const accepted = (text: string) => HttpServerResponse.text(text, { status: 202, contentType: "application/json" })

type Idempotency = { readonly key: string; readonly requestHash: string }
type CreateError = BadRequest | Conflict | TooManyRequests

export class RecordCreation extends Context.Service<RecordCreation, {
  readonly create: (
    endpoint: CreateEndpoint,
    request: HttpServerRequest.HttpServerRequest,
    principal: Principal,
    body: unknown
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, CreateError>
}>()("anchord/records/RecordCreation") {
  static readonly layer = Layer.effect(
    RecordCreation,
    Effect.gen(function*() {
      const ingest = yield* Ingest
      const store = yield* RecordStore

      /** Commits and answers 202 with `text`, or reports that another request took the Idempotency-Key. */
      const commit = (principal: Principal, rows: ReadonlyArray<NewRecord>, text: string, idem: Idempotency | undefined) =>
        Effect.map(
          ingest.commit(principal, rows, idem && { ...idem, status: 202, body: text }),
          (outcome) => outcome === "idempotency-key-taken" ? outcome : accepted(text)
        )

      const single = (kind: SubmissionKind, principal: Principal, body: unknown, plain: boolean, idem: Idempotency | undefined) => {
        const decoded = decodeSubmission(kind, body, "", plain)
        if (decoded._tag === "Invalid") return Effect.fail(decoded.error)
        return Effect.flatMap(
          ingest.prepare(principal, decoded.submission),
          (row) => commit(principal, [row], `{"success":true,"data":${acceptedView(row)}}`, idem)
        )
      }

      const batch = (principal: Principal, body: unknown, plain: boolean, idem: Idempotency | undefined) =>
        Effect.gen(function*() {
          const { records } = yield* decodeBody(BatchAnchorBody, body)
          if (records.length > MAX_BATCH_RECORDS) {
            return yield* Effect.fail(badRequest("VALIDATION_ERROR", `records: at most ${MAX_BATCH_RECORDS} per call`))
          }
          const results: Array<string> = []
          const rows: Array<NewRecord> = []
          for (let index = 0; index < records.length; index++) {
            const where = `records[${index}].`
            const decoded = decodeSubmission("data", records[index], where, plain)
            const prepared = decoded._tag === "Invalid"
              ? { _tag: "Failure" as const, failure: decoded.error }
              : yield* Effect.result(ingest.prepare(principal, decoded.submission, where))
            if (prepared._tag === "Success") {
              rows.push(prepared.success)
              results.push(`{"index":${index},"success":true,"data":${acceptedView(prepared.success)}}`)
            } else {
              const { error, errorCode } = prepared.failure
              results.push(JSON.stringify({ index, success: false, error, errorCode }))
            }
          }
          const text = `{"success":true,"data":{"accepted":${rows.length},"rejected":${records.length - rows.length},` +
            `"results":[${results.join(",")}]}}`
          if (rows.length === 0) return accepted(text)
          return yield* commit(principal, rows, text, idem)
        })

      const run = (endpoint: CreateEndpoint, request: HttpServerRequest.HttpServerRequest, principal: Principal, body: unknown, idem: Idempotency | undefined) => {
        // Parsed from a text without a backslash: no string in it needs escaping (see canonicalizeParsedPlain).
        const text = stateOf(request).bodyText
        const plain = text !== undefined && text.indexOf("\\") === -1
        return endpoint === "anchorBatch" ? batch(principal, body, plain, idem) : single(KIND[endpoint], principal, body, plain, idem)
      }

      /** Idempotency-Key: replay the stored response, 409 for another body, else create (SPEC 3.1). */
      const idempotent = (endpoint: CreateEndpoint, request: HttpServerRequest.HttpServerRequest, principal: Principal, body: unknown, key: string) =>
        Effect.gen(function*() {
          if (key.length === 0 || key.length > 255) {
            return yield* Effect.fail(badRequest("VALIDATION_ERROR", "Idempotency-Key must be 1 to 255 characters"))
          }
          const requestHash = sha256Hex(`${request.method} ${request.url.split("?")[0]}\n${stateOf(request).bodyText ?? ""}`)
          const replay = Effect.gen(function*() {
            const stored = yield* store.idempotent(principal.accountId, principal.environment, key)
            if (stored === undefined) return undefined
            if (stored.requestHash !== requestHash) {
              return yield* Effect.fail(conflict("IDEMPOTENCY_CONFLICT", "Idempotency-Key was already used with a different request body"))
            }
            return HttpServerResponse.text(stored.body, {
              status: stored.status,
              contentType: "application/json",
              headers: { "idempotent-replayed": "true" }
            })
          })
          const previous = yield* replay
          if (previous !== undefined) return previous
          const result = yield* run(endpoint, request, principal, body, { key, requestHash })
          if (result !== "idempotency-key-taken") return result
          // Another request with this key committed first.
          const after = yield* replay
          return after ?? (yield* Effect.die(new Error("idempotency key vanished")))
        })

      return RecordCreation.of({
        create: (endpoint, request, principal, body) => {
          const key = request.headers["idempotency-key"]
          if (key !== undefined) return idempotent(endpoint, request, principal, body, key)
          return Effect.flatMap(run(endpoint, request, principal, body, undefined), (result) =>
            result === "idempotency-key-taken" ? Effect.die(new Error("no idempotency key")) : Effect.succeed(result))
        }
      })
    })
  )
}
