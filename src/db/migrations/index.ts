import init from "./0001_init.ts"
import anchoring from "./0002_anchoring.ts"
import webhooks from "./0003_webhooks.ts"
import fabric from "./0004_fabric.ts"
import ingestChecks from "./0005_ingest_checks.ts"
import failedAnchors from "./0006_failed_anchors.ts"
import webhookSettings from "./0007_webhook_settings.ts"
import collection from "./0008_collection.ts"
import console_ from "./0009_console.ts"
import eventsByRecord from "./0010_events_by_record.ts"
import webhookFanout from "./0011_webhook_fanout.ts"
import batchEvents from "./0012_batch_events.ts"
import webhookEnvironments from "./0013_webhook_environments.ts"
import consoleHardening from "./0014_console_hardening.ts"
import erasureAndSalted from "./0015_erasure_and_salted.ts"
import recordState from "./0016_record_state.ts"
import deliveryChunks from "./0017_delivery_chunks.ts"
import timestampTokens from "./0018_timestamp_tokens.ts"
import anchorConfirmedFromBatch from "./0019_anchor_confirmed_from_batch.ts"
import batchInsertXid from "./0020_batch_insert_xid.ts"
import logTree from "./0022_log_tree.ts"
import chunkDeliveries from "./0023_chunk_deliveries.ts"
import rulesInOnePlace from "./0024_rules_in_one_place.ts"
import batchTreeLevels from "./0025_batch_tree_levels.ts"
import batchedWebhooks from "./0026_batched_webhooks.ts"
import webhookRequests from "./0027_webhook_requests.ts"
import transparencyLog from "./0028_transparency_log.ts"

/** Versioned migrations, applied in order by `anchord migrate` and at every start. */
export const migrations = {
  "0001_init": init,
  "0002_anchoring": anchoring,
  "0003_webhooks": webhooks,
  "0004_fabric": fabric,
  "0005_ingest_checks": ingestChecks,
  "0006_failed_anchors": failedAnchors,
  "0007_webhook_settings": webhookSettings,
  "0008_collection": collection,
  "0009_console": console_,
  "0010_events_by_record": eventsByRecord,
  "0011_webhook_fanout": webhookFanout,
  "0012_batch_events": batchEvents,
  "0013_webhook_environments": webhookEnvironments,
  "0014_console_hardening": consoleHardening,
  "0015_erasure_and_salted": erasureAndSalted,
  "0016_record_state": recordState,
  "0017_delivery_chunks": deliveryChunks,
  "0018_timestamp_tokens": timestampTokens,
  "0019_anchor_confirmed_from_batch": anchorConfirmedFromBatch,
  "0020_batch_insert_xid": batchInsertXid,
  "0022_log_tree": logTree,
  "0023_chunk_deliveries": chunkDeliveries,
  "0024_rules_in_one_place": rulesInOnePlace,
  "0025_batch_tree_levels": batchTreeLevels,
  "0026_batched_webhooks": batchedWebhooks,
  "0027_webhook_requests": webhookRequests,
  "0028_transparency_log": transparencyLog
}
