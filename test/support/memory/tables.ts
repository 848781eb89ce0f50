/**
 * The in-memory stand-in for the database of the handler tests (test/handlers/): plain maps, one per
 * table the stores of test/support/memory/ read and write, shared by those stores as the tables are by
 * the SQL ones (a record ingest writes is one the record store reads). A fresh set per layer build.
 */
import { Context, Layer } from "effect"
import type { Environment } from "../../../src/api/recordSchemas.ts"
import type { Account, ApiKeyInfo } from "../../../src/auth/Accounts.ts"
import type { RecordDeleted, RecordUpdated } from "../../../src/outbox/events.ts"
import type { RecordRow } from "../../../src/records/model.ts"
import type { AttemptRow, DeliveryRow, EventKind, PayloadFormat } from "../../../src/webhooks/rows.ts"

/** `api_keys`: the listed columns and the digest the lookup finds the key by. */
export interface KeyRow extends ApiKeyInfo {
  readonly digest: Buffer
}

/** `webhook_settings`: one row per account and environment. */
export interface SettingsRow {
  url: string | null
  events: ReadonlyArray<EventKind>
  payloadFormat: PayloadFormat
  enabled: boolean
  secret: string
  previousSecret: string | null
  rotatedAt: Date | null
  deliveryMode: "single" | "batch"
  batchMaxEvents: number
  batchMaxWaitMs: number
}

/** `idempotency_keys`. */
export interface IdempotencyRow {
  readonly requestHash: string
  readonly status: number
  body: string
  readonly createdAt: Date
}

export interface Tables {
  readonly accounts: Map<string, Account>
  readonly apiKeys: Map<string, KeyRow>
  /** By record id; the row as the SQL store returns it (its state read with it). */
  readonly records: Map<string, RecordRow>
  /** By `${accountId} ${environment} ${key}`. */
  readonly idempotency: Map<string, IdempotencyRow>
  /** `usage_monthly`, by `${accountId} ${month}`. */
  readonly usage: Map<string, number>
  /** By `${accountId} ${environment}`. */
  readonly webhookSettings: Map<string, SettingsRow>
  /** The outbox, as the owner-side changes append to it. */
  readonly events: Array<{ readonly accountId: string; readonly event: RecordUpdated | RecordDeleted }>
  /** The delivery log (tests put deliveries here; nothing here makes them). */
  readonly deliveries: Array<DeliveryRow & { readonly accountId: string }>
  readonly attempts: Array<AttemptRow>
}

export const idempotencyKey = (accountId: string, environment: Environment, key: string) => `${accountId} ${environment} ${key}`
export const settingsKey = (accountId: string, environment: Environment) => `${accountId} ${environment}`

export class MemoryTables extends Context.Service<MemoryTables, Tables>()("anchord/test/MemoryTables") {
  static readonly layer = Layer.sync(MemoryTables, () =>
    MemoryTables.of({
      accounts: new Map(),
      apiKeys: new Map(),
      records: new Map(),
      idempotency: new Map(),
      usage: new Map(),
      webhookSettings: new Map(),
      events: [],
      deliveries: [],
      attempts: []
    }))
}
