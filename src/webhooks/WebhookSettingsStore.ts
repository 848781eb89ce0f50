/**
 * An account's webhook settings per environment (`webhook_settings`, migrations 0007 and 0013): the
 * global webhook (url, subscribed events, payload format, enabled), the signing secret and its rotation
 * (SPEC 5.5, ./rotation.ts). Test and live are separate rows: a key reads and changes only its own
 * environment's, and a delivery is routed and signed with its record's. Every account has both rows
 * from its creation on (a trigger on `accounts`), so every read finds one.
 *
 * Rotation reads time through Effect's Clock (passed to the statements), not PostgreSQL's now().
 */
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import type { Environment } from "../api/recordSchemas.ts"
import { inOverlap, ROTATION_OVERLAP_SQL } from "./rotation.ts"
import { decodeRows, type EventKind, type PayloadFormat, WebhookSettingsRow } from "./rows.ts"

export interface SettingsPatch {
  readonly url?: string | null | undefined
  readonly events?: ReadonlyArray<EventKind> | undefined
  readonly payloadFormat?: PayloadFormat | undefined
  readonly enabled?: boolean | undefined
}

const settingsColumns = (now: string) => `
  url, events, payload_format, enabled, secret,
  CASE WHEN ${inOverlap(now)} THEN rotated_at END AS rotation_started_at,
  CASE WHEN ${inOverlap(now)} THEN rotated_at + ${ROTATION_OVERLAP_SQL} END AS previous_secret_expires_at`

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
      const decode = decodeRows(WebhookSettingsRow)
      const clockNow = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

      const get = Effect.fn("WebhookSettingsStore.get")(function*(accountId: string, environment: Environment) {
        const now = yield* clockNow
        const rows = yield* sql.unsafe(
          `SELECT ${settingsColumns("$3")} FROM webhook_settings WHERE account_id = $1 AND environment = $2`,
          [accountId, environment, now]
        )
        // Every account has its rows (migrations 0007, 0013): none means no such account, which a caller
        // holding an authenticated principal cannot have.
        const [row] = yield* decode(rows)
        if (row === undefined) return yield* Effect.die(new Error(`webhook settings of account ${accountId} (${environment}) missing`))
        return row
      })

      return WebhookSettingsStore.of({
        get,

        update: Effect.fn("WebhookSettingsStore.update")(function*(accountId, environment, patch) {
          yield* sql.unsafe(`
            UPDATE webhook_settings SET
              url = CASE WHEN $2 THEN $3 ELSE url END,
              events = CASE WHEN $4 THEN string_to_array($5, ',') ELSE events END,
              payload_format = COALESCE($6, payload_format),
              enabled = COALESCE($7::boolean, enabled)
            WHERE account_id = $1 AND environment = $8`, [
            accountId,
            patch.url !== undefined,
            patch.url ?? null,
            patch.events !== undefined,
            (patch.events ?? []).join(","),
            patch.payloadFormat ?? null,
            patch.enabled ?? null,
            environment
          ])
          return yield* get(accountId, environment)
        }),

        rotate: Effect.fn("WebhookSettingsStore.rotate")(function*(accountId, environment) {
          // Inside an unconfirmed overlap the signing (previous) secret stays and the pending one is replaced;
          // the overlap is not extended. The new secret comes from the one generator (migration 0007).
          const now = yield* clockNow
          yield* sql.unsafe(`
            UPDATE webhook_settings SET
              previous_secret = CASE WHEN ${inOverlap("$2")} THEN previous_secret ELSE secret END,
              rotated_at = CASE WHEN ${inOverlap("$2")} THEN rotated_at ELSE $2::timestamptz END,
              secret = anchord_webhook_secret()
            WHERE account_id = $1 AND environment = $3`, [accountId, now, environment])
          return yield* get(accountId, environment)
        }),

        confirmRotation: Effect.fn("WebhookSettingsStore.confirmRotation")(function*(accountId, environment) {
          yield* sql`
            UPDATE webhook_settings SET previous_secret = NULL, rotated_at = NULL
            WHERE account_id = ${accountId} AND environment = ${environment}`
          return yield* get(accountId, environment)
        })
      })
    })
  )
}
