/**
 * The time-stamp authority (RFC 3161, docs/timestamping.md): requests in, tokens out, and every token
 * anchored. A granted token's hash-only record (SHA-256 imprints: the imprint itself; SHA-384/512: the
 * SHA-256 of the token's TSTInfo) and the token row are committed in one transaction through ingest's
 * group commit (a companion, src/records/companions.ts) before the token is answered: a token a
 * client holds is always stored and on its way to the chain.
 */
import * as Crypto from "node:crypto"
import { Clock, Context, Duration, Effect, Layer, Option, Schema, Semaphore } from "effect"
import { PgTypes } from "@effect/sql-pg"
import { SqlClient, type SqlError, SqlSchema } from "effect/sql"
import type { Principal } from "../api/auth.ts"
import { stateJoin } from "../anchoring/recordState.ts"
import { AppConfig } from "../config.ts"
import { DatabaseGuard, DatabaseUnavailable } from "../db/guard.ts"
import { binaryArray, rowDefects } from "../db/rows.ts"
import type { QuotaExceeded } from "../records/errors.ts"
import { Ingest, type PrepareError } from "../records/Ingest.ts"
import { companionWriter } from "../records/companions.ts"
import type { SubmitError } from "../records/IngestWriter.ts"
import { type BuiltProofBundle, RecordStore } from "../records/RecordStore.ts"
import { TsaConfig } from "./config.ts"
import { TimestampNotFound, TsaDisabled } from "./errors.ts"
import { loadSigner } from "./keys.ts"
import { parseRequest } from "./request.ts"
import type { ImprintAlgorithm } from "./rfc3161.ts"
import { issue, refusal, template } from "./token.ts"

/** Serials a node takes from `timestamp_serials` at once (the sequence's INCREMENT BY). */
const SERIAL_BLOCK = 256n

export type StampError = TsaDisabled | PrepareError | QuotaExceeded | SubmitError | SqlError.SqlError | DatabaseUnavailable

export interface Stamped {
  /** The TimeStampResp, DER. */
  readonly response: Uint8Array
  /** The granted token's serial; undefined for a refusal (PKIStatus rejection). */
  readonly serial: bigint | undefined
}

interface TokenRow {
  readonly serial: bigint
  readonly accountId: string
  readonly environment: string
  readonly recordId: string
  readonly algorithm: ImprintAlgorithm
  readonly imprint: Uint8Array
  readonly genTime: Date
  readonly token: Uint8Array
}

/** The token rows of a group commit (src/records/IngestWriter.ts): a statement, or the records' statement's CTE. */
const insertTokens = (sql: SqlClient.SqlClient, rows: ReadonlyArray<TokenRow>) => {
  const text = (f: (r: TokenRow) => string) => binaryArray(rows.map(f), PgTypes.OID.text)
  return sql`
    INSERT INTO timestamp_tokens (serial, account_id, environment, record_id, hash_algorithm, message_imprint, gen_time, token)
    SELECT serial::bigint, account_id, environment, record_id, hash_algorithm, message_imprint, gen_time, token
    FROM unnest(${text((r) => String(r.serial))}::text[], ${text((r) => r.accountId)}::text[], ${text((r) => r.environment)}::text[],
                ${text((r) => r.recordId)}::text[], ${text((r) => r.algorithm)}::text[],
                ${binaryArray(rows.map((r) => r.imprint), PgTypes.OID.bytea)}::bytea[],
                ${binaryArray(rows.map((r) => r.genTime), PgTypes.OID.timestamptz)}::timestamptz[],
                ${binaryArray(rows.map((r) => r.token), PgTypes.OID.bytea)}::bytea[])
      AS u(serial, account_id, environment, record_id, hash_algorithm, message_imprint, gen_time, token)`
}

const tokenWriter = companionWriter(insertTokens)

/** A token with its record's hash and state (`lookup`). */
const TokenLookupRow = Schema.Struct({
  serial: Schema.String,
  recordId: Schema.String,
  hashAlgorithm: Schema.Literals(["sha256", "sha384", "sha512"]),
  messageImprint: Schema.Uint8Array,
  genTime: Schema.Date,
  token: Schema.Uint8Array,
  status: Schema.String,
  hash: Schema.String,
  salted: Schema.Boolean
})

/** What `GET /v1/timestamp/{serial}` answers (src/api/timestamp.ts). */
export interface TokenView {
  readonly serial: string
  readonly recordId: string
  readonly hashAlgorithm: ImprintAlgorithm
  readonly messageImprint: string
  readonly recordHash: string
  readonly genTime: string
  readonly status: string
  readonly token: string
  readonly proof: BuiltProofBundle | null
}

export class Tsa extends Context.Service<Tsa, {
  readonly enabled: boolean
  /** A DER TimeStampReq: a token (stored and its record committed) or an RFC 3161 refusal. */
  readonly stamp: (principal: Principal, request: Uint8Array) => Effect.Effect<Stamped, StampError>
  readonly lookup: (principal: Principal, serial: string) => Effect.Effect<TokenView, TsaDisabled | TimestampNotFound | SqlError.SqlError>
}>()("anchord/tsa/Tsa") {
  static readonly layer = Layer.effect(Tsa, Effect.gen(function*() {
    const settings = yield* TsaConfig
    const sql = yield* SqlClient.SqlClient
    const ingest = yield* Ingest
    const store = yield* RecordStore
    const config = yield* AppConfig
    const guard = yield* DatabaseGuard
    const clock = yield* Clock.Clock

    const findToken = SqlSchema.findOneOption({
      Request: Schema.Struct({ serial: Schema.String, accountId: Schema.String, environment: Schema.String }),
      Result: TokenLookupRow,
      execute: ({ accountId, environment, serial }) =>
        sql`
          SELECT t.serial::text AS serial, t.record_id, t.hash_algorithm, t.message_imprint, t.gen_time, t.token, st.status, r.hash, r.salted
          FROM timestamp_tokens t JOIN records r ON r.id = t.record_id ${stateJoin(sql)}
          WHERE t.serial = ${serial}::bigint AND t.account_id = ${accountId} AND t.environment = ${environment}`
    })
    const nextBlock = SqlSchema.findOne({
      Request: Schema.Void,
      Result: Schema.Struct({ first: Schema.BigIntFromString }),
      execute: () => sql`SELECT nextval('timestamp_serials')::text AS first`
    })

    const lookup = (principal: Principal, serial: string) =>
      Effect.gen(function*() {
        const found = yield* rowDefects(findToken({ serial, accountId: principal.accountId, environment: principal.environment }))
        if (Option.isNone(found)) return yield* new TimestampNotFound({ serial })
        const row = found.value
        const [proof] = row.status === "ANCHORED" ? yield* store.proofsOf([{ id: row.recordId, hash: row.hash, salted: row.salted, status: row.status }]) : []
        return {
          serial: row.serial,
          recordId: row.recordId,
          hashAlgorithm: row.hashAlgorithm,
          messageImprint: Buffer.from(row.messageImprint).toString("hex"),
          recordHash: row.hash,
          genTime: new Date(row.genTime).toISOString(),
          status: row.status,
          token: Buffer.from(row.token).toString("base64"),
          proof: proof ?? null
        } satisfies TokenView
      })

    if (Option.isNone(settings.files)) {
      const off = Effect.fail(new TsaDisabled())
      return Tsa.of({ enabled: false, stamp: () => off, lookup: () => off })
    }
    const loaded = loadSigner(settings.files.value, new Date(clock.currentTimeMillisUnsafe()))
    // `anchord start` ran doctor's checks of these files first (src/doctor/checks.ts): this is the dev path.
    if (!("signer" in loaded)) return yield* Effect.die(new Error(`TSA: ${loaded.problems.join("; ")}`))
    for (const warning of loaded.warnings) yield* Effect.logWarning(`TSA: ${warning}`)
    const signer = loaded.signer
    const t = template(signer, settings.policy, settings.accuracyMillis)

    // Serial numbers: a block of SERIAL_BLOCK from the shared sequence, handed out here; one fetch at a time.
    let next = 0n
    let end = 0n
    const fetching = yield* Semaphore.make(1)
    const timedOut = Effect.suspend(() => Effect.fail(guard.timedOut()))
    const fetchBlock: Effect.Effect<bigint, SqlError.SqlError | DatabaseUnavailable> = fetching.withPermits(1)(Effect.suspend(() => {
      if (next < end) return Effect.succeed(next++)
      return rowDefects(nextBlock()).pipe(
        Effect.timeoutOrElse({ duration: Duration.millis(config.requestDeadlineMillis), orElse: () => timedOut }),
        Effect.map(({ first }) => {
          next = first + 1n
          end = first + SERIAL_BLOCK
          return first
        })
      )
    }))
    const nextSerial = Effect.suspend(() => next < end ? Effect.succeed(next++) : fetchBlock)

    const stamp = (principal: Principal, der: Uint8Array) =>
      Effect.gen(function*() {
        const parsed = parseRequest(der, settings.policy)
        if (parsed._tag === "Refused") return { response: refusal(parsed.failure, parsed.text), serial: undefined } satisfies Stamped
        if (!guard.isUp()) return yield* guard.refuse
        const serial = yield* nextSerial
        const genTime = new Date(clock.currentTimeMillisUnsafe())
        const request = parsed.request
        const issued = issue(signer, t, request, { serial, genTime })
        // SHA-256 imprints are anchored as they are (GET /v1/proof/{sha256 of the file} finds them); a
        // longer imprint cannot be a record hash, so its token's TSTInfo (which holds it) is anchored.
        const hash = request.algorithm === "sha256"
          ? Buffer.from(request.imprint).toString("hex")
          : Crypto.hash("sha256", issued.tstInfo, "hex")
        const row = yield* ingest.prepare(principal, { _tag: "hash", body: { hash, metadata: { timestampSerial: String(serial) } } })
        yield* ingest.commit(
          principal,
          [row],
          undefined,
          tokenWriter.of({
            serial,
            accountId: principal.accountId,
            environment: principal.environment,
            recordId: row.id,
            algorithm: request.algorithm,
            imprint: request.imprint,
            genTime,
            token: issued.token
          })
        )
        return { response: issued.response, serial } satisfies Stamped
      })

    return Tsa.of({ enabled: true, stamp, lookup })
  }))
}
