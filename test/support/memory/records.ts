/**
 * Records in memory: the record store (src/records/RecordStore.ts) and the ingest writer
 * (src/records/IngestWriter.ts) behind the same service tags and interfaces, over one table. The rules
 * the SQL statements hold are kept where a handler's answer depends on them: the owner's scope, what a
 * lookup of a deleted record finds, the list's order, cursor and filters, the monthly quota, one
 * Idempotency-Key per account and environment, what a PATCH counts as a change, what a hard delete
 * erases. Records stay QUEUED: nothing anchors here (their anchors are the SQL tests' concern).
 */
import { Clock, Effect, Layer } from "effect"
import type { Environment } from "../../../src/api/recordSchemas.ts"
import { currentMonth } from "../../../src/auth/plans.ts"
import { canonicalize } from "../../../src/canonical/jcs.ts"
import { eraseFromAnswer } from "../../../src/records/erasure.ts"
import { IngestWriter, type SubmitOutcome } from "../../../src/records/IngestWriter.ts"
import type { RecordRow } from "../../../src/records/model.ts"
import { NotAnchored } from "../../../src/records/errors.ts"
import { type Lookup, type Owner, RecordStore, requireFound } from "../../../src/records/RecordStore.ts"
import { idempotencyKey, MemoryTables } from "./tables.ts"

const DAY_MS = 24 * 60 * 60 * 1000

export const RecordStoreMemory = Layer.effect(
  RecordStore,
  Effect.gen(function*() {
    const tables = yield* MemoryTables
    const clock = yield* Clock.Clock
    const now = () => new Date(clock.currentTimeMillisUnsafe())

    const owned = (owner: Owner, id: string): RecordRow | undefined => {
      const row = tables.records.get(id)
      return row !== undefined && row.accountId === owner.accountId && row.environment === owner.environment ? row : undefined
    }
    const classify = (row: RecordRow | undefined, includeDeleted: boolean): Lookup =>
      row === undefined
        ? { _tag: "NotFound" }
        : row.deletedAt !== null && !(includeDeleted && !row.hardDeleted)
        ? { _tag: "Deleted", row }
        : { _tag: "Found", row }
    const newestFirst = (rows: Iterable<RecordRow>) => [...rows].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
    const ofOwner = (owner: Owner) => [...tables.records.values()].filter((r) => r.accountId === owner.accountId && r.environment === owner.environment)
    const save = (row: RecordRow) => {
      tables.records.set(row.id, row)
      return row
    }

    return RecordStore.of({
      get: (owner, id, includeDeleted) => Effect.sync(() => classify(owned(owner, id), includeDeleted)),
      // No chain here: a record is never anchored, so its proof is 404 / 410 as `get`, else 409 NOT_ANCHORED.
      proof: (owner, id) =>
        Effect.flatMap(requireFound(classify(owned(owner, id), false), id), (row) => new NotAnchored({ recordId: row.id, status: row.status })),
      proofsOf: () => Effect.succeed([]),
      list: (owner, o) =>
        Effect.sync(() =>
          newestFirst(ofOwner(owner).filter((r) =>
            (o.before === undefined || r.id < o.before) &&
            (o.collection === undefined || r.collection === o.collection) &&
            (o.includeDeleted ? !r.hardDeleted : r.deletedAt === null) &&
            (o.status === undefined || (o.status === "DELETED" ? r.deletedAt !== null : r.status === o.status)) &&
            (o.chainType === undefined || r.chainType === o.chainType) &&
            (o.createdFrom === undefined || r.createdAt >= o.createdFrom) &&
            (o.createdBefore === undefined || r.createdAt < o.createdBefore)
          )).slice(0, o.limit)
        ),
      byHash: (owner, hash) => Effect.sync(() => newestFirst(ofOwner(owner).filter((r) => r.hash === hash && r.deletedAt === null)).slice(0, 100)),
      update: (owner, id, changes) =>
        Effect.sync((): Lookup => {
          const found = classify(owned(owner, id), false)
          if (found._tag !== "Found") return found
          // As the SQL store: only what differs is a change (metadata compared as JSON values), and the
          // answer shows the metadata in the order the client sent it.
          const diff: { metadata?: Record<string, unknown>; webhookUrl?: string | null } = {}
          if (changes.metadata !== undefined && canonicalize(changes.metadata) !== canonicalize(found.row.metadata)) diff.metadata = changes.metadata
          if (changes.webhookUrl !== undefined && changes.webhookUrl !== found.row.webhookUrl) diff.webhookUrl = changes.webhookUrl
          const asSent = (row: RecordRow): RecordRow => changes.metadata === undefined ? row : { ...row, metadata: changes.metadata }
          if (Object.keys(diff).length === 0) return { _tag: "Found", row: asSent(found.row) }
          const updated = save({
            ...found.row,
            metadata: changes.metadata ?? found.row.metadata,
            webhookUrl: changes.webhookUrl === undefined ? found.row.webhookUrl : changes.webhookUrl,
            updatedAt: now()
          })
          tables.events.push({
            accountId: owner.accountId,
            event: { kind: "record.updated", recordId: id, hash: found.row.hash, status: found.row.status, changes: diff }
          })
          return { _tag: "Found", row: asSent(updated) }
        }),
      remove: (owner, id, mode) =>
        Effect.sync((): Lookup => {
          const row = owned(owner, id)
          if (row === undefined) return { _tag: "NotFound" }
          if (row.hardDeleted || (row.deletedAt !== null && mode === "soft")) return { _tag: "Deleted", row }
          const at = now()
          tables.events.push({ accountId: owner.accountId, event: { kind: "record.deleted", recordId: id, hash: row.hash, status: row.status, mode } })
          if (mode === "soft") return { _tag: "Found", row: save({ ...row, deletedAt: at, updatedAt: at }) }
          // Erased: the row's data and metadata, and the record's views in stored Idempotency-Key answers.
          for (const answer of tables.idempotency.values()) {
            const erased = eraseFromAnswer(answer.body, id)
            if (erased !== undefined) answer.body = erased
          }
          return {
            _tag: "Found",
            row: save({
              ...row,
              deletedAt: row.deletedAt ?? at,
              updatedAt: at,
              hardDeleted: true,
              dataJcs: null,
              ciphertext: null,
              nonce: null,
              authTag: null,
              metadata: {},
              collection: null,
              webhookUrl: null
            })
          }
        }),
      usage: (accountId, month) => Effect.sync(() => tables.usage.get(`${accountId} ${month}`) ?? 0),
      idempotent: (accountId: string, environment: Environment, key: string) =>
        Effect.sync(() => {
          const row = tables.idempotency.get(idempotencyKey(accountId, environment, key))
          return row !== undefined && row.createdAt.getTime() > clock.currentTimeMillisUnsafe() - DAY_MS
            ? { requestHash: row.requestHash, status: row.status, body: row.body }
            : undefined
        })
    })
  })
)

/** Commits at once, one submission at a time: the quota and the Idempotency-Key checked as the SQL writer's transaction does. */
export const IngestWriterMemory = Layer.effect(
  IngestWriter,
  Effect.gen(function*() {
    const tables = yield* MemoryTables
    const clock = yield* Clock.Clock
    return IngestWriter.of({
      submit: (s) =>
        Effect.sync((): SubmitOutcome => {
          // As the SQL writer: the key is claimed first (any stored answer holds it, however old), and
          // a submission the quota refuses does not keep it.
          const key = s.idempotency === undefined ? undefined : idempotencyKey(s.accountId, s.environment, s.idempotency.key)
          if (key !== undefined && tables.idempotency.has(key)) return { _tag: "IdempotencyKeyTaken" }
          const usageKey = `${s.accountId} ${currentMonth(clock.currentTimeMillisUnsafe()).month}`
          const used = tables.usage.get(usageKey) ?? 0
          if (s.monthlyQuota !== null && used + s.rows.length > s.monthlyQuota) return { _tag: "QuotaExceeded", used }
          if (key !== undefined) {
            const { body, requestHash, status } = s.idempotency!
            tables.idempotency.set(key, { requestHash, status, body, createdAt: s.rows[0]!.createdAt })
          }
          for (const { salt: _salt, ...row } of s.rows) {
            tables.records.set(row.id, { ...row, status: "QUEUED", anchoredAt: null, deletedAt: null, hardDeleted: false, anchors: [] })
          }
          tables.usage.set(usageKey, used + s.rows.length)
          return { _tag: "Committed", usedAfter: used + s.rows.length }
        })
    })
  })
)
