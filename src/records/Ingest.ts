/**
 * Turns validated submissions into records: canonical JSON + hash, encryption, package mode,
 * network choice, webhook URL policy; then commits them through the group-commit writer.
 */
import * as Crypto from "node:crypto"
import { Clock, Context, Effect, Layer } from "effect"
import { decodeWith } from "../http/decode.ts"
import type { Principal } from "../api/auth.ts"
import { nextMonthStart } from "../auth/plans.ts"
import { UsageCache } from "../auth/UsageCache.ts"
import { Networks } from "../anchoring/Networks.ts"
import { batchQueue } from "../anchoring/batchQueue.ts"
import { SqlClient } from "effect/sql"
import { InvalidWebhookUrl } from "../webhooks/errors.ts"
import { ChainNotConfigured, InvalidEncryptionKey, InvalidRecord, QuotaExceeded } from "./errors.ts"
import { WebhookEgress } from "../webhooks/urlPolicy.ts"
import { canonicalize, canonicalizeParsedPlain } from "../canonical/jcs.ts"
import { commitSalted, isValidEncryptionKey, seal } from "./encryption.ts"
import { newRecordId } from "./ids.ts"
import type { Companion } from "./companions.ts"
import type { NewRecord } from "./insertRecords.ts"
import { IngestWriter, type SubmitError } from "./IngestWriter.ts"
import { AnchorBody, COLLECTION_PATTERN, EncryptedAnchorBody, HASH_SCHEMES, HashAnchorBody, holdsNul } from "../api/recordSchemas.ts"

/** One-shot crypto.hash: no Hash object per call (this runs for every record). */
export const sha256Hex = (text: string): string => Crypto.hash("sha256", text, "hex")

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

/**
 * plainStrings: the body was parsed from a text without a backslash, so its data can be
 * canonicalized without escaping checks (canonicalizeParsedPlain).
 */
type Kind =
  | { readonly _tag: "data"; readonly body: AnchorBody; readonly plainStrings?: boolean }
  | { readonly _tag: "encrypted"; readonly body: EncryptedAnchorBody; readonly plainStrings?: boolean }
  | { readonly _tag: "hash"; readonly body: HashAnchorBody; readonly plainStrings?: boolean }

/** A validated submission, as `prepare` takes it. */
export type Submission = Kind
export type SubmissionKind = Kind["_tag"]

const SCHEMAS = { data: AnchorBody, encrypted: EncryptedAnchorBody, hash: HashAnchorBody } as const
const FIELDS: Record<SubmissionKind, ReadonlySet<string>> = {
  data: new Set(["data", "webhookUrl", "chain", "packageMode", "metadata", "collection"]),
  encrypted: new Set(["data", "webhookUrl", "chain", "packageMode", "metadata", "collection", "encryptionKey", "hashScheme"]),
  hash: new Set(["hash", "webhookUrl", "chain", "metadata", "collection"])
}
const CHAINS: ReadonlySet<unknown> = new Set(["evm", "fabric", "hybrid"])
const PACKAGE_MODES: ReadonlySet<unknown> = new Set(["SEPARATED", "IN_PLACE", "MANAGED"])
const HASH = /^[0-9a-fA-F]{64}$/

/**
 * What the request schema accepts, checked by hand for the common case: every member known and of
 * the right type. It only ever accepts what the schema accepts (test/records/submission.test.ts);
 * anything else goes through the schema, which decides and names the field.
 */
const plainlyValid = (kind: SubmissionKind, body: unknown): boolean => {
  if (!isPlainObject(body)) return false
  const fields = FIELDS[kind]
  for (const name in body) if (!fields.has(name)) return false
  if (kind === "hash" ? !(typeof body.hash === "string" && HASH.test(body.hash)) : !isPlainObject(body.data)) return false
  if (kind === "encrypted" && (typeof body.encryptionKey !== "string" || (body.hashScheme !== undefined && !HASH_SCHEMES.has(body.hashScheme)))) return false
  return (body.webhookUrl === undefined || typeof body.webhookUrl === "string") &&
    (body.chain === undefined || CHAINS.has(body.chain)) &&
    (body.packageMode === undefined || PACKAGE_MODES.has(body.packageMode)) &&
    (body.metadata === undefined || isPlainObject(body.metadata) && !holdsNul(body.metadata)) &&
    (body.collection === undefined || typeof body.collection === "string" && COLLECTION_PATTERN.test(body.collection))
}

/**
 * A request body as a submission of the given kind, or the 400 naming what is wrong. plainStrings:
 * the body was parsed from a text without a backslash (see Kind).
 */
export const decodeSubmission = (
  kind: SubmissionKind,
  body: unknown,
  where = "",
  plainStrings = false
): { readonly _tag: "Valid"; readonly submission: Kind } | { readonly _tag: "Invalid"; readonly error: InvalidRecord } => {
  const decoded = plainlyValid(kind, body) ? { ok: true as const, value: body } : decodeWith(SCHEMAS[kind] as typeof AnchorBody, body, where)
  if (!decoded.ok) return { _tag: "Invalid", error: new InvalidRecord({ reason: decoded.message }) }
  const submission = plainStrings ? { _tag: kind, body: decoded.value, plainStrings } : { _tag: kind, body: decoded.value }
  return { _tag: "Valid", submission: submission as Kind }
}

/** Why a submission cannot become a record (its item fails alone in a batch). */
export type PrepareError = InvalidRecord | InvalidEncryptionKey | InvalidWebhookUrl | ChainNotConfigured

const COMMITTED = Effect.succeed("committed" as const)
const KEY_TAKEN = Effect.succeed("idempotency-key-taken" as const)

export class Ingest extends Context.Service<Ingest, {
  /** Validates one submission and builds its row (nothing is written). */
  readonly prepare: (principal: Principal, kind: Kind, where?: string) => Effect.Effect<NewRecord, PrepareError>
  /** Commits rows (group commit); 429 QUOTA_EXCEEDED when the month's quota would be passed. */
  readonly commit: (principal: Principal, rows: ReadonlyArray<NewRecord>, idempotency?: {
    readonly key: string
    readonly requestHash: string
    readonly status: number
    readonly body: string
  }, companion?: Companion) => Effect.Effect<"committed" | "idempotency-key-taken", QuotaExceeded | SubmitError>
}>()("anchord/records/Ingest") {
  static readonly layer = Layer.effect(
    Ingest,
    Effect.gen(function*() {
      const writer = yield* IngestWriter
      const networks = yield* Networks
      // Every network this node's ingest assigns has a queue cursor (a record's state reads it, migration
      // 0016), served by a batcher or not. Best effort: a batcher makes its own at its first look.
      const queue = batchQueue(yield* SqlClient.SqlClient)
      for (const environment of ["test", "live"] as const) {
        yield* Effect.ignore(Effect.andThen(
          queue.ensureCursor(networks.choose(environment, "evm").networkId),
          queue.ensureCursor(networks.choose(environment, "fabric").networkId, environment)
        ).pipe(Effect.timeout("10 seconds")))
      }
      const usage = yield* UsageCache
      const egress = yield* WebhookEgress
      // The record's createdAt (and the batch window counted from it) on the node's Clock, read
      // without an effect step: this runs for every record.
      const clock = yield* Clock.Clock
      /** The row of a validated submission (synchronous: canonical text, hash, encryption, network). */
      const build = (principal: Principal, kind: Kind, where: string): Effect.Effect<NewRecord, PrepareError> => {
        const body = kind.body
        const chain = body.chain ?? principal.defaultChain
        if (!networks.anchorable(principal.environment, chain)) {
          const needs = chain === "hybrid" ? (["evm", "fabric"] as const) : [chain]
          const missing = needs.filter((c) => !networks.anchorable(principal.environment, c))
          return Effect.fail(new ChainNotConfigured({ chain, environment: principal.environment, missing }))
        }
        const now = new Date(clock.currentTimeMillisUnsafe())
        const base = {
          id: newRecordId(now.getTime()),
          accountId: principal.accountId,
          environment: principal.environment,
          chainType: chain,
          networkId: networks.choose(principal.environment, chain).networkId,
          metadata: body.metadata ?? {},
          webhookUrl: body.webhookUrl ?? null,
          collection: body.collection ?? null,
          createdAt: now,
          updatedAt: now,
          ciphertext: null,
          nonce: null,
          authTag: null,
          salted: false
        }
        switch (kind._tag) {
          case "hash":
            return Effect.succeed({
              ...base,
              hash: kind.body.hash.toLowerCase(),
              packageMode: "SEPARATED",
              source: "hash",
              dataJcs: null
            } satisfies NewRecord)
          case "data": {
            const jcs = kind.plainStrings === true ? canonicalizeParsedPlain(kind.body.data) : canonicalize(kind.body.data)
            const packageMode = kind.body.packageMode ?? "MANAGED"
            return Effect.succeed({
              ...base,
              hash: sha256Hex(jcs),
              packageMode,
              source: "data",
              dataJcs: packageMode === "SEPARATED" ? null : jcs
            } satisfies NewRecord)
          }
          case "encrypted": {
            if (!isValidEncryptionKey(kind.body.encryptionKey)) {
              return Effect.fail(new InvalidEncryptionKey({ reason: `${where}encryptionKey must be exactly 32 printable ASCII characters` }))
            }
            const jcs = kind.plainStrings === true ? canonicalizeParsedPlain(kind.body.data) : canonicalize(kind.body.data)
            const packageMode = kind.body.packageMode ?? "MANAGED"
            // Salted unless asked otherwise: the sealed text is the committed JSON, so the salt is in the ciphertext.
            const salted = kind.body.hashScheme !== "jcs-sha256"
            const commitment = salted ? commitSalted(jcs) : { salt: undefined, committed: jcs }
            const sealed = packageMode === "SEPARATED" ? undefined : seal(kind.body.encryptionKey, commitment.committed)
            return Effect.succeed({
              ...base,
              hash: sha256Hex(commitment.committed),
              packageMode,
              source: "encrypted",
              dataJcs: null,
              ciphertext: sealed?.ciphertext ?? null,
              nonce: sealed?.nonce ?? null,
              authTag: sealed?.tag ?? null,
              salted,
              salt: commitment.salt
            } satisfies NewRecord)
          }
        }
      }

      return Ingest.of({
        prepare: (principal, kind, where = "") => {
          const body = kind.body
          if ("data" in body && !isPlainObject(body.data)) {
            return Effect.fail(new InvalidRecord({ reason: `${where}data: must be a JSON object` }))
          }
          // IN_PLACE lookups embed the proof bundle as data._anchor (SPEC 3.2): the name is reserved there.
          if ("packageMode" in body && body.packageMode === "IN_PLACE" && "data" in body && Object.hasOwn(body.data as object, "_anchor")) {
            return Effect.fail(new InvalidRecord({ reason: `${where}data._anchor: reserved in IN_PLACE mode (the proof bundle goes there)` }))
          }
          if (body.metadata !== undefined && !isPlainObject(body.metadata)) {
            return Effect.fail(new InvalidRecord({ reason: `${where}metadata: must be a JSON object` }))
          }
          if (body.webhookUrl === undefined) return build(principal, kind, where)
          return Effect.flatMap(
            egress.check(body.webhookUrl, principal.environment),
            (verdict) => verdict.ok ? build(principal, kind, where) : Effect.fail(new InvalidWebhookUrl({ reason: `${where}${verdict.reason}` }))
          )
        },
        commit: (principal, rows, idempotency, companion) =>
          Effect.flatMap(
            writer.submit({
              accountId: principal.accountId,
              environment: principal.environment,
              monthlyQuota: principal.monthlyQuota,
              rows,
              idempotency,
              companion
            }),
            (outcome): Effect.Effect<"committed" | "idempotency-key-taken", QuotaExceeded> => {
              switch (outcome._tag) {
                case "Committed":
                  usage.observe(principal.accountId, outcome.usedAfter)
                  return COMMITTED
                case "IdempotencyKeyTaken":
                  return KEY_TAKEN
                case "QuotaExceeded":
                  return Effect.fail(new QuotaExceeded({
                    used: outcome.used,
                    quota: principal.monthlyQuota ?? 0,
                    requested: rows.length,
                    retryAfterSeconds: Math.max(1,
                      Math.ceil((nextMonthStart(new Date(clock.currentTimeMillisUnsafe())).getTime() - clock.currentTimeMillisUnsafe()) / 1000))
                  }))
              }
            }
          )
      })
    })
  )
}
