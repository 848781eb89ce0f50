/** The account's records, their proofs and certificates (`consoleRecords`, src/api/consoleAreas.ts): its members read them. */
import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../../api/Api.ts"
import { certificateHeaders, Certificates } from "../../certificates/Certificates.ts"
import { AppConfig } from "../../config.ts"
import { atEdge } from "../../db/errors.ts"
import { pageOf, recordCursors } from "../../http/pagination.ts"
import { publicBaseUrl } from "../../http/publicUrl.ts"
import { InvalidRecord } from "../../records/errors.ts"
import { toView } from "../../records/model.ts"
import { RecordStore, requireFound } from "../../records/RecordStore.ts"
import { InvalidConsoleInput } from "../errors.ts"
import { consoleAccess, hidesSecrets, owner } from "./access.ts"
import { dayStart, ok, redactUrl } from "./views.ts"

export const ConsoleRecordsHttpLayer = HttpApiBuilder.group(Api, "consoleRecords", (handlers) =>
  Effect.gen(function*() {
    const { access } = yield* consoleAccess
    const records = yield* RecordStore
    const certificates = yield* Certificates
    const config = yield* AppConfig
    const baseUrl = Effect.map(HttpServerRequest.HttpServerRequest, (request) => publicBaseUrl(request, config))

    /** Viewers see no secret: a record's webhook URL (which may carry one) is shown by its origin. */
    const recordView = (row: Parameters<typeof toView>[0], hide: boolean) => {
      const view = toView(row)
      return hide ? { ...view, webhookUrl: redactUrl(view.webhookUrl) } : view
    }

    return handlers
      .handle("listRecords", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "read")
          const hide = yield* hidesSecrets
          const by = owner(params.accountId, query.environment)
          const q = query.q?.trim().toLowerCase()
          if (q !== undefined && q !== "") {
            // A search is by id or hash: the record(s) found, other filters ignored.
            if (/^[0-9a-f]{24}$/.test(q)) {
              const found = yield* records.get(by, q, true)
              return ok({ records: found._tag === "Found" ? [recordView(found.row, hide)] : [], nextCursor: null })
            }
            if (/^[0-9a-f]{64}$/.test(q)) return ok({ records: (yield* records.byHash(by, q)).map((r) => recordView(r, hide)), nextCursor: null })
            return yield* new InvalidConsoleInput({ reason: "search: a record id (24 hex characters) or a hash (64 hex characters)" })
          }
          const limit = query.limit ?? 25
          const before = recordCursors.parse(query.cursor)
          if (!before.ok) return yield* new InvalidRecord({ reason: before.message })
          const to = query.to === undefined ? undefined : new Date(dayStart(query.to).getTime() + 86_400_000)
          const rows = yield* records.list(by, {
            limit: limit + 1,
            before: before.key,
            status: query.status,
            collection: query.collection,
            includeDeleted: query.status === "DELETED",
            chainType: query.chain,
            createdFrom: query.from === undefined ? undefined : dayStart(query.from),
            createdBefore: to
          })
          const { page, nextCursor } = pageOf(rows, limit, recordCursors, (row) => row.id)
          return ok({ records: page.map((row) => recordView(row, hide)), nextCursor })
        }).pipe(atEdge))
      .handle("getRecord", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "read")
          const row = yield* requireFound(yield* records.get(owner(params.accountId, query.environment), params.recordId, true), params.recordId)
          return ok(recordView(row, yield* hidesSecrets))
        }).pipe(atEdge))
      .handle("recordProof", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "read")
          return ok(yield* records.proof(owner(params.accountId, query.environment), params.recordId))
        }).pipe(atEdge))
      .handle("recordCertificate", ({ params, query }) =>
        Effect.gen(function*() {
          yield* access(params.accountId, "read")
          const certificate = yield* certificates.forRecord(owner(params.accountId, query.environment), params.recordId, `${yield* baseUrl}/verify`)
          return HttpServerResponse.uint8Array(certificate.pdf, { contentType: "application/pdf", headers: certificateHeaders(certificate) })
        }).pipe(atEdge))
  }))
