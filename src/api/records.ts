/** Endpoint definitions of the records API (SPEC 3). Handlers: src/records/http.ts. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ApiKeyAuth } from "./auth.ts"
import { BadRequest, Conflict, Gone, NotFound, TooManyRequestsSchema, Unprocessable } from "./errors.ts"
import { DatabaseBound, JsonBodyFraming } from "./http.ts"
import { JsonBody } from "./jsonBody.ts"
import { ProofBundle } from "./proofBundle.ts"
import {
  AnchorBody, BatchAnchorBody, BatchResult, DeleteResult, EncryptedAnchorBody, Hash64, HashAnchorBody, ok, PatchBody,
  ProofLookup, RecordId, RecordList, RecordStatus, RecordView, Usage
} from "./recordSchemas.ts"

const created = ok(RecordView).annotate({ httpApiStatus: 202 })
/** What every record-creating POST shares: Idempotency-Key, and its errors (429: the monthly quota). */
const creating = {
  headers: { "idempotency-key": Schema.optionalKey(Schema.String) },
  error: [BadRequest, Conflict, TooManyRequestsSchema]
} as const

export const Limit = Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 100 }))

export class RecordsApi extends HttpApiGroup.make("records")
  .add(
    HttpApiEndpoint.post("anchor", "/anchor", { ...creating, payload: JsonBody(AnchorBody), success: created })
      .middleware(DatabaseBound).middleware(JsonBodyFraming)
      .annotate(OpenApi.Description, "Submit a record: hashed with RFC 8785 JCS + SHA-256, queued for anchoring."),
    HttpApiEndpoint.post("anchorEncrypted", "/anchor/encrypted", { ...creating, payload: JsonBody(EncryptedAnchorBody), success: created })
      .middleware(DatabaseBound).middleware(JsonBodyFraming)
      .annotate(OpenApi.Description, "Submit a record stored only as AES-256-GCM ciphertext under the client's key."),
    HttpApiEndpoint.post("anchorHash", "/anchor/hash", { ...creating, payload: JsonBody(HashAnchorBody), success: created })
      .middleware(DatabaseBound).middleware(JsonBodyFraming)
      .annotate(OpenApi.Description, "Anchor a hash the client computed; no data is sent."),
    HttpApiEndpoint.post("anchorBatch", "/anchor/batch", {
      ...creating,
      payload: JsonBody(BatchAnchorBody),
      success: ok(BatchResult).annotate({ httpApiStatus: 202 })
    })
      .middleware(DatabaseBound).middleware(JsonBodyFraming)
      .annotate(OpenApi.Description, "Up to 100 records in one call, with a result per item."),
    HttpApiEndpoint.get("list", "/records", {
      query: {
        limit: Schema.optionalKey(Limit),
        cursor: Schema.optionalKey(Schema.String),
        status: Schema.optionalKey(RecordStatus),
        includeDeleted: Schema.optionalKey(Schema.Literals(["true", "false"]))
      },
      success: ok(RecordList),
      error: [BadRequest]
    }).annotate(OpenApi.Description, "Records of this key's environment, newest first, with cursor pagination."),
    HttpApiEndpoint.get("get", "/records/:recordId", {
      params: { recordId: RecordId },
      headers: { "x-encryption-key": Schema.optionalKey(Schema.String) },
      query: { includeDeleted: Schema.optionalKey(Schema.Literals(["true", "false"])) },
      success: ok(RecordView),
      error: [BadRequest, NotFound, Gone]
    }),
    HttpApiEndpoint.patch("update", "/records/:recordId", {
      params: { recordId: RecordId },
      payload: JsonBody(PatchBody),
      success: ok(RecordView),
      error: [BadRequest, NotFound, Gone, Unprocessable]
    })
      .middleware(DatabaseBound).middleware(JsonBodyFraming)
      .annotate(OpenApi.Description, "Update the mutable fields (metadata, webhookUrl); any other field is 422 IMMUTABLE_FIELD."),
    HttpApiEndpoint.delete("remove", "/records/:recordId", {
      params: { recordId: RecordId },
      query: { mode: Schema.optionalKey(Schema.Literals(["soft", "hard"])) },
      success: ok(DeleteResult),
      error: [BadRequest, NotFound, Gone]
    }).annotate(OpenApi.Description, "Soft delete (default) hides the record; hard delete erases data and metadata and keeps a tombstone."),
    HttpApiEndpoint.get("recordProof", "/records/:recordId/proof", {
      params: { recordId: RecordId },
      success: ok(ProofBundle),
      error: [BadRequest, NotFound, Gone, Conflict]
    }).annotate(OpenApi.Description, "The self-contained proof bundle (version 1) of an anchored record; 409 NOT_ANCHORED before."),
    HttpApiEndpoint.get("proofByHash", "/proof/:hash", {
      params: { hash: Hash64 },
      success: ok(ProofLookup),
      error: [BadRequest, NotFound]
    }),
    HttpApiEndpoint.get("usage", "/usage", { success: ok(Usage) })
  )
  .middleware(DatabaseBound)
  .middleware(ApiKeyAuth)
  .prefix("/v1")
{}
