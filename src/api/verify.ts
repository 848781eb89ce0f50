/** `POST /v1/verify` (SPEC 3): the node checks a record against the chains for clients who trust it. Definitions only. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { KeyOrAddress } from "./auth.ts"
import { BadRequest, TooManyRequestsSchema, Unauthorized } from "./errors.ts"
import { DatabaseBound, JsonBodyFraming, RequestDeadline } from "./http.ts"
import { JsonBody } from "./jsonBody.ts"
import { DateTimeString, Hash64, JsonObject, ok } from "./recordSchemas.ts"

export const VerifyBody = Schema.Struct({
  data: Schema.optionalKey(JsonObject),
  hash: Schema.optionalKey(Hash64),
  bundle: Schema.optionalKey(JsonObject)
}).annotate({
  identifier: "VerifyRequest",
  description: "data (hashed with JCS + SHA-256) or hash; optionally a proof bundle (or IN_PLACE document). " +
    "Without a bundle, the caller's anchored records with that hash are checked."
})
export type VerifyBody = typeof VerifyBody.Type

const CheckStatus = Schema.Literals(["pass", "fail", "error", "skip"])
const Outcome = Schema.Literals(["verified", "not-verified", "could-not-check"])

export const VerifyCheck = Schema.Struct({
  id: Schema.String,
  networkId: Schema.optionalKey(Schema.String),
  status: CheckStatus,
  message: Schema.String
}).annotate({ identifier: "VerifyCheck" })

export const VerifyRecordResult = Schema.Struct({
  recordId: Schema.NullOr(Schema.String),
  outcome: Outcome,
  anchors: Schema.Array(Schema.Struct({ chainType: Schema.String, networkId: Schema.String, outcome: Outcome })),
  checks: Schema.Array(VerifyCheck)
}).annotate({ identifier: "VerifyRecordResult" })

export const VerifyResult = Schema.Struct({
  outcome: Outcome,
  verified: Schema.Boolean,
  /** The hash checked: as given or computed, whatever the request held (not necessarily 64 hex). */
  hash: Schema.String,
  hashSource: Schema.Literals(["data", "hash", "bundle"]),
  /** "request": the bundle in the request; "records": the caller's anchored records with this hash. */
  bundleSource: Schema.Literals(["request", "records"]),
  verifiedBy: Schema.String,
  checkedAt: DateTimeString,
  results: Schema.Array(VerifyRecordResult)
}).annotate({ identifier: "VerifyResult" })

export class VerifyApi extends HttpApiGroup.make("verify")
  .add(
    HttpApiEndpoint.post("verify", "/verify", {
      payload: JsonBody(VerifyBody),
      success: ok(VerifyResult),
      error: [BadRequest, Unauthorized, TooManyRequestsSchema]
    }).middleware(DatabaseBound).middleware(JsonBodyFraming)
      // It asks the chains too (each RPC call bounded): its own, longer bound.
      .annotate(RequestDeadline, 25_000)
      .annotate(OpenApi.Summary, "Verify data or a hash against the chains")
      .annotate(
        OpenApi.Description,
        "Checks data or a hash against the chains, from this node (trusting it): the hash, the Merkle proof, the " +
          "contract's view, the Anchored log, the block. Auditors who trust no one use `anchord verify` instead. " +
          "The API key is optional: without one (the public verify page), the request must carry a bundle, only its " +
          "Fabric anchors are checked (a browser checks EVM anchors itself), and it is limited per client address."
      )
  )
  .middleware(DatabaseBound)
  .middleware(KeyOrAddress)
  .prefix("/v1")
  .annotate(OpenApi.Description, "Verification by this node against the chains")
{}
