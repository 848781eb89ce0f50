/** The webhooks capability's stores, as the node composes them (src/app/layers.ts). */
import { Layer } from "effect"
import { DeliveryClaims } from "./DeliveryClaims.ts"
import { DeliveryLog } from "./DeliveryLog.ts"
import { RequestLog } from "./RequestLog.ts"
import { WebhookTests } from "./TestEvents.ts"
import { WebhookSettingsStore } from "./WebhookSettingsStore.ts"

/** Settings and secrets, the delivery and request logs the API serves, the dispatcher's claims: one PostgreSQL each way. */
export const WebhookStoresLayer = WebhookTests.layer.pipe(
  // The console's test events write an event and its delivery and read it back from the log.
  Layer.provideMerge(Layer.mergeAll(WebhookSettingsStore.layer, DeliveryLog.layer, RequestLog.layer, DeliveryClaims.layer))
)
