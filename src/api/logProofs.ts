/**
 * A record's offline proof against its network's transparency log (docs/transparency-log.md, "Proofs against the
 * log"): C2SP tlog-proof text. Handlers: src/translog/proofHttp.ts.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { ApiKeyAuth } from "./auth.ts"
import { BadRequest, Conflict, Gone, NotFound } from "./errors.ts"
import { DatabaseBound } from "./http.ts"
import { RecordId } from "./recordSchemas.ts"

export const TlogProofText = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/plain" })).annotate({
  description: "C2SP tlog-proof (c2sp.org/tlog-proof@v1): the record hash's leaf index and inclusion proof in the network's log, " +
    "and the log's signed checkpoint; the extra line is base64 JSON naming where that checkpoint is anchored (unauthenticated: " +
    "check it on chain)."
})

export class LogProofsApi extends HttpApiGroup.make("logProofs")
  .add(
    HttpApiEndpoint.get("recordLogProof", "/records/:recordId/log-proof", {
      params: { recordId: RecordId },
      query: {
        networkId: Schema.optionalKey(
          Schema.String.annotate({ description: "The network whose log to prove in (a hybrid record has two); default: the first" })
        ),
        size: Schema.optionalKey(Schema.NumberFromString.check(Schema.isInt(), Schema.isGreaterThan(0)).annotate({
          description: "A later published checkpoint's size to prove against; default: the checkpoint anchored with the record's batch"
        }))
      },
      success: TlogProofText,
      error: [BadRequest, NotFound, Gone, Conflict]
    })
      .annotate(OpenApi.Summary, "Get a record's proof in its network's transparency log (C2SP tlog-proof)")
      .annotate(OpenApi.Description, "text/plain: the record's inclusion in the log's checkpoint anchored with its batch (or in the " +
        "published checkpoint of `size` leaves), with that checkpoint signed by the log key. 409 NOT_ANCHORED before the record is " +
        "anchored; 404 NOT_FOUND when its batch is not in a log (anchored before the log, or its checkpoint not confirmed yet), " +
        "when `size` is not a published checkpoint at or after it, or when the node has no log key.")
  )
  .middleware(DatabaseBound)
  .middleware(ApiKeyAuth)
  .prefix("/v1")
  .annotate(OpenApi.Description, "Proofs against the networks' transparency logs")
{}
