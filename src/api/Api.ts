/** The whole HTTP API definition: imported by the server and by the typed client alike. */
import { HttpApi, OpenApi } from "effect/http-api"
import { CertificatesApi } from "./certificates.ts"
import { ConsoleApi, ConsoleAuthApi } from "./console.ts"
import { ErrorEnvelope } from "./http.ts"
import { jsonBodiesInOpenApi } from "./jsonBody.ts"
import { RecordsApi } from "./records.ts"
import { SystemApi } from "./system.ts"
import { VerifyApi } from "./verify.ts"
import { WebhooksApi } from "./webhooks.ts"

export class Api extends HttpApi.make("anchord")
  .add(RecordsApi)
  .add(SystemApi)
  .add(WebhooksApi)
  .add(VerifyApi)
  .add(CertificatesApi)
  .add(ConsoleAuthApi)
  .add(ConsoleApi)
  .middleware(ErrorEnvelope)
  .annotateMerge(OpenApi.annotations({
    title: "anchord",
    version: "1",
    description: "Record anchoring node: JSON records hashed with RFC 8785 JCS + SHA-256, anchored on EVM and Fabric."
  }))
  .annotate(OpenApi.Transform, jsonBodiesInOpenApi)
{}
