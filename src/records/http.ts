/**
 * Handlers of the records API (src/api/records.ts). Payloads, params, query and headers arrive
 * decoded by the endpoint's schemas; the principal comes from the ApiKeyAuth middleware. Domain
 * errors and database failures are mapped to the wire once, by `atEdge`.
 */
import { Clock, Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { embedAnchor } from "../anchoring/inPlace.ts"
import { Api } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/auth.ts"
import { monthStart, nextMonthStart, Plans } from "../auth/plans.ts"
import { atEdge } from "../db/errors.ts"
import { pageOf, recordCursors } from "../http/pagination.ts"
import { WebhookEgress } from "../webhooks/urlPolicy.ts"
import { InvalidWebhookUrl } from "../webhooks/errors.ts"
import { type Accepted, type CreateEndpoint, type CreatePayloads, RecordCreation } from "./creation.ts"
import { open } from "./encryption.ts"
import { HashNotFound, ImmutableField, InvalidEncryptionKey, InvalidRecord } from "./errors.ts"
import { toView } from "./model.ts"
import { RecordStore, requireFound } from "./RecordStore.ts"

const MUTABLE_FIELDS = new Set(["metadata", "webhookUrl"])

/** The response of a create: its text as built by RecordCreation (the ingest fast path answers the same). */
export const acceptedResponse = (a: Accepted) =>
  HttpServerResponse.text(a.body, {
    status: a.status,
    contentType: "application/json",
    // Set here rather than by the edge (src/http/edge.ts), which then has nothing to add to a 202.
    headers: a.replayed ? REPLAYED : ACCEPTED
  })

const ACCEPTED = { "cache-control": "no-store" }
const REPLAYED = { "cache-control": "no-store", "idempotent-replayed": "true" }

export const pathOf = (url: string) => {
  const query = url.indexOf("?")
  return query === -1 ? url : url.slice(0, query)
}

export const RecordsHttpLayer = HttpApiBuilder.group(Api, "records", (handlers) =>
  Effect.gen(function*() {
    const creation = yield* RecordCreation
    const store = yield* RecordStore
    const egress = yield* WebhookEgress

    const create =
      <E extends CreateEndpoint>(endpoint: E) =>
      ({ payload, headers }: { readonly payload: CreatePayloads[E]; readonly headers: { readonly "idempotency-key"?: string | undefined } }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const request = yield* HttpServerRequest.HttpServerRequest
          // The body as received (framed by JsonBodyFraming): the idempotency check compares requests by it.
          const bodyText = yield* Effect.orDie(request.text)
          // Decoded by the endpoint's schema already: RecordCreation does not decode it again.
          const result = yield* creation.create(endpoint, principal, { _tag: "Decoded", payload }, {
            idempotencyKey: headers["idempotency-key"],
            bodyText,
            path: pathOf(request.url)
          })
          return acceptedResponse(result)
        }).pipe(atEdge)

    return handlers
      .handle("anchor", create("anchor"))
      .handle("anchorEncrypted", create("anchorEncrypted"))
      .handle("anchorHash", create("anchorHash"))
      .handle("anchorBatch", create("anchorBatch"))
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const limit = query.limit ?? 50
          const before = recordCursors.parse(query.cursor)
          if (!before.ok) return yield* new InvalidRecord({ reason: before.message })
          const rows = yield* store.list(principal, {
            limit: limit + 1,
            before: before.key,
            status: query.status,
            collection: query.collection,
            includeDeleted: query.includeDeleted === "true" || query.status === "DELETED"
          })
          const { page, nextCursor } = pageOf(rows, limit, recordCursors, (row) => row.id)
          return { success: true as const, data: { records: page.map((row) => toView(row)), nextCursor } }
        }).pipe(atEdge))
      .handle("get", ({ params, headers, query }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const row = yield* requireFound(yield* store.get(principal, params.recordId, query.includeDeleted === "true"), params.recordId)
          const key = headers["x-encryption-key"]
          let plaintext: string | undefined
          if (key !== undefined && row.source === "encrypted" && row.ciphertext && row.nonce && row.authTag) {
            plaintext = open(key, { ciphertext: Buffer.from(row.ciphertext), nonce: Buffer.from(row.nonce), tag: Buffer.from(row.authTag) })
            if (plaintext === undefined) return yield* new InvalidEncryptionKey({ reason: "X-Encryption-Key does not decrypt this record" })
          }
          const view = toView(row, { plaintext })
          // SPEC 3.2: IN_PLACE records carry their proof bundle in place, as `_anchor`.
          const [bundle] = view.packageMode === "IN_PLACE" && view.status === "ANCHORED" ? yield* store.proofsOf([row]) : []
          // A decrypted salted record's document carries its salt in `_anchor`, so that it verifies as it is.
          const salt = view.salt === undefined ? {} : { salt: view.salt }
          return { success: true as const, data: embedAnchor(view, () => ({ ...bundle, ...salt })) }
        }).pipe(atEdge))
      .handle("update", ({ params, payload }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const immutable = Object.keys(payload).filter((k) => !MUTABLE_FIELDS.has(k))
          if (immutable.length > 0) return yield* new ImmutableField({ fields: immutable })
          if (payload.webhookUrl !== undefined && payload.webhookUrl !== null) {
            const verdict = yield* egress.check(payload.webhookUrl, principal.environment)
            if (!verdict.ok) return yield* new InvalidWebhookUrl({ reason: verdict.reason })
          }
          const changes = {
            ...(payload.metadata !== undefined ? { metadata: payload.metadata } : {}),
            ...(payload.webhookUrl !== undefined ? { webhookUrl: payload.webhookUrl } : {})
          }
          const row = yield* requireFound(yield* store.update(principal, params.recordId, changes), params.recordId)
          return { success: true as const, data: toView(row) }
        }).pipe(atEdge))
      .handle("remove", ({ params, query }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const mode = query.mode ?? "soft"
          const row = yield* requireFound(yield* store.remove(principal, params.recordId, mode), params.recordId)
          const deletedAt = row.deletedAt ?? new Date(yield* Clock.currentTimeMillis)
          return { success: true as const, data: { recordId: row.id, mode, deletedAt: deletedAt.toISOString() } }
        }).pipe(atEdge))
      .handle("recordProof", ({ params }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return { success: true as const, data: yield* store.proof(principal, params.recordId) }
        }).pipe(atEdge))
      .handle("proofByHash", ({ params }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const hash = params.hash.toLowerCase()
          const rows = yield* store.byHash(principal, hash)
          if (rows.length === 0) return yield* new HashNotFound({ hash })
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
        }).pipe(atEdge))
      .handle("usage", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const now = new Date(yield* Clock.currentTimeMillis)
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
        }).pipe(atEdge))
  }))
