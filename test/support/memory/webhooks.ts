/**
 * The webhooks API's stores in memory: settings and secrets (src/webhooks/WebhookSettingsStore.ts) and the
 * delivery log (src/webhooks/DeliveryLog.ts), behind the same service tags and interfaces. The rotation
 * overlap reads the Clock as the SQL store does (./rotation.ts's rule). Deliveries are only what a test
 * puts in the table: nothing dispatches here.
 */
import * as Crypto from "node:crypto"
import { Clock, Effect, Layer } from "effect"
import type { Environment } from "../../../src/api/recordSchemas.ts"
import { DeliveryLog } from "../../../src/webhooks/DeliveryLog.ts"
import { RequestLog } from "../../../src/webhooks/RequestLog.ts"
import type { WebhookSettingsRow } from "../../../src/webhooks/rows.ts"
import { WebhookSettingsStore } from "../../../src/webhooks/WebhookSettingsStore.ts"
import { MemoryTables, type SettingsRow, settingsKey } from "./tables.ts"

/** The overlap of ./rotation.ts's ROTATION_OVERLAP_SQL (24 h). */
const OVERLAP_MS = 24 * 60 * 60 * 1000

/** `whsec_` + 32 random bytes in base64 without `+` or `/` (as `anchord_webhook_secret()` draws them). */
export const newSecret = (): string => {
  for (;;) {
    const body = Crypto.randomBytes(32).toString("base64").replace(/=+$/, "")
    if (!/[+/]/.test(body)) return `whsec_${body}`
  }
}

export const WebhookSettingsStoreMemory = Layer.effect(
  WebhookSettingsStore,
  Effect.gen(function*() {
    const tables = yield* MemoryTables
    const clock = yield* Clock.Clock

    const inOverlap = (row: SettingsRow, now: number) => row.previousSecret !== null && row.rotatedAt !== null && row.rotatedAt.getTime() > now - OVERLAP_MS
    const row = (accountId: string, environment: Environment) => {
      const found = tables.webhookSettings.get(settingsKey(accountId, environment))
      // As the SQL store: every account has both rows, so none is a defect.
      if (found === undefined) throw new Error(`webhook settings of account ${accountId} (${environment}) missing`)
      return found
    }
    const view = (accountId: string, environment: Environment): WebhookSettingsRow => {
      const r = row(accountId, environment)
      const overlap = inOverlap(r, clock.currentTimeMillisUnsafe())
      return {
        url: r.url,
        events: r.events,
        payloadFormat: r.payloadFormat,
        enabled: r.enabled,
        secret: r.secret,
        rotationStartedAt: overlap ? r.rotatedAt : null,
        previousSecretExpiresAt: overlap ? new Date(r.rotatedAt!.getTime() + OVERLAP_MS) : null,
        deliveryMode: r.deliveryMode,
        batchMaxEvents: r.batchMaxEvents,
        batchMaxWaitMs: r.batchMaxWaitMs
      }
    }

    return WebhookSettingsStore.of({
      get: (accountId, environment) => Effect.sync(() => view(accountId, environment)),
      update: (accountId, environment, patch) =>
        Effect.sync(() => {
          const r = row(accountId, environment)
          if (patch.url !== undefined) r.url = patch.url
          if (patch.events !== undefined) r.events = [...patch.events]
          if (patch.payloadFormat !== undefined) r.payloadFormat = patch.payloadFormat
          if (patch.enabled !== undefined) r.enabled = patch.enabled
          if (patch.deliveryMode !== undefined) r.deliveryMode = patch.deliveryMode
          if (patch.batchMaxEvents !== undefined) r.batchMaxEvents = patch.batchMaxEvents
          if (patch.batchMaxWaitMs !== undefined) r.batchMaxWaitMs = patch.batchMaxWaitMs
          return view(accountId, environment)
        }),
      rotate: (accountId, environment) =>
        Effect.sync(() => {
          const r = row(accountId, environment)
          const now = clock.currentTimeMillisUnsafe()
          // Inside an unconfirmed overlap the signing (previous) secret stays and the pending one is replaced.
          if (!inOverlap(r, now)) {
            r.previousSecret = r.secret
            r.rotatedAt = new Date(now)
          }
          r.secret = newSecret()
          return view(accountId, environment)
        }),
      confirmRotation: (accountId, environment) =>
        Effect.sync(() => {
          const r = row(accountId, environment)
          r.previousSecret = null
          r.rotatedAt = null
          return view(accountId, environment)
        })
    })
  })
)

export const DeliveryLogMemory = Layer.effect(
  DeliveryLog,
  Effect.gen(function*() {
    const tables = yield* MemoryTables
    const clock = yield* Clock.Clock
    const owned = (owner: { readonly accountId: string; readonly environment: Environment }) =>
      tables.deliveries.filter((d) => d.accountId === owner.accountId && d.environment === owner.environment)
    const find = (owner: { readonly accountId: string; readonly environment: Environment }, id: string) => owned(owner).find((d) => d.id === id)
    const strip = <D extends { readonly accountId: string }>({ accountId: _accountId, ...row }: D) => row

    return DeliveryLog.of({
      list: (owner, o) =>
        Effect.sync(() =>
          owned(owner)
            .filter((d) =>
              (o.before === undefined || BigInt(d.seq) < BigInt(o.before)) &&
              (o.state === undefined || d.state === o.state) &&
              (o.recordId === undefined || d.recordId === o.recordId) &&
              (o.eventId === undefined || d.eventId === o.eventId)
            )
            .sort((a, b) => (BigInt(a.seq) < BigInt(b.seq) ? 1 : -1))
            .slice(0, o.limit)
            .map(strip)
        ),
      get: (owner, id) =>
        Effect.sync(() => {
          const found = find(owner, id)
          return found === undefined ? undefined : strip(found)
        }),
      attemptsOf: (seqs) => Effect.sync(() => tables.attempts.filter((a) => seqs.includes(a.deliverySeq))),
      redeliver: (owner, id) =>
        Effect.sync(() => {
          const found = find(owner, id)
          if (found === undefined) return undefined
          const requeued = { ...found, state: "PENDING" as const, round: found.round + 1, attempts: 0,
            nextAttemptAt: new Date(clock.currentTimeMillisUnsafe()) }
          tables.deliveries[tables.deliveries.indexOf(found)] = requeued
          return strip(requeued)
        }),
      purgeFinished: () => Effect.succeed(0)
    })
  })
)

/** The request log, empty: the in-memory API sends nothing (batched requests are tested over PostgreSQL). */
export const RequestLogMemory = Layer.succeed(RequestLog, RequestLog.of({
  record: () => Effect.void,
  list: () => Effect.succeed([]),
  attemptsOf: () => Effect.succeed([]),
  purge: () => Effect.succeed(0)
}))
