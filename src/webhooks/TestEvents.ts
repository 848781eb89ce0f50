/**
 * The console's "send test event": a `webhook.test` event (src/outbox/events.ts) written to the outbox
 * with its delivery to the webhook URL of the chosen environment, whatever the webhook's subscriptions
 * and `enabled` (the point is to try the endpoint before turning it on). From there it is an ordinary
 * delivery: the dispatcher signs it with that environment's secrets, sends it at once, retries it on the ladder, logs every
 * attempt; the delivery log shows it and it can be redelivered.
 *
 * The events trigger makes deliveries only for events of records, so this inserts the delivery itself, in
 * the same transaction (its receiver by the trigger's own function, `anchord_url_host`), and wakes the
 * dispatchers after COMMIT as the trigger does.
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient, type SqlError, SqlSchema } from "effect/sql"
import { PgClient } from "@effect/sql-pg"
import { appendOne } from "../outbox/Outbox.ts"
import { WEBHOOK_CHANNEL } from "./DeliveryClaims.ts"
import { hostPortSql } from "./dispatcherSql.ts"
import { DeliveryLog, type Owner } from "./DeliveryLog.ts"
import { InvalidWebhookSettings } from "./errors.ts"
import { rowDefects } from "../db/rows.ts"
import { type DeliveryRow, Environment } from "./rows.ts"
import { WebhookSettingsStore } from "./WebhookSettingsStore.ts"

export class WebhookTests extends Context.Service<WebhookTests, {
  /** Queues a test event to the webhook URL of `owner.environment`, seen in its delivery log; its delivery. */
  readonly send: (owner: Owner) => Effect.Effect<DeliveryRow, InvalidWebhookSettings | SqlError.SqlError>
}>()("anchord/webhooks/WebhookTests") {
  static readonly layer = Layer.effect(WebhookTests, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    const settings = yield* WebhookSettingsStore
    const log = yield* DeliveryLog

    /** The test event's delivery to the environment's webhook URL, due now; its id. */
    const insertDelivery = SqlSchema.findOne({
      Request: Schema.Struct({
        eventSeq: Schema.String,
        eventId: Schema.String,
        accountId: Schema.String,
        environment: Environment,
        now: Schema.Date
      }),
      Result: Schema.Struct({ id: Schema.String }),
      execute: (d) =>
        sql`
          INSERT INTO webhook_deliveries (id, event_seq, event_id, account_id, record_id, environment, target, url, host, next_attempt_at)
          SELECT 'dlv_' || replace(gen_random_uuid()::text, '-', ''), ${d.eventSeq}::bigint, ${d.eventId}, ${d.accountId}, '',
                 ${d.environment}, 'account', s.url, ${hostPortSql(sql, sql`s.url`)}, ${d.now}
          FROM webhook_settings s WHERE s.account_id = ${d.accountId} AND s.environment = ${d.environment}
          RETURNING id`
    })

    return WebhookTests.of({
      send: Effect.fn("WebhookTests.send")(function*(owner) {
        const { url } = yield* settings.get(owner.accountId, owner.environment)
        if (url === null || url === "") {
          return yield* new InvalidWebhookSettings({ reason: `url: set the ${owner.environment} webhook's URL before sending a test event` })
        }
        const now = new Date(yield* Clock.currentTimeMillis)
        const id = yield* sql.withTransaction(Effect.gen(function*() {
          const event = yield* appendOne(sql, owner.accountId, { kind: "webhook.test", recordId: "", hash: "", environment: owner.environment })
          // Every account has its settings rows, one per environment (the accounts trigger): the insert always makes one delivery.
          const { id } = yield* insertDelivery({ eventSeq: event.seq, eventId: event.eventId, accountId: owner.accountId, environment: owner.environment, now })
            .pipe(Effect.catchTag("NoSuchElementError", Effect.die), rowDefects)
          return id
        }))
        const delivery = yield* log.get(owner, id)
        yield* pg.notify(WEBHOOK_CHANNEL, "")
        return delivery!
      })
    })
  }))
}
