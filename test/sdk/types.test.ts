/**
 * The SDK's hand-declared wire types (src/sdk/types.ts) are exactly the encoded side of the server's
 * schemas. Checked by the compiler: `npx tsc --noEmit -p .` fails on a mismatch (vitest only runs the
 * empty bodies).
 *   npx tsc --noEmit -p . && npx vitest run test/sdk/types.test.ts
 */
import { describe, expectTypeOf, it } from "vitest"
import type { ProofBundle as ProofBundleSchema, ProofBundleAnchor as ProofBundleAnchorSchema } from "../../src/api/proofBundle.ts"
import type { Anchor as AnchorSchema, AnchorBody, BatchItemResult as BatchItemResultSchema, BatchResult as BatchResultSchema, ChainType as ChainTypeSchema,
  DeleteResult as DeleteResultSchema, EncryptedPayload as EncryptedPayloadSchema, PackageMode as PackageModeSchema, PatchFields, RecordList,
  RecordStatus as RecordStatusSchema, RecordView } from "../../src/api/recordSchemas.ts"
import type { Anchor, AnchordRecord, AnchorRequest, BatchItemResult, BatchResult, ChainType, DeleteResult, EncryptedPayload, PackageMode, ProofBundle,
  ProofBundleAnchor, RecordPage, RecordPatch, RecordStatus } from "../../src/sdk/index.ts"

describe("anchord/client types = the wire schemas", () => {
  it("records, anchors, pages, batches, deletes, patches", () => {
    expectTypeOf<ChainType>().toEqualTypeOf<typeof ChainTypeSchema.Encoded>()
    expectTypeOf<PackageMode>().toEqualTypeOf<typeof PackageModeSchema.Encoded>()
    expectTypeOf<RecordStatus>().toEqualTypeOf<typeof RecordStatusSchema.Encoded>()
    expectTypeOf<Anchor>().toEqualTypeOf<typeof AnchorSchema.Encoded>()
    expectTypeOf<EncryptedPayload>().toEqualTypeOf<typeof EncryptedPayloadSchema.Encoded>()
    expectTypeOf<AnchordRecord>().toEqualTypeOf<typeof RecordView.Encoded>()
    expectTypeOf<AnchorRequest>().toEqualTypeOf<typeof AnchorBody.Encoded>()
    expectTypeOf<BatchItemResult>().toEqualTypeOf<typeof BatchItemResultSchema.Encoded>()
    expectTypeOf<BatchResult>().toEqualTypeOf<typeof BatchResultSchema.Encoded>()
    expectTypeOf<RecordPage>().toEqualTypeOf<typeof RecordList.Encoded>()
    expectTypeOf<DeleteResult>().toEqualTypeOf<typeof DeleteResultSchema.Encoded>()
    expectTypeOf<RecordPatch>().toEqualTypeOf<typeof PatchFields.Encoded>()
  })

  it("the proof bundle", () => {
    expectTypeOf<ProofBundleAnchor>().toEqualTypeOf<typeof ProofBundleAnchorSchema.Encoded>()
    expectTypeOf<ProofBundle>().toEqualTypeOf<typeof ProofBundleSchema.Encoded>()
  })
})
