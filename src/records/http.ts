/** Handlers of the records API. Bodies arrive strictly parsed by the gateway (src/http/gateway.ts). */
import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { CurrentPrincipal } from "../auth/api.ts"
import { loadAnchors, proofBundle } from "../batching/anchorViews.ts"
import { monthStart, nextMonthStart, Plans } from "../auth/plans.ts"
import { Api } from "../http/Api.ts"
import { type BadRequest, type Conflict, badRequest, conflict, gone, notFound, unprocessable } from "../http/errors.ts"
import { embedAnchor } from "../verify/inPlace.ts"
import { checkWebhookUrl } from "../webhooks/urlPolicy.ts"
import { cursorCodec } from "../http/pagination.ts"
import { stateOf } from "../http/requestState.ts"
import { open } from "./encryption.ts"
import { decodeBody, Ingest, sha256Hex } from "./Ingest.ts"
import type { NewRecord } from "./IngestWriter.ts"
import { toView, type RecordRow } from "./model.ts"
import { RecordStore, type Lookup } from "./RecordStore.ts"
import {
  AnchorBody, BatchAnchorBody, EncryptedAnchorBody, HashAnchorBody, MAX_BATCH_RECORDS, PatchBody, type RecordView
} from "./schemas.ts"

const MUTABLE_FIELDS = new Set(["metadata", "webhookUrl"])

const newRowView = (row: NewRecord): RecordView =>
  toView({
    ...row,
    status: "QUEUED",
    metadata: row.metadata,
    anchoredAt: null,
    deletedAt: null,
    hardDeleted: false
  } as RecordRow, { data: row.parsedData })

const cursors = cursorCodec("", /^[0-9a-f]{24}$/)

const requireFound = (lookup: Lookup, id: string) =>
  lookup._tag === "Found"
    ? Effect.succeed(lookup.row)
    : lookup._tag === "Deleted"
    ? Effect.fail(gone(`Record ${id} has been deleted`))
    : Effect.fail(notFound(`Record ${id} not found`))

export const RecordsHttpLayer = HttpApiBuilder.group(Api, "records", (handlers) =>
  Effect.gen(function*() {
    const ingest = yield* Ingest
    const store = yield* RecordStore
    const sql = yield* SqlClient.SqlClient

    /** Idempotency-Key: replay the stored response, 409 for another body, else run `create`. */
    const idempotent = <E, R>(
      request: HttpServerRequest.HttpServerRequest,
      create: (idem: { key: string; requestHash: string } | undefined) => Effect.Effect<
        HttpServerResponse.HttpServerResponse | "idempotency-key-taken",
        E,
        R
      >
    ) =>
      Effect.gen(function*(): Effect.fn.Return<HttpServerResponse.HttpServerResponse, E | BadRequest | Conflict, R | CurrentPrincipal> {
        const principal = yield* CurrentPrincipal
        const key = request.headers["idempotency-key"]
        if (key === undefined) {
          const result = yield* create(undefined)
          return result === "idempotency-key-taken" ? yield* Effect.die(new Error("no idempotency key")) : result
        }
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
        const result = yield* create({ key, requestHash })
        if (result !== "idempotency-key-taken") return result
        // Another request with this key committed first.
        const after = yield* replay
        return after ?? (yield* Effect.die(new Error("idempotency key vanished")))
      })

    const single = (
      request: HttpServerRequest.HttpServerRequest,
      kindOf: (body: unknown) => Effect.Effect<Parameters<typeof ingest.prepare>[1], BadRequest>
    ) =>
      idempotent(request, (idem) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const kind = yield* kindOf(stateOf(request).body)
          const row = yield* ingest.prepare(principal, kind)
          const body = JSON.stringify({ success: true, data: newRowView(row) })
          const outcome = yield* ingest.commit(principal, [row], idem && { ...idem, status: 202, body })
          if (outcome === "idempotency-key-taken") return outcome
          return HttpServerResponse.text(body, { status: 202, contentType: "application/json" })
        }))

    return handlers
      .handleRaw("anchor", ({ request }) =>
        single(request, (body) => Effect.map(decodeBody(AnchorBody, body), (b) => ({ _tag: "data" as const, body: b }))))
      .handleRaw("anchorEncrypted", ({ request }) =>
        single(request, (body) => Effect.map(decodeBody(EncryptedAnchorBody, body), (b) => ({ _tag: "encrypted" as const, body: b }))))
      .handleRaw("anchorHash", ({ request }) =>
        single(request, (body) => Effect.map(decodeBody(HashAnchorBody, body), (b) => ({ _tag: "hash" as const, body: b }))))
      .handleRaw("anchorBatch", ({ request }) =>
        idempotent(request, (idem) =>
          Effect.gen(function*() {
            const principal = yield* CurrentPrincipal
            const batch = yield* decodeBody(BatchAnchorBody, stateOf(request).body)
            if (batch.records.length > MAX_BATCH_RECORDS) {
              return yield* Effect.fail(badRequest("VALIDATION_ERROR", `records: at most ${MAX_BATCH_RECORDS} per call`))
            }
            const results: Array<unknown> = []
            const rows: Array<NewRecord> = []
            for (let index = 0; index < batch.records.length; index++) {
              const where = `records[${index}].`
              const prepared = yield* decodeBody(AnchorBody, batch.records[index], where).pipe(
                Effect.flatMap((b) => ingest.prepare(principal, { _tag: "data", body: b }, where)),
                Effect.result
              )
              if (prepared._tag === "Success") {
                rows.push(prepared.success)
                results.push({ index, success: true, data: newRowView(prepared.success) })
              } else {
                results.push({ index, success: false, error: prepared.failure.error, errorCode: prepared.failure.errorCode })
              }
            }
            const body = JSON.stringify({
              success: true,
              data: { accepted: rows.length, rejected: batch.records.length - rows.length, results }
            })
            if (rows.length > 0) {
              const outcome = yield* ingest.commit(principal, rows, idem && { ...idem, status: 202, body })
              if (outcome === "idempotency-key-taken") return outcome
            }
            return HttpServerResponse.text(body, { status: 202, contentType: "application/json" })
          })))
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const limit = query.limit ?? 50
          const before = yield* cursors.decode(query.cursor)
          const rows = yield* store.list(principal, {
            limit: limit + 1,
            before,
            status: query.status,
            includeDeleted: query.includeDeleted === "true" || query.status === "DELETED"
          })
          const page = rows.slice(0, limit)
          return {
            success: true as const,
            data: {
              records: page.map((row) => toView(row)),
              nextCursor: rows.length > limit ? cursors.encode(page[page.length - 1].id) : null
            }
          }
        }))
      .handle("get", ({ params, headers, query }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const row = yield* requireFound(
            yield* store.get(principal, params.recordId, query.includeDeleted === "true"),
            params.recordId
          )
          const key = headers["x-encryption-key"]
          let plaintext: string | undefined
          if (key !== undefined && row.source === "encrypted" && row.ciphertext && row.nonce && row.authTag) {
            plaintext = open(key, { ciphertext: Buffer.from(row.ciphertext), nonce: Buffer.from(row.nonce), tag: Buffer.from(row.authTag) })
            if (plaintext === undefined) {
              return yield* Effect.fail(badRequest("INVALID_ENCRYPTION_KEY", "X-Encryption-Key does not decrypt this record"))
            }
          }
          const view = toView(row, { plaintext })
          // SPEC 3.2: IN_PLACE records carry their proof bundle in place, as `_anchor`.
          const anchors = view.packageMode === "IN_PLACE" && view.status === "ANCHORED"
            ? (yield* loadAnchors(sql, [row.id])).get(row.id) ?? []
            : []
          return { success: true as const, data: embedAnchor(view, () => proofBundle(row, anchors)) }
        }))
      .handleRaw("update", ({ request, params }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const body = stateOf(request).body
          if (typeof body === "object" && body !== null && !Array.isArray(body)) {
            const immutable = Object.keys(body).filter((k) => !MUTABLE_FIELDS.has(k))
            if (immutable.length > 0) {
              return yield* Effect.fail(unprocessable(
                `Field${immutable.length > 1 ? "s" : ""} ${immutable.join(", ")} cannot be changed; only metadata and webhookUrl are mutable`
              ))
            }
          }
          const patch = yield* decodeBody(PatchBody, body)
          if (patch.webhookUrl !== undefined && patch.webhookUrl !== null) {
            const verdict = yield* Effect.promise(() => checkWebhookUrl(patch.webhookUrl!, principal.environment))
            if (!verdict.ok) return yield* Effect.fail(badRequest("INVALID_WEBHOOK_URL", verdict.reason))
          }
          const row = yield* requireFound(yield* store.update(principal, params.recordId, patch), params.recordId)
          return { success: true as const, data: toView(row) }
        }))
      .handle("remove", ({ params, query }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const mode = query.mode ?? "soft"
          const row = yield* requireFound(yield* store.remove(principal, params.recordId, mode), params.recordId)
          return {
            success: true as const,
            data: { recordId: row.id, mode, deletedAt: (row.deletedAt ?? new Date()).toISOString() }
          }
        }))
      .handle("recordProof", ({ params }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const row = yield* requireFound(yield* store.get(principal, params.recordId, false), params.recordId)
          if (row.status !== "ANCHORED") {
            return yield* Effect.fail(conflict("NOT_ANCHORED", `Record ${row.id} is ${row.status}, not anchored yet`))
          }
          const anchors = (yield* loadAnchors(sql, [row.id])).get(row.id) ?? []
          return { success: true as const, data: proofBundle(row, anchors) }
        }))
      .handle("proofByHash", ({ params }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const hash = params.hash.toLowerCase()
          const rows = yield* store.byHash(principal, hash)
          if (rows.length === 0) return yield* Effect.fail(notFound(`No record with hash ${hash}`))
          return {
            success: true as const,
            data: {
              hash,
              records: rows.map((row) => {
                const view = toView(row)
                return { recordId: view.recordId, status: view.status, createdAt: view.createdAt, anchors: view.anchors }
              })
            }
          }
        }))
      .handle("usage", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const now = new Date()
          const used = yield* store.usage(principal.accountId, monthStart(now))
          const quota = Plans[principal.plan].monthlyQuota
          return {
            success: true as const,
            data: {
              accountId: principal.accountId,
              plan: principal.plan,
              environment: principal.environment,
              month: monthStart(now).slice(0, 7),
              used,
              quota,
              remaining: quota === null ? null : Math.max(0, quota - used),
              resetsAt: nextMonthStart(now).toISOString(),
              perSecond: principal.perSecond
            }
          }
        }))
  }))

