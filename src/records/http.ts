/** Handlers of the records API. Bodies arrive strictly parsed by the gateway (src/http/gateway.ts). */
import { Effect } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql"
import type { Principal } from "../api/auth.ts"
import { CurrentPrincipal } from "../api/auth.ts"
import { loadAnchors, proofBundle } from "../anchoring/anchorViews.ts"
import { monthStart, nextMonthStart, Plans } from "../auth/plans.ts"
import { Api } from "../api/Api.ts"
import { badRequest, conflict, gone, notFound, unprocessable } from "../api/errors.ts"
import { embedAnchor } from "../anchoring/inPlace.ts"
import { checkWebhookUrl } from "../webhooks/urlPolicy.ts"
import { cursorCodec } from "../http/pagination.ts"
import { stateOf } from "../http/requestState.ts"
import { open } from "./encryption.ts"
import { type CreateEndpoint, RecordCreation } from "./creation.ts"
import { decodeBody } from "../http/decode.ts"
import { toView } from "./model.ts"
import { RecordStore, type Lookup } from "./RecordStore.ts"
import { PatchBody } from "../api/recordSchemas.ts"

const MUTABLE_FIELDS = new Set(["metadata", "webhookUrl"])

const cursors = cursorCodec("", /^[0-9a-f]{24}$/)

const requireFound = (lookup: Lookup, id: string) =>
  lookup._tag === "Found"
    ? Effect.succeed(lookup.row)
    : lookup._tag === "Deleted"
    ? Effect.fail(gone(`Record ${id} has been deleted`))
    : Effect.fail(notFound(`Record ${id} not found`))

export const RecordsHttpLayer = HttpApiBuilder.group(Api, "records", (handlers) =>
  Effect.gen(function*() {
    const creation = yield* RecordCreation
    const store = yield* RecordStore
    const sql = yield* SqlClient.SqlClient

    const create = (endpoint: CreateEndpoint, request: HttpServerRequest.HttpServerRequest) =>
      Effect.flatMap(CurrentPrincipal, (principal: Principal) => creation.create(endpoint, request, principal, stateOf(request).body))

    return handlers
      .handleRaw("anchor", ({ request }) => create("anchor", request))
      .handleRaw("anchorEncrypted", ({ request }) => create("anchorEncrypted", request))
      .handleRaw("anchorHash", ({ request }) => create("anchorHash", request))
      .handleRaw("anchorBatch", ({ request }) => create("anchorBatch", request))
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

