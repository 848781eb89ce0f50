/** Endpoint definitions of the records API (SPEC 3). Handlers: src/records/http.ts. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ApiKeyAuth } from "./auth.ts"
import { BadRequest, Conflict, Gone, NotFound, TooManyRequestsSchema, Unprocessable } from "./errors.ts"
import { DatabaseBound, JsonBodyFraming } from "./http.ts"
import { JsonBody } from "./jsonBody.ts"
import { ProofBundle } from "./proofBundle.ts"
import { AnchorBody, BatchAnchorBody, BatchResult, Collection, DeleteResult, documented, EncryptedAnchorBody, Hash64, HashAnchorBody, ok, PatchBody, Limit,
  ProofLookup, RecordId, RecordList, RecordStatus, RecordView, Usage } from "./recordSchemas.ts"

const created = ok(RecordView).annotate({ httpApiStatus: 202, description: "Accepted: the record, status QUEUED" })

/**
 * `Idempotency-Key`: 1 to 255 characters. Checked by RecordCreation (the fast path answers the same
 * message), so the document states the rule and the schema leaves it to that check.
 */
export const IdempotencyKey = Schema.String.check(documented({ minLength: 1, maxLength: 255 })).annotate({
  description: "The same key with the same body within 24 h returns the first response (Idempotent-Replayed: true); with another body 409 IDEMPOTENCY_CONFLICT"
})

/** What every record-creating POST shares: Idempotency-Key, and its errors (429: the monthly quota). */
const creating = {
  headers: { "idempotency-key": Schema.optionalKey(IdempotencyKey) },
  error: [BadRequest, Conflict, TooManyRequestsSchema]
} as const

export class RecordsApi extends HttpApiGroup.make("records")
  .add(
    HttpApiEndpoint.post("anchor", "/anchor", { ...creating, payload: JsonBody(AnchorBody), success: created })
      .middleware(DatabaseBound).middleware(JsonBodyFraming)
      .annotate(OpenApi.Summary, "Submit a record")
      .annotate(OpenApi.Description, "Submit a record: hashed with RFC 8785 JCS + SHA-256, queued for anchoring."),
    HttpApiEndpoint.post("anchorEncrypted", "/anchor/encrypted", { ...creating, payload: JsonBody(EncryptedAnchorBody), success: created })
      .middleware(DatabaseBound).middleware(JsonBodyFraming)
      .annotate(OpenApi.Summary, "Submit an encrypted record")
      .annotate(OpenApi.Description, "Submit a record stored only as AES-256-GCM ciphertext under the client's key."),
    HttpApiEndpoint.post("anchorHash", "/anchor/hash", { ...creating, payload: JsonBody(HashAnchorBody), success: created })
      .middleware(DatabaseBound).middleware(JsonBodyFraming)
      .annotate(OpenApi.Summary, "Anchor a hash")
      .annotate(OpenApi.Description, "Anchor a hash the client computed; no data is sent."),
    HttpApiEndpoint.post("anchorBatch", "/anchor/batch", {
      ...creating,
      payload: JsonBody(BatchAnchorBody),
      success: [
        ok(BatchResult).annotate({ httpApiStatus: 202, description: "Every item was accepted" }),
        ok(BatchResult).annotate({ httpApiStatus: 207, description: "Some or all items were refused (each with its error); the others were accepted" })
      ]
    })
      .middleware(DatabaseBound).middleware(JsonBodyFraming)
      .annotate(OpenApi.Summary, "Submit up to 100 records")
      .annotate(OpenApi.Description,
        "Up to 100 records in one call, with a result per item: 202 when all are accepted, 207 when some or all are refused (nothing is written for those)."),
    HttpApiEndpoint.get("list", "/records", {
      query: {
        limit: Schema.optionalKey(Limit),
        cursor: Schema.optionalKey(Schema.String),
        status: Schema.optionalKey(RecordStatus),
        collection: Schema.optionalKey(Collection),
        includeDeleted: Schema.optionalKey(Schema.Literals(["true", "false"]))
      },
      success: ok(RecordList),
      error: [BadRequest]
    }).annotate(OpenApi.Summary, "List records")
      .annotate(OpenApi.Description, "Records of this key's environment, newest first, with cursor pagination; filter by status or collection."),
    HttpApiEndpoint.get("get", "/records/:recordId", {
      params: { recordId: RecordId },
      headers: {
        "x-encryption-key": Schema.optionalKey(Schema.String.check(documented({ minLength: 32, maxLength: 32 })).annotate({
          description: "The record's encryption key: the lookup shows the decrypted data (a wrong key: 400 INVALID_ENCRYPTION_KEY)"
        }))
      },
      query: { includeDeleted: Schema.optionalKey(Schema.Literals(["true", "false"])) },
      success: ok(RecordView),
      error: [BadRequest, NotFound, Gone]
    }).annotate(OpenApi.Summary, "Get a record"),
    HttpApiEndpoint.patch("update", "/records/:recordId", {
      params: { recordId: RecordId },
      payload: JsonBody(PatchBody),
      success: ok(RecordView),
      error: [BadRequest, NotFound, Gone, Unprocessable]
    })
      .middleware(DatabaseBound).middleware(JsonBodyFraming)
      .annotate(OpenApi.Summary, "Update a record's metadata or webhookUrl")
      .annotate(OpenApi.Description, "Update the mutable fields (metadata, webhookUrl); any other field is 422 IMMUTABLE_FIELD."),
    HttpApiEndpoint.delete("remove", "/records/:recordId", {
      params: { recordId: RecordId },
      query: { mode: Schema.optionalKey(Schema.Literals(["soft", "hard"])) },
      success: ok(DeleteResult),
      error: [BadRequest, NotFound, Gone]
    }).annotate(OpenApi.Summary, "Delete a record")
      .annotate(OpenApi.Description, "Soft delete (default) hides the record; hard delete erases data and metadata and keeps a tombstone."),
    HttpApiEndpoint.get("recordProof", "/records/:recordId/proof", {
      params: { recordId: RecordId },
      success: ok(ProofBundle),
      error: [BadRequest, NotFound, Gone, Conflict]
    }).annotate(OpenApi.Summary, "Get a record's proof bundle")
      .annotate(OpenApi.Description, "The self-contained proof bundle (version 1) of an anchored record; 409 NOT_ANCHORED before."),
    HttpApiEndpoint.get("proofByHash", "/proof/:hash", {
      params: { hash: Hash64 },
      success: ok(ProofLookup),
      error: [BadRequest, NotFound]
    }).annotate(OpenApi.Summary, "Find records and proofs by hash"),
    HttpApiEndpoint.get("usage", "/usage", { success: ok(Usage) }).annotate(OpenApi.Summary, "This month's usage against the plan")
  )
  .middleware(DatabaseBound)
  .middleware(ApiKeyAuth)
  .prefix("/v1")
  .annotate(OpenApi.Description, "Records: submit, look up, list, update, delete, proofs, usage (SPEC 3, 4)")
{}
