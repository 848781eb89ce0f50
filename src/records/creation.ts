/**
 * The record-creating POSTs (SPEC 3.1): /v1/anchor, /v1/anchor/encrypted, /v1/anchor/hash and
 * /v1/anchor/batch, from a strictly parsed body to the 202 response text (or the domain failure).
 *
 * Two callers, one behaviour: the HttpApi handlers of these endpoints (./http.ts), with the body their
 * schemas decoded, and the ingest fast path of the gateway (src/app/gateway.ts, docs/architecture.md),
 * which calls this directly once it has admitted the key and parsed the body, and whose body is decoded
 * here (each body is decoded once). Both answer the text built here, byte for byte
 * (test/records/fastpath.test.ts runs the same requests both ways).
 */
import { Context, Effect, Layer } from "effect"
import type { Principal } from "../api/auth.ts"
import { decodeWith } from "../http/decode.ts"
import { countAccepted, metricsHandle } from "../metrics/metrics.ts"
import { IdempotencyConflict, InvalidRecord, type QuotaExceeded } from "./errors.ts"
import { decodeSubmission, Ingest, type PrepareError, sha256Hex, type Submission, type SubmissionKind } from "./Ingest.ts"
import type { SubmitError } from "./IngestWriter.ts"
import type { NewRecord } from "./insertRecords.ts"
import { toView } from "./model.ts"
import { RecordStore } from "./RecordStore.ts"
import { DatabaseGuard } from "../db/guard.ts"
import { type AnchorBody, BatchAnchorBody, type EncryptedAnchorBody, type HashAnchorBody, MAX_BATCH_RECORDS } from "../api/recordSchemas.ts"
import { annotateFiber, MAX_IDS } from "../tracing/attributes.ts"

export type CreateEndpoint = "anchor" | "anchorEncrypted" | "anchorHash" | "anchorBatch"

/** Each endpoint's body as its schema decodes it. */
export interface CreatePayloads {
  readonly anchor: AnchorBody
  readonly anchorEncrypted: EncryptedAnchorBody
  readonly anchorHash: HashAnchorBody
  readonly anchorBatch: typeof BatchAnchorBody.Type
}

/**
 * A create's body, decoded once: by the endpoint's schema (the HttpApi handlers, ./http.ts), or here
 * from the JSON as parsed (the gateway's fast path, which has no handler chain to decode it). A parsed
 * body was parsed strictly from `bodyText` itself: when that text has no backslash, no string in it
 * needs escaping, so data is canonicalized without escaping checks (`canonicalizeParsedPlain`).
 */
export type CreateBody<E extends CreateEndpoint = CreateEndpoint> =
  | { readonly _tag: "Decoded"; readonly payload: CreatePayloads[E] }
  | { readonly _tag: "Parsed"; readonly json: unknown }

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
  // Encrypted records (ciphertext, hash scheme, salt) go through toView.
  if (row.source === "encrypted") return viewOf(row)
  const created = row.createdAt.toISOString()
  const updated = row.updatedAt === row.createdAt ? created : row.updatedAt.toISOString()
  return `{"recordId":"${row.id}","hash":"${row.hash}","status":"QUEUED","environment":"${row.environment}",` +
    `"chainType":"${row.chainType}","networkId":${JSON.stringify(row.networkId)},"packageMode":"${row.packageMode}",` +
    `"collection":${row.collection === null ? "null" : JSON.stringify(row.collection)},"metadata":${JSON.stringify(row.metadata)},"webhookUrl":${
      JSON.stringify(row.webhookUrl)
    },` +
    `"createdAt":"${created}","updatedAt":"${updated}","anchoredAt":null,"deletedAt":null,` +
    `"encrypted":false,"anchors":[],"data":${row.dataJcs ?? "null"}}`
}

/** `acceptedView` through the general `toView`. */
export const viewOf = (row: NewRecord): string => {
  const { salt, ...stored } = row
  const { data: _data, ...view } = toView({
    ...stored,
    dataJcs: null,
    status: "QUEUED",
    anchoredAt: null,
    deletedAt: null,
    hardDeleted: false
  }, { salt })
  const head = JSON.stringify(view)
  return `${head.slice(0, -1)},"data":${row.dataJcs ?? "null"}}`
}

/** What a create answers: 202 with the text, or the stored answer of an earlier request with the same Idempotency-Key. */
export interface Accepted {
  readonly status: number
  readonly body: string
  /** An Idempotency-Key replay (`Idempotent-Replayed: true`). */
  readonly replayed: boolean
}

export type CreateError = PrepareError | QuotaExceeded | IdempotencyConflict | SubmitError

export interface CreateOptions {
  /** The `Idempotency-Key` header, when sent. */
  readonly idempotencyKey: string | undefined
  /** The body as received: the idempotency check compares requests by it. */
  readonly bodyText: string
  /** The request's path (no query): part of what the idempotency check compares. */
  readonly path: string
}

type Idempotency = { readonly key: string; readonly requestHash: string }

export class RecordCreation extends Context.Service<RecordCreation, {
  readonly create: <E extends CreateEndpoint>(
    endpoint: E,
    principal: Principal,
    body: CreateBody<E>,
    options: CreateOptions
  ) => Effect.Effect<Accepted, CreateError>
}>()("anchord/records/RecordCreation") {
  static readonly layer = Layer.effect(
    RecordCreation,
    Effect.gen(function*() {
      const ingest = yield* Ingest
      const store = yield* RecordStore
      const guard = yield* DatabaseGuard
      // The node's metrics registry (src/app/metrics.ts), for counting without an effect step.
      const metrics = yield* metricsHandle

      /** Commits and answers `status` with `text`, or reports that another request took the Idempotency-Key. */
      const commit = (principal: Principal, rows: ReadonlyArray<NewRecord>, text: string, idem: Idempotency | undefined, status = 202) =>
        Effect.withFiber((fiber) => {
          // The ingest span (the POST's server span) names its records, which later spans join on.
          annotateFiber(fiber, () =>
            rows.length === 1
              ? { "anchord.record_id": rows[0]!.id }
              : { "anchord.record_ids": rows.slice(0, MAX_IDS).map((r) => r.id), "anchord.record_count": rows.length })
          return Effect.map(
            ingest.commit(principal, rows, idem && { ...idem, status, body: text }),
            (outcome) => {
              if (outcome === "idempotency-key-taken") return outcome
              countRows(rows)
              return { status, body: text, replayed: false }
            }
          )
        })

      /** anchord_records_accepted_total: one update per request (a batch's rows grouped by chain type). */
      const countRows = (rows: ReadonlyArray<NewRecord>) => {
        if (rows.length === 1) return countAccepted(metrics, rows[0]!.chainType, rows[0]!.environment, 1)
        const byChain = new Map<string, number>()
        for (const row of rows) byChain.set(row.chainType, (byChain.get(row.chainType) ?? 0) + 1)
        for (const [chain, n] of byChain) countAccepted(metrics, chain, rows[0]!.environment, n)
      }

      const single = (kind: SubmissionKind, principal: Principal, body: CreateBody, plain: boolean, idem: Idempotency | undefined) => {
        const decoded = body._tag === "Decoded"
          ? { _tag: "Valid" as const, submission: { _tag: kind, body: body.payload } as Submission }
          : decodeSubmission(kind, body.json, "", plain)
        if (decoded._tag === "Invalid") return Effect.fail(decoded.error)
        return Effect.flatMap(
          ingest.prepare(principal, decoded.submission),
          (row) => commit(principal, [row], `{"success":true,"data":${acceptedView(row)}}`, idem)
        )
      }

      const batch = (principal: Principal, body: CreateBody, plain: boolean, idem: Idempotency | undefined) =>
        Effect.gen(function*() {
          // Its items are decoded one by one below (a refused item is reported in place), on both paths.
          const top = body._tag === "Decoded"
            ? { ok: true as const, value: body.payload as typeof BatchAnchorBody.Type }
            : decodeWith(BatchAnchorBody, body.json)
          if (!top.ok) return yield* new InvalidRecord({ reason: top.message })
          const records = top.value.records
          if (records.length > MAX_BATCH_RECORDS) {
            return yield* new InvalidRecord({ reason: `records: at most ${MAX_BATCH_RECORDS} per call` })
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
              const { message: error, errorCode } = prepared.failure
              results.push(JSON.stringify({ index, success: false, error, errorCode }))
            }
          }
          const failed = records.length - rows.length
          const text = `{"success":true,"data":{"accepted":${rows.length},"rejected":${failed},` +
            `"summary":{"successful":${rows.length},"failed":${failed}},"results":[${results.join(",")}]}}`
          // 202 when every item was accepted, 207 Multi-Status when some were refused (docs/api.md),
          // also when all were: the per-item errors are the answer, and nothing was written.
          if (rows.length === 0) return { status: 207, body: text, replayed: false } satisfies Accepted
          return yield* commit(principal, rows, text, idem, failed === 0 ? 202 : 207)
        })

      const run = (endpoint: CreateEndpoint, principal: Principal, body: CreateBody, options: CreateOptions, idem: Idempotency | undefined) => {
        const plain = body._tag === "Parsed" && options.bodyText.indexOf("\\") === -1
        return endpoint === "anchorBatch" ? batch(principal, body, plain, idem) : single(KIND[endpoint], principal, body, plain, idem)
      }

      /** Idempotency-Key: replay the stored response, 409 for another body, else create (SPEC 3.1). */
      const idempotent = (endpoint: CreateEndpoint, principal: Principal, body: CreateBody, options: CreateOptions, key: string) =>
        Effect.gen(function*() {
          if (key.length === 0 || key.length > 255) {
            return yield* new InvalidRecord({ reason: "Idempotency-Key must be 1 to 255 characters" })
          }
          const requestHash = sha256Hex(`POST ${options.path}\n${options.bodyText}`)
          const replay = Effect.gen(function*() {
            // Like every wait of a request on the database: refused at once while the breaker is open, and
            // bounded. Unbounded, these lookups queued for the pool behind a failover's retry storm, kept it
            // full, starved the breaker's probe and held the breaker open (the failover soak).
            if (!guard.isUp()) return yield* guard.refuse
            const stored = yield* guard.bounded(store.idempotent(principal.accountId, principal.environment, key))
            if (stored === undefined) return undefined
            if (stored.requestHash !== requestHash) return yield* new IdempotencyConflict()
            return { status: stored.status, body: stored.body, replayed: true } satisfies Accepted
          })
          const previous = yield* replay
          if (previous !== undefined) return previous
          const result = yield* run(endpoint, principal, body, options, { key, requestHash })
          if (result !== "idempotency-key-taken") return result
          // Another request with this key committed first.
          const after = yield* replay
          return after ?? (yield* Effect.die(new Error("idempotency key vanished")))
        })

      return RecordCreation.of({
        create: (endpoint, principal, body, options) => {
          if (options.idempotencyKey !== undefined) return idempotent(endpoint, principal, body, options, options.idempotencyKey)
          return Effect.flatMap(run(endpoint, principal, body, options, undefined),
            (result) => result === "idempotency-key-taken" ? Effect.die(new Error("no idempotency key")) : Effect.succeed(result))
        }
      })
    })
  )
}
