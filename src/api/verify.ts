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

/**
 * The endpoint's deadline (DatabaseBound): it asks the chains too, so it is longer than other endpoints'.
 * Its chain calls have their own, shorter budget (VERIFY_CHAIN_BUDGET_MS, src/verify/http.ts), so this
 * one is only reached by the database's part.
 */
export const VERIFY_DEADLINE_MS = 25_000

export class VerifyApi extends HttpApiGroup.make("verify")
  .add(
    HttpApiEndpoint.post("verify", "/verify", {
      payload: JsonBody(VerifyBody),
      success: ok(VerifyResult),
      error: [BadRequest, Unauthorized, TooManyRequestsSchema]
    }).middleware(DatabaseBound).middleware(JsonBodyFraming)
      .annotate(RequestDeadline, VERIFY_DEADLINE_MS)
      .annotate(OpenApi.Summary, "Verify data or a hash against the chains")
      .annotate(
        OpenApi.Description,
        "Checks data or a hash against the chains, from this node (trusting it): the hash, the Merkle proof, the " +
          "contract's view, the Anchored log, the block. Auditors who trust no one use `anchord verify` instead. " +
          "The API key is optional: without one (the public verify page), the request must carry a bundle, only its " +
          "Fabric anchors are checked (a browser checks EVM anchors itself), and it is limited per client address. " +
          "Bounded per request: a bundle holds at most 2 anchors (400 VALIDATION_ERROR beyond), at most 4 anchors are " +
          "checked on chain (a lookup by hash checks the newest records), at most 8 per second per account or client " +
          "address (429 RATE_LIMIT_EXCEEDED with Retry-After), and an anchor the chain does not answer for within the " +
          "request's chain budget is an `error` check (outcome could-not-check), not a failed request."
      )
  )
  .middleware(DatabaseBound)
  .middleware(KeyOrAddress)
  .prefix("/v1")
  .annotate(OpenApi.Description, "Verification by this node against the chains")
{}
