import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { AddressLimit } from "./auth.ts"
import { Health, ok } from "./recordSchemas.ts"

/** Unauthenticated endpoints, limited by client address. */
export class SystemApi extends HttpApiGroup.make("system")
  .add(
    HttpApiEndpoint.get("health", "/health", { success: ok(Health) })
      .annotate(OpenApi.Description, "Liveness, and the state of the database and of every network as this node sees it."),
    HttpApiEndpoint.get("openapi", "/openapi.json", {
      success: Schema.Record(Schema.String, Schema.Unknown).annotate({ identifier: "OpenApiDocument" })
    }).annotate(OpenApi.Description, "This document, generated from the API definition itself.")
  )
  .middleware(AddressLimit)
  .prefix("/v1")
{}
