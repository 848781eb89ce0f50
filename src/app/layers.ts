/** Composes the node from its capabilities' layers. Nothing else lives here. */
import { Effect, Layer, Option } from "effect"
import { Accounts } from "../auth/Accounts.ts"
import { Admission } from "../auth/Admission.ts"
import { RateLimits } from "../auth/RateLimits.ts"
import { UsageCache } from "../auth/UsageCache.ts"
import { ConfiguredNetworks, Networks } from "../anchoring/Networks.ts"
import { AppConfig } from "../config.ts"
import { DatabaseGuard } from "../db/guard.ts"
import { DatabaseLive } from "./database.ts"
import { AnchoringLag } from "../anchoring/AnchoringLag.ts"
import { NetworkHealth } from "../anchoring/NetworkHealth.ts"
import * as EvmAnchoring from "../evm/Anchoring.ts"
import { EvmNetworks } from "../evm/config.ts"
import * as FabricAnchoring from "../fabric/Anchoring.ts"
import { FabricNetworks } from "../fabric/config.ts"
import { HttpServerLayer } from "./server.ts"
import { RecordCreation } from "../records/creation.ts"
import { Ingest } from "../records/Ingest.ts"
import { IngestWriter } from "../records/IngestWriter.ts"
import { RecordStore } from "../records/RecordStore.ts"
import { WebhookConfig } from "../webhooks/config.ts"
import { WebhookDispatcher } from "../webhooks/Dispatcher.ts"
import { WebhookStoresLayer } from "../webhooks/stores.ts"
import { WebhookEgress } from "../webhooks/urlPolicy.ts"
import { ConsoleServicesLayer } from "../console/layer.ts"
import { MetricRegistryLayer, MetricsLayer } from "./metrics.ts"
import { TracingLayer } from "../tracing/Tracing.ts"
import { TsaConfig } from "../tsa/config.ts"
import { Tsa } from "../tsa/Tsa.ts"
import { ReceiptKey } from "../receipts/key.ts"
import { CheckpointSignerLayer, LogKey } from "../translog/key.ts"

/** Services over the database (no HTTP): what the CLI's operator commands need. */
export const CoreLayer = Layer.mergeAll(Accounts.layer, RecordStore.layer, UsageCache.layer).pipe(
  Layer.provideMerge(DatabaseGuard.layer),
  Layer.provideMerge(DatabaseLive)
)

/** The configured networks (anchoring/Networks.ts): the EVM networks, and the Fabric networks when there are any. */
export const ConfiguredNetworksLayer = Layer.effect(ConfiguredNetworks, Effect.gen(function*() {
  const evm = (yield* EvmNetworks).networks
  const fabric = Option.match(yield* Effect.serviceOption(FabricNetworks), { onNone: () => [], onSome: (f) => f.networks })
  return ConfiguredNetworks.of([
    ...evm.map((n) => ({ networkId: n.networkId, chainType: "evm" as const, environment: n.environment, explorerUrl: n.explorerUrl ?? null })),
    ...fabric.map((n) => ({ networkId: n.networkId, chainType: "fabric" as const, environment: n.environment, explorerUrl: null }))
  ])
}))

/** Where new records go (anchoring/Networks.ts), from the configured networks. */
export const NetworksLayer = Networks.layer.pipe(Layer.provide(ConfiguredNetworksLayer))

/** Record creation and the time-stamp authority, over one ingest (one group-commit writer). */
const IngestServices = Layer.mergeAll(RecordCreation.layer, Tsa.layer.pipe(Layer.provideMerge(TsaConfig.layer))).pipe(
  Layer.provide(Ingest.layer),
  Layer.provide(IngestWriter.layer),
  Layer.provide(NetworksLayer)
)

const ApiServices = Layer.mergeAll(
  IngestServices,
  Admission.layer.pipe(Layer.provideMerge(RateLimits.layer)),
  WebhookStoresLayer,
  // The console's users, sessions, sign-in, statistics, and certificates (SPEC 9).
  ConsoleServicesLayer,
  // The key that signs COSE Receipts (RECEIPT_KEY_FILE, or the dev key of `anchord dev`).
  ReceiptKey.layer,
  // The key that signs the transparency logs' checkpoints (LOG_KEY_FILE, or the dev key of `anchord dev`),
  // and the LogStore's signer from it: the pipelines publish signed checkpoints, the read API serves them.
  CheckpointSignerLayer.pipe(Layer.provideMerge(LogKey.layer))
).pipe(
  // The webhook egress policy: the set-time checks (records, webhooks, console) and the dispatcher.
  Layer.provideMerge(WebhookEgress.layer)
)

/**
 * The whole node over the given EVM and Fabric networks (EVM_NETWORKS / FABRIC_NETWORKS, or the dev
 * chain and dev peer of `anchord dev`): API server, one anchoring pipeline per network (batcher,
 * chain writer, watcher / indexer: src/anchoring/Pipeline.ts), and the webhook dispatcher.
 */
export const makeNodeLayer = <E, R, E2 = Layer.Error<typeof FabricNetworks.layer>, R2 = Layer.Services<typeof FabricNetworks.layer>>(
  evmNetworks: Layer.Layer<EvmNetworks, E, R>,
  // The default's types are the defaults of E2 / R2.
  fabricNetworks: Layer.Layer<FabricNetworks, E2, R2> = FabricNetworks.layer as unknown as Layer.Layer<FabricNetworks, E2, R2>
) =>
  Layer.mergeAll(
    HttpServerLayer,
    EvmAnchoring.layer,
    FabricAnchoring.layer,
    WebhookDispatcher.pipe(Layer.provide(WebhookConfig.layer)),
    // /metrics on its own listener when METRICS_PORT is set (src/app/metrics.ts).
    MetricsLayer
  ).pipe(
    // The anchoring pipelines report their networks' states (/v1/health reads them) and their lag (the
    // webhook dispatcher yields to it).
    Layer.provideMerge(Layer.merge(NetworkHealth.layer, AnchoringLag.layer)),
    Layer.provideMerge(ApiServices),
    // The console lists them; ingest chooses among them (NetworksLayer).
    Layer.provideMerge(ConfiguredNetworksLayer),
    Layer.provideMerge(Layer.merge(evmNetworks, fabricNetworks)),
    Layer.provideMerge(CoreLayer),
    // This node's metrics registry, under everything that counts.
    Layer.provideMerge(MetricRegistryLayer),
    // Spans over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set (src/tracing/Tracing.ts); nothing otherwise.
    Layer.provide(TracingLayer)
  )

/** The node with EVM networks from EVM_NETWORKS and Fabric networks from FABRIC_NETWORKS. */
export const NodeLayer = makeNodeLayer(EvmNetworks.layer, FabricNetworks.layer)

export const withConfig = <A, E, R>(layer: Layer.Layer<A, E, R>) => layer.pipe(Layer.provideMerge(AppConfig.layer))
