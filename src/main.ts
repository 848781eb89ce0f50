/** Composes the node from its capabilities' layers. Nothing else lives here. */
import { Layer } from "effect"
import { Accounts } from "./auth/Accounts.ts"
import { RateLimits } from "./auth/RateLimits.ts"
import { UsageCache } from "./auth/UsageCache.ts"
import { Networks } from "./batching/Networks.ts"
import { AppConfig } from "./config.ts"
import { DatabaseLive } from "./db/Database.ts"
import { HttpServerLayer } from "./http/server.ts"
import { Ingest } from "./records/Ingest.ts"
import { IngestWriter } from "./records/IngestWriter.ts"
import { RecordStore } from "./records/RecordStore.ts"

/** Services over the database (no HTTP): what the CLI's operator commands need. */
export const CoreLayer = Layer.mergeAll(Accounts.layer, RecordStore.layer, UsageCache.layer).pipe(
  Layer.provideMerge(DatabaseLive)
)

/** Everything the HTTP API needs. */
export const ServicesLayer = Layer.mergeAll(
  Ingest.layer.pipe(Layer.provide(IngestWriter.layer), Layer.provide(Networks.layer)),
  RateLimits.layer
).pipe(Layer.provideMerge(CoreLayer))

/** The whole node: API server plus (in later issues) batcher, chain writers and watchers, dispatcher. */
export const NodeLayer = HttpServerLayer.pipe(Layer.provideMerge(ServicesLayer))

export const withConfig = <A, E, R>(layer: Layer.Layer<A, E, R>) => layer.pipe(Layer.provideMerge(AppConfig.layer))
