/**
 * An account's webhook settings per environment (`webhook_settings`): the global webhook (url, subscribed
 * events, payload format, enabled), how deliveries go out (one by one or batched), the signing secret and its rotation
 * (SPEC 5.5, ./rotation.ts). Test and live are separate rows: a key reads and changes only its own
 * environment's, and a delivery is routed and signed with its record's. Every account has both rows
 * from its creation on (a trigger on `accounts`), so every read finds one.
 *
 * Rotation reads time through Effect's Clock (passed to the statements), not PostgreSQL's now().
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient, type SqlError, SqlSchema } from "effect/sql"
import type { Environment } from "../api/recordSchemas.ts"
import { inOverlap, overlapEnd } from "./rotation.ts"
import { rowDefects } from "../db/rows.ts"
import { DeliveryMode, Environment as EnvironmentColumn, type EventKind, PayloadFormat, WebhookSettingsRow } from "./rows.ts"

export interface SettingsPatch {
  readonly url?: string | null | undefined
  readonly events?: ReadonlyArray<EventKind> | undefined
  readonly payloadFormat?: PayloadFormat | undefined
  readonly enabled?: boolean | undefined
  readonly deliveryMode?: DeliveryMode | undefined
  readonly batchMaxEvents?: number | undefined
  readonly batchMaxWaitMs?: number | undefined
}

/** Which settings row, and the Clock's time the rotation is read at. */
const SettingsKey = Schema.Struct({ accountId: Schema.String, environment: EnvironmentColumn, now: Schema.Date })

/**
 * A patch as the statement takes it: each member with whether it was given (a member left out keeps its value;
 * `url: null` clears it), the events as one comma-joined parameter.
 */
const SettingsUpdate = Schema.Struct({
  accountId: Schema.String,
  environment: EnvironmentColumn,
  setUrl: Schema.Boolean,
  url: Schema.NullOr(Schema.String),
  setEvents: Schema.Boolean,
  events: Schema.String,
  payloadFormat: Schema.NullOr(PayloadFormat),
  enabled: Schema.NullOr(Schema.Boolean),
  deliveryMode: Schema.NullOr(DeliveryMode),
  batchMaxEvents: Schema.NullOr(Schema.Number),
  batchMaxWaitMs: Schema.NullOr(Schema.Number)
})

export class WebhookSettingsStore extends Context.Service<WebhookSettingsStore, {
  readonly get: (accountId: string, environment: Environment) => Effect.Effect<WebhookSettingsRow, SqlError.SqlError>
  /** Members left out keep their value. */
  readonly update: (accountId: string, environment: Environment, patch: SettingsPatch) => Effect.Effect<WebhookSettingsRow, SqlError.SqlError>
  /** A new secret; the current one keeps signing x-webhook-signature for the overlap. */
  readonly rotate: (accountId: string, environment: Environment) => Effect.Effect<WebhookSettingsRow, SqlError.SqlError>
  /** Ends the overlap now: the newest secret signs x-webhook-signature from the next delivery on. */
  readonly confirmRotation: (accountId: string, environment: Environment) => Effect.Effect<WebhookSettingsRow, SqlError.SqlError>
}>()("anchord/webhooks/WebhookSettingsStore") {
  static readonly layer = Layer.effect(
    WebhookSettingsStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const clockNow = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

      const findSettings = SqlSchema.findOne({
        Request: SettingsKey,
        Result: WebhookSettingsRow,
        execute: ({ accountId, environment, now }) =>
          sql`
            SELECT url, events, payload_format, enabled, secret, delivery_mode, batch_max_events, batch_max_wait_ms,
              CASE WHEN ${inOverlap(sql, now)} THEN rotated_at END AS rotation_started_at,
              CASE WHEN ${inOverlap(sql, now)} THEN ${overlapEnd(sql, sql`rotated_at`)} END AS previous_secret_expires_at
            FROM webhook_settings WHERE account_id = ${accountId} AND environment = ${environment}`
      })

      const updateSettings = SqlSchema.void({
        Request: SettingsUpdate,
        execute: (p) =>
          sql`
            UPDATE webhook_settings SET
              url = CASE WHEN ${p.setUrl} THEN ${p.url} ELSE url END,
              events = CASE WHEN ${p.setEvents} THEN string_to_array(${p.events}, ',') ELSE events END,
              payload_format = COALESCE(${p.payloadFormat}, payload_format),
              enabled = COALESCE(${p.enabled}::boolean, enabled),
              delivery_mode = COALESCE(${p.deliveryMode}, delivery_mode),
              batch_max_events = COALESCE(${p.batchMaxEvents}::integer, batch_max_events),
              batch_max_wait_ms = COALESCE(${p.batchMaxWaitMs}::integer, batch_max_wait_ms)
            WHERE account_id = ${p.accountId} AND environment = ${p.environment}`
      })

      // Inside an unconfirmed overlap the signing (previous) secret stays and the pending one is replaced;
      // the overlap is not extended. The new secret comes from the one generator (`anchord_webhook_secret()`).
      const rotateSecret = SqlSchema.void({
        Request: SettingsKey,
        execute: ({ accountId, environment, now }) =>
          sql`
            UPDATE webhook_settings SET
              previous_secret = CASE WHEN ${inOverlap(sql, now)} THEN previous_secret ELSE secret END,
              rotated_at = CASE WHEN ${inOverlap(sql, now)} THEN rotated_at ELSE ${now}::timestamptz END,
              secret = anchord_webhook_secret()
            WHERE account_id = ${accountId} AND environment = ${environment}`
      })

      const endOverlap = SqlSchema.void({
        Request: Schema.Struct({ accountId: Schema.String, environment: EnvironmentColumn }),
        execute: ({ accountId, environment }) =>
          sql`
            UPDATE webhook_settings SET previous_secret = NULL, rotated_at = NULL
            WHERE account_id = ${accountId} AND environment = ${environment}`
      })

      const get = Effect.fn("WebhookSettingsStore.get")(function*(accountId: string, environment: Environment) {
        const now = yield* clockNow
        return yield* findSettings({ accountId, environment, now }).pipe(
          // Every account has its rows, one per environment (the accounts trigger): none means no such account, which a caller
          // holding an authenticated principal cannot have.
          Effect.catchTag("NoSuchElementError", () => Effect.die(new Error(`webhook settings of account ${accountId} (${environment}) missing`))),
          rowDefects
        )
      })

      return WebhookSettingsStore.of({
        get,

        update: Effect.fn("WebhookSettingsStore.update")(function*(accountId, environment, patch) {
          yield* rowDefects(updateSettings({
            accountId,
            environment,
            setUrl: patch.url !== undefined,
            url: patch.url ?? null,
            setEvents: patch.events !== undefined,
            events: (patch.events ?? []).join(","),
            payloadFormat: patch.payloadFormat ?? null,
            enabled: patch.enabled ?? null,
            deliveryMode: patch.deliveryMode ?? null,
            batchMaxEvents: patch.batchMaxEvents ?? null,
            batchMaxWaitMs: patch.batchMaxWaitMs ?? null
          }))
          return yield* get(accountId, environment)
        }),

        rotate: Effect.fn("WebhookSettingsStore.rotate")(function*(accountId, environment) {
          const now = yield* clockNow
          yield* rowDefects(rotateSecret({ accountId, environment, now }))
          return yield* get(accountId, environment)
        }),

        confirmRotation: Effect.fn("WebhookSettingsStore.confirmRotation")(function*(accountId, environment) {
          yield* rowDefects(endOverlap({ accountId, environment }))
          return yield* get(accountId, environment)
        })
      })
    })
  )
}
