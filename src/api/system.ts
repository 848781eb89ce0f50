import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Health, ok } from "./recordSchemas.ts"

/** Unauthenticated endpoints. `/v1/openapi.json` is served by HttpApiBuilder from the definition. */
export class SystemApi extends HttpApiGroup.make("system")
  .add(HttpApiEndpoint.get("health", "/health", { success: ok(Health) }))
  .prefix("/v1")
{}
