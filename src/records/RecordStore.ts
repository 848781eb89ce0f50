/** Reads and owner-side changes of records. Each change writes its outbox event in the same transaction. */
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type SqlError, SqlSchema } from "effect/sql"
import { Environment } from "../api/recordSchemas.ts"
import { anchorReads, proofBundle } from "../anchoring/anchorViews.ts"
import { listedInStatus, recordColumns, type RecordStatus, stateJoin } from "../anchoring/recordState.ts"
import { canonicalize } from "../canonical/jcs.ts"
import { append, appendOne } from "../outbox/Outbox.ts"
import type { RecordDeleted as RecordDeletedEvent, RecordUpdated } from "../outbox/events.ts"
import { NotAnchored, RecordDeleted, RecordNotFound } from "./errors.ts"
import { rowDefects, type SqlEffect } from "../db/rows.ts"
import { RecordRow } from "./model.ts"
import { eraseFromAnswer } from "./erasure.ts"

/** The last error of a delivery cancelled by a hard delete of its record. */
export const CANCELLED = "cancelled: the record was erased (hard delete) before this delivery was made"

export interface Owner {
  readonly accountId: string
  readonly environment: Environment
}

export type Lookup =
  | { readonly _tag: "Found"; readonly row: RecordRow }
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "Deleted"; readonly row: RecordRow }

/** The record of a lookup, or why there is none (404, 410). */
export const requireFound = (lookup: Lookup, recordId: string): Effect.Effect<RecordRow, RecordNotFound | RecordDeleted> =>
  lookup._tag === "Found"
    ? Effect.succeed(lookup.row)
    : lookup._tag === "Deleted"
    ? Effect.fail(new RecordDeleted({ recordId }))
    : Effect.fail(new RecordNotFound({ recordId }))

/**
 * SPEC 6: an anchored record's proof bundle (docs/proof-format.md) as the node builds it (anchorViews' `proofBundle`);
 * its wire schema is src/api/proofBundle.ts's `ProofBundle`.
 */
export type BuiltProofBundle = ReturnType<typeof proofBundle>

/** What `proofsOf` reads of a record: a `RecordRow`, or any row with its id, hash, salt flag and state. */
type ProofSource = Pick<RecordRow, "id" | "hash" | "salted"> & { readonly status: string }

const OwnerSchema = Schema.Struct({ accountId: Schema.String, environment: Environment })
const IdempotentRow = Schema.Struct({ requestHash: Schema.String, status: Schema.Number, body: Schema.String })
/** `used` is a bigint, read as text. */
const UsageRow = Schema.Struct({ used: Schema.NumberFromString })
const AnswerRow = Schema.Struct({ key: Schema.String, body: Schema.String })

export class RecordStore extends Context.Service<RecordStore, {
  readonly get: (owner: Owner, id: string, includeDeleted: boolean) => SqlEffect<Lookup>
  readonly list: (owner: Owner, options: {
    readonly limit: number
    readonly before?: string | undefined
    readonly status?: string | undefined
    readonly collection?: string | undefined
    readonly includeDeleted: boolean
    /** The console's filters: the record's chain type, created at or after / before. */
    readonly chainType?: string | undefined
    readonly createdFrom?: Date | undefined
    readonly createdBefore?: Date | undefined
  }) => SqlEffect<ReadonlyArray<RecordRow>>
  readonly byHash: (owner: Owner, hash: string) => SqlEffect<ReadonlyArray<RecordRow>>
  /**
   * The owner's record's proof bundle: 404 / 410 as `get`, 409 NOT_ANCHORED until it is anchored. The one
   * lookup behind `/v1/records/{id}/proof`, the console's proof and certificates.
   */
  readonly proof: (owner: Owner, id: string) => Effect.Effect<BuiltProofBundle, RecordNotFound | RecordDeleted | NotAnchored | SqlError.SqlError>
  /** The proof bundles of the anchored records among `rows` (as `get` or `byHash` read them), in their order: one query. */
  readonly proofsOf: (rows: ReadonlyArray<ProofSource>) => SqlEffect<ReadonlyArray<BuiltProofBundle>>
  readonly update: (owner: Owner, id: string, changes: {
    readonly metadata?: Record<string, unknown> | undefined
    readonly webhookUrl?: string | null | undefined
  }) => SqlEffect<Lookup>
  readonly remove: (owner: Owner, id: string, mode: "soft" | "hard") => SqlEffect<Lookup>
  readonly usage: (accountId: string, month: string) => SqlEffect<number>
  /** A stored Idempotency-Key response younger than 24 h. */
  readonly idempotent: (accountId: string, environment: Environment, key: string) => SqlEffect<
    { readonly requestHash: string; readonly status: number; readonly body: string } | undefined
  >
}>()("anchord/records/RecordStore") {
  static readonly layer = Layer.effect(
    RecordStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const anchors = anchorReads(sql)
      const attachAnchors = anchors.withAnchors

      // By the primary key whatever the statistics: behind the fence (OFFSET 0) the key is the
      // only condition, so no plan can walk the owner's index (records_hash, records_list) and filter each of
      // the account's records, as a plan made on a fresh database did for good (430 ms at 18,448 records).
      // The state is read with the row (src/anchoring/recordState.ts).
      const findRecord = SqlSchema.findOneOption({
        Request: Schema.Struct({ owner: OwnerSchema, id: Schema.String, lock: Schema.Boolean }),
        Result: RecordRow,
        execute: ({ id, lock, owner }) =>
          sql`
          SELECT ${recordColumns(sql)} FROM (SELECT * FROM records WHERE id = ${id} OFFSET 0) r ${stateJoin(sql)}
          WHERE r.account_id = ${owner.accountId} AND r.environment = ${owner.environment}
          ${lock ? sql`FOR UPDATE OF r` : sql``}`
      })
      const fetch = (owner: Owner, id: string, lock: boolean) => findRecord({ owner, id, lock }).pipe(rowDefects, Effect.map(Option.getOrUndefined))
      /** A changed row as the caller returns it, its state read again. */
      const reread = SqlSchema.findOne({
        Request: Schema.String,
        Result: RecordRow,
        execute: (id) => sql`SELECT ${recordColumns(sql)} FROM records r ${stateJoin(sql)} WHERE r.id = ${id}`
      })
      const ListRequest = Schema.Struct({
        owner: OwnerSchema,
        limit: Schema.Number,
        before: Schema.optional(Schema.String),
        status: Schema.optional(Schema.String),
        collection: Schema.optional(Schema.String),
        includeDeleted: Schema.Boolean,
        chainType: Schema.optional(Schema.String),
        createdFrom: Schema.optional(Schema.Date),
        createdBefore: Schema.optional(Schema.Date)
      })
      const findList = SqlSchema.findAll({
        Request: ListRequest,
        Result: RecordRow,
        execute: ({ owner, ...options }) =>
          sql`
            SELECT ${recordColumns(sql)} FROM records r ${stateJoin(sql)}
            WHERE r.account_id = ${owner.accountId} AND r.environment = ${owner.environment}
              ${options.before !== undefined ? sql`AND r.id < ${options.before}` : sql``}
              ${options.collection !== undefined ? sql`AND r.collection = ${options.collection}` : sql``}
              ${options.includeDeleted ? sql`AND NOT r.hard_deleted` : sql`AND r.deleted_at IS NULL`}
              ${
            options.status === "DELETED"
              ? sql`AND r.deleted_at IS NOT NULL`
              : options.status !== undefined
              ? sql`AND ${listedInStatus(sql, options.status as RecordStatus)}`
              : sql``
          }
              ${options.chainType !== undefined ? sql`AND r.chain_type = ${options.chainType}` : sql``}
              ${options.createdFrom !== undefined ? sql`AND r.created_at >= ${options.createdFrom}` : sql``}
              ${options.createdBefore !== undefined ? sql`AND r.created_at < ${options.createdBefore}` : sql``}
            ORDER BY r.id DESC LIMIT ${options.limit}`
      })
      const findByHash = SqlSchema.findAll({
        Request: Schema.Struct({ owner: OwnerSchema, hash: Schema.String }),
        Result: RecordRow,
        execute: ({ hash, owner }) =>
          sql`
            SELECT ${recordColumns(sql)} FROM records r ${stateJoin(sql)}
            WHERE r.account_id = ${owner.accountId} AND r.environment = ${owner.environment} AND r.hash = ${hash}
              AND r.deleted_at IS NULL
            ORDER BY r.id DESC LIMIT 100`
      })
      const findIdempotent = SqlSchema.findOneOption({
        Request: Schema.Struct({ accountId: Schema.String, environment: Environment, key: Schema.String, at: Schema.Date }),
        Result: IdempotentRow,
        execute: ({ accountId, at, environment, key }) =>
          sql`
            SELECT request_hash, status, body FROM idempotency_keys
            WHERE account_id = ${accountId} AND environment = ${environment} AND key = ${key}
              AND created_at > ${at}::timestamptz - interval '24 hours'`
      })
      const findUsage = SqlSchema.findOneOption({
        Request: Schema.Struct({ accountId: Schema.String, month: Schema.String }),
        Result: UsageRow,
        execute: ({ accountId, month }) => sql`SELECT used::text AS used FROM usage_monthly WHERE account_id = ${accountId} AND month = ${month}`
      })
      /** Idempotency-Key answers stored near the record's creation that may hold its view, locked for the erasure. */
      const findAnswers = SqlSchema.findAll({
        Request: Schema.Struct({ owner: OwnerSchema, recordId: Schema.String, createdAt: Schema.Date }),
        Result: AnswerRow,
        execute: ({ createdAt, owner, recordId }) =>
          sql`
            SELECT key, body FROM idempotency_keys
            WHERE account_id = ${owner.accountId} AND environment = ${owner.environment}
              AND created_at BETWEEN ${createdAt}::timestamptz - interval '5 minutes' AND ${createdAt}::timestamptz + interval '5 minutes'
              AND strpos(body, ${`{"recordId":"${recordId}"`}) > 0
            FOR UPDATE`
      })

      const classify = (row: RecordRow | undefined, includeDeleted: boolean): Lookup =>
        row === undefined
          ? { _tag: "NotFound" }
          : row.deletedAt !== null && !(includeDeleted && !row.hardDeleted)
          ? { _tag: "Deleted", row }
          : { _tag: "Found", row }

      /** The record's event, through the outbox's one schema, in the caller's transaction. */
      const event = (owner: Owner, event: RecordUpdated | RecordDeletedEvent) => append(sql, [{ accountId: owner.accountId, event }])
      const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

      const updateRecord = SqlSchema.void({
        Request: Schema.Struct({
          id: Schema.String,
          metadata: Schema.fromJsonString(Schema.Record(Schema.String, Schema.Unknown)),
          webhookUrl: Schema.NullOr(Schema.String),
          at: Schema.Date
        }),
        execute: ({ at, id, metadata, webhookUrl }) =>
          sql`UPDATE records SET metadata = ${metadata}, webhook_url = ${webhookUrl}, updated_at = ${at} WHERE id = ${id}`
      })
      const deleteRecord = SqlSchema.void({
        Request: Schema.Struct({ id: Schema.String, mode: Schema.Literals(["soft", "hard"]), at: Schema.Date }),
        execute: ({ at, id, mode }) =>
          mode === "soft"
            ? sql`UPDATE records SET deleted_at = ${at}, updated_at = ${at} WHERE id = ${id}`
            : sql`
              UPDATE records SET deleted_at = COALESCE(deleted_at, ${at}), updated_at = ${at}, hard_deleted = true,
                data_jcs = NULL, ciphertext = NULL, nonce = NULL, auth_tag = NULL, metadata = '{}'::jsonb,
                collection = NULL, webhook_url = NULL
              WHERE id = ${id}`
      })
      const eraseAnswer = SqlSchema.void({
        Request: Schema.Struct({ owner: OwnerSchema, key: Schema.String, body: Schema.String }),
        execute: ({ body, key, owner }) =>
          sql`
              UPDATE idempotency_keys SET body = ${body}
              WHERE account_id = ${owner.accountId} AND environment = ${owner.environment} AND key = ${key}`
      })
      /** The statements of `eraseCopies`, in its order (see there). */
      const eraseStatements = SqlSchema.void({
        Request: Schema.Struct({ accountId: Schema.String, recordId: Schema.String, deletedSeq: Schema.String, at: Schema.Date }),
        execute: ({ accountId, at, deletedSeq, recordId }) =>
          Effect.gen(function*() {
            // record.updated is the only stored kind that holds owner data (the changed metadata / webhookUrl);
            // anchor.confirmed (stored by older nodes, or derived from a batch event) holds hash and anchors only.
            yield* sql`
            UPDATE events SET payload = jsonb_set(payload, '{changes}', '{}'::jsonb)
            WHERE record_id = ${recordId} AND kind = 'record.updated' AND payload -> 'changes' <> '{}'::jsonb`
            // Fan-outs not yet made (its anchor.confirmed): locked first, so that a dispatcher fanning one out now
            // commits before the deliveries below are read, and its delivery is erased with the others.
            yield* sql`SELECT id FROM webhook_fanouts WHERE ${recordId} = ANY (record_ids) FOR UPDATE`
            yield* sql`
            UPDATE webhook_fanouts f SET
              record_ids = ARRAY(SELECT u.r FROM unnest(f.record_ids, f.hosts) WITH ORDINALITY AS u(r, h, o) WHERE u.r <> ${recordId} ORDER BY u.o),
              hosts = ARRAY(SELECT u.h FROM unnest(f.record_ids, f.hosts) WITH ORDINALITY AS u(r, h, o) WHERE u.r <> ${recordId} ORDER BY u.o)
            WHERE ${recordId} = ANY (f.record_ids)`
            yield* sql`DELETE FROM webhook_fanouts WHERE cardinality(record_ids) = 0`
            // Its anchor.confirmed kept in a chunk row (webhook_chunk_deliveries) is split out into a delivery row of its own,
            // to be erased below as any delivery is (its per-record URL cut, no redelivery).
            yield* sql`
            SELECT anchord_chunk_split(c.id, ARRAY[${recordId}::text])
            FROM (SELECT id, account_id FROM webhook_chunk_deliveries c
                  WHERE (c.record_ids || c.event_ids) @> ARRAY[${recordId}::text] OFFSET 0) c
            WHERE c.account_id = ${accountId}`
            // Pending deliveries but the hard delete's own are cancelled (a body rendered before now holds the
            // metadata); then every delivery of the record loses its body, and per-record URLs of finished ones are
            // cut to their origin (the trigger webhook_deliveries_erased_url, on the second statement).
            yield* sql`
            UPDATE webhook_deliveries SET state = 'FAILED', last_error = ${CANCELLED}, next_attempt_at = NULL,
              locked_until = NULL, locked_by = NULL, claim_token = NULL, updated_at = ${at}
            WHERE record_id = ${recordId} AND account_id = ${accountId} AND state = 'PENDING'
              AND event_seq IS DISTINCT FROM ${deletedSeq}::bigint`
            yield* sql`
            UPDATE webhook_deliveries SET erased = true, body = NULL, signature = NULL, signature_next = NULL, updated_at = ${at}
            WHERE record_id = ${recordId} AND account_id = ${accountId}`
          })
      })

      /**
       * A hard delete's erasure outside the row, in its transaction (docs/api.md, "What a hard delete
       * leaves"): the record's copies in stored events, webhook deliveries and Idempotency-Key answers.
       * `deletedSeq`: the hard delete's own record.deleted, whose delivery is still sent (it holds nothing
       * erased); every other delivery of the record still pending is cancelled.
       */
      const eraseCopies = (owner: Owner, row: RecordRow, deletedSeq: string, at: Date) =>
        Effect.gen(function*() {
          yield* rowDefects(eraseStatements({ accountId: owner.accountId, recordId: row.id, deletedSeq, at }))
          // Idempotency-Key answers holding the record's view (stored at its createdAt by ingest; a margin for
          // answers stored before that, at the database's time).
          const answers = yield* rowDefects(findAnswers({ owner, recordId: row.id, createdAt: row.createdAt }))
          for (const answer of answers) {
            const erased = eraseFromAnswer(answer.body, row.id)
            if (erased === undefined) continue
            yield* rowDefects(eraseAnswer({ owner, key: answer.key, body: erased }))
          }
        })

      const proofsOf = (rows: ReadonlyArray<ProofSource>) => {
        const anchored = rows.filter((r) => r.status === "ANCHORED")
        return Effect.map(anchors.anchorRows(anchored.map((r) => r.id)), (byId) => anchored.map((r) => proofBundle(r, byId.get(r.id) ?? [])))
      }

      return RecordStore.of({
        get: Effect.fn("RecordStore.get")((owner, id, includeDeleted) =>
          fetch(owner, id, false).pipe(
            Effect.flatMap((row) => row === undefined ? Effect.succeed(row) : Effect.map(attachAnchors([row]), (rows) => rows[0])),
            Effect.map((row) => classify(row, includeDeleted))
          )
        ),
        // The row without its view's anchors (`get` reads them): the bundle reads its own, with their proofs.
        proof: Effect.fn("RecordStore.proof")(function*(owner, id) {
          const row = yield* requireFound(classify(yield* fetch(owner, id, false), false), id)
          if (row.status !== "ANCHORED") return yield* new NotAnchored({ recordId: row.id, status: row.status })
          return (yield* proofsOf([row]))[0]!
        }),
        proofsOf,
        list: Effect.fn("RecordStore.list")((owner, options) => findList({ owner, ...options }).pipe(rowDefects, Effect.flatMap(attachAnchors))),
        byHash: Effect.fn("RecordStore.byHash")((owner, hash) => findByHash({ owner, hash }).pipe(rowDefects, Effect.flatMap(attachAnchors))),
        update: Effect.fn("RecordStore.update")((owner, id, changes) =>
          sql.withTransaction(Effect.gen(function*() {
            const found = classify(yield* fetch(owner, id, true), false)
            if (found._tag !== "Found") return found
            // Only what differs from the stored value is a change (docs/api.md): a PATCH of `{}` or of the
            // current values writes nothing, keeps updatedAt and emits no record.updated. Metadata is
            // compared as JSON values: jsonb keeps no member order, so a reordered copy is no change.
            const diff: { metadata?: Record<string, unknown>; webhookUrl?: string | null } = {}
            if (changes.metadata !== undefined && canonicalize(changes.metadata) !== canonicalize(found.row.metadata)) {
              diff.metadata = changes.metadata
            }
            if (changes.webhookUrl !== undefined && changes.webhookUrl !== found.row.webhookUrl) diff.webhookUrl = changes.webhookUrl
            // The answer shows the metadata as the client sent it, in its order (jsonb sorts members; the
            // event keeps the order too, src/outbox/events.ts). Later reads show the stored (jsonb) order.
            const asSent = (row: RecordRow): RecordRow => changes.metadata === undefined ? row : { ...row, metadata: changes.metadata }
            if (Object.keys(diff).length === 0) return { _tag: "Found", row: asSent((yield* attachAnchors([found.row]))[0]!) } as Lookup
            const metadata = changes.metadata ?? found.row.metadata
            const webhookUrl = changes.webhookUrl === undefined ? found.row.webhookUrl : changes.webhookUrl
            yield* rowDefects(updateRecord({ id, metadata, webhookUrl, at: yield* now }))
            const updated = yield* rowDefects(reread(id))
            yield* event(owner, { kind: "record.updated", recordId: id, hash: found.row.hash, status: found.row.status, changes: diff })
            return { _tag: "Found", row: asSent((yield* attachAnchors([updated]))[0]!) } as Lookup
          }))
        ),
        remove: Effect.fn("RecordStore.remove")((owner, id, mode) =>
          sql.withTransaction(Effect.gen(function*() {
            const row = yield* fetch(owner, id, true)
            if (row === undefined) return { _tag: "NotFound" } as Lookup
            // A soft-deleted record may still be erased for good; an erased one is gone.
            if (row.hardDeleted || (row.deletedAt !== null && mode === "soft")) return { _tag: "Deleted", row } as Lookup
            const at = yield* now
            const deletedEvent = { kind: "record.deleted", recordId: id, hash: row.hash, status: row.status, mode } as const
            if (mode === "soft") {
              yield* rowDefects(deleteRecord({ id, mode, at }))
              const deleted = yield* rowDefects(reread(id))
              yield* event(owner, deletedEvent)
              return { _tag: "Found", row: deleted } as Lookup
            }
            // Hard: the event first, so that the events trigger makes its delivery to the record's webhookUrl
            // (read from the row) before the row forgets it.
            const { seq } = yield* appendOne(sql, owner.accountId, deletedEvent)
            yield* rowDefects(deleteRecord({ id, mode, at }))
            const deleted = yield* rowDefects(reread(id))
            yield* eraseCopies(owner, row, seq, at)
            return { _tag: "Found", row: deleted } as Lookup
          }))
        ),
        idempotent: Effect.fn("RecordStore.idempotent")((accountId, environment, key) =>
          Effect.flatMap(now, (at) => findIdempotent({ accountId, environment, key, at })).pipe(rowDefects, Effect.map(Option.getOrUndefined))
        ),
        usage: Effect.fn("RecordStore.usage")((accountId, month) =>
          findUsage({ accountId, month }).pipe(rowDefects, Effect.map(Option.match({ onNone: () => 0, onSome: (row) => row.used })))
        )
      })
    })
  )
}
