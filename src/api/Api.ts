/** The whole HTTP API definition: imported by the server and by the typed client alike. */
import { HttpApi, OpenApi } from "effect/http-api"
import { VERSION } from "../version.ts"
import { CertificatesApi } from "./certificates.ts"
import { ConsoleAuthApi, ConsoleSessionApi } from "./console.ts"
import { ConsoleAccountsApi, ConsoleMembersApi, ConsoleOperatorsApi, ConsoleRecordsApi, ConsoleWebhooksApi } from "./consoleAreas.ts"
import { ErrorEnvelope } from "./http.ts"
import { jsonBodiesInOpenApi } from "./jsonBody.ts"
import { LogProofsApi } from "./logProofs.ts"
import { wireInOpenApi } from "./openapiWire.ts"
import { ReceiptKeysApi, ReceiptsApi } from "./receipts.ts"
import { RecordsApi } from "./records.ts"
import { SystemApi } from "./system.ts"
import { TimestampApi, TsaShortApi } from "./timestamp.ts"
import { VerifyApi } from "./verify.ts"
import { WebhooksApi } from "./webhooks.ts"

export class Api extends HttpApi.make("anchord")
  .add(RecordsApi)
  .add(SystemApi)
  .add(WebhooksApi)
  .add(VerifyApi)
  .add(CertificatesApi)
  .add(ConsoleAuthApi)
  .add(ConsoleSessionApi)
  .add(ConsoleOperatorsApi)
  .add(ConsoleAccountsApi)
  .add(ConsoleWebhooksApi)
  .add(ConsoleRecordsApi)
  .add(ConsoleMembersApi)
  .add(TimestampApi)
  .add(TsaShortApi)
  .add(ReceiptsApi)
  .add(ReceiptKeysApi)
  .add(LogProofsApi)
  .middleware(ErrorEnvelope)
  .annotateMerge(OpenApi.annotations({
    title: "anchord",
    // The package's version (the API's own version is its /v1 path).
    version: VERSION,
    description: "Record anchoring node: JSON records hashed with RFC 8785 JCS + SHA-256, anchored on EVM and Fabric. " +
      "Every /v1 response carries X-RateLimit-*; authenticated ones X-Quota-*. A path that exists with another method " +
      "answers 405 METHOD_NOT_ALLOWED with Allow; an unknown path 404 NOT_FOUND (docs/api.md).",
    license: { name: "Apache-2.0", url: "https://www.apache.org/licenses/LICENSE-2.0" },
    // Relative: the node that serves this document (it is at /v1/openapi.json, the paths start with /v1).
    // The served document replaces the second entry with the serving node's public URL (src/system/http.ts).
    servers: [
      { url: "/", description: "This node" },
      { url: "http://127.0.0.1:8080", description: "A node started with `npm start` (anchord dev)" }
    ]
  }))
  .annotate(OpenApi.Transform, (spec) => wireInOpenApi(jsonBodiesInOpenApi(spec)))
{}
