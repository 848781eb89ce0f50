import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { AddressLimit } from "./auth.ts"
import { Health, JsonObject, ok } from "./recordSchemas.ts"

/** Unauthenticated endpoints, limited by client address. */
export class SystemApi extends HttpApiGroup.make("system")
  .add(
    HttpApiEndpoint.get("health", "/health", { success: ok(Health) })
      .annotate(OpenApi.Summary, "Liveness and dependencies")
      .annotate(OpenApi.Description, "Liveness, and the state of the database and of every network as this node sees it."),
    HttpApiEndpoint.get("openapi", "/openapi.json", {
      headers: {
        "if-none-match": Schema.optionalKey(Schema.String.annotate({ description: "The ETag of a copy the client has: 304 when it is current" }))
      },
      success: [
        JsonObject.annotate({ identifier: "OpenApiDocument", description: "This document (ETag, Cache-Control: no-cache)" }),
        HttpApiSchema.Empty(304).annotate({ description: "Not modified: the copy named by If-None-Match is current" })
      ]
    }).annotate(OpenApi.Summary, "This OpenAPI document")
      .annotate(OpenApi.Description, "This document, generated from the API definition itself.")
  )
  .middleware(AddressLimit)
  .prefix("/v1")
  .annotate(OpenApi.Description, "Health and this document; no API key (counted by client address)")
{}
