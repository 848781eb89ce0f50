/**
 * `GET /v1/records/{id}/log-proof` (src/api/logProofs.ts): the record's C2SP tlog-proof in its network's log — its
 * leaf (the batch's start + its index in the batch's RFC 9162 order), the inclusion proof from the stored hashes, and
 * the published checkpoint as signed — against the checkpoint anchored with its batch, or a later published one.
 * The extra line names, as base64 JSON, where the checkpoint is anchored: a verifier checks that on chain.
 */
import { Effect, Layer, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/auth.ts"
import { atEdge } from "../db/errors.ts"
import { receiptAnchor } from "../receipts/anchor.ts"
import { ReceiptStore } from "../receipts/ReceiptStore.ts"
import { NotAnchored } from "../records/errors.ts"
import { RecordStore, requireFound } from "../records/RecordStore.ts"
import { proveInclusion } from "../tlog/proofs.ts"
import { formatProofText } from "../tlog/proofText.ts"
import { NotInLog } from "./errors.ts"
import { LogStore } from "./LogStore.ts"

export const LogProofsHttpLayer = HttpApiBuilder.group(Api, "logProofs", (handlers) =>
  Effect.gen(function*() {
    const records = yield* RecordStore
    const anchors = yield* ReceiptStore
    const log = yield* LogStore
    return handlers.handle("recordLogProof", ({ params, query }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const row = yield* requireFound(yield* records.get(principal, params.recordId, false), params.recordId)
        if (row.status !== "ANCHORED") return yield* new NotAnchored({ recordId: row.id, status: row.status })
        const notInLog = (reason: string) => new NotInLog({ recordId: row.id, reason })
        const found = yield* anchors.find(row.id, query.networkId)
        if (Option.isNone(found)) return yield* notInLog("its batch has no RFC 9162 tree, so it is in no log")
        const a = found.value
        const range = yield* log.range(a.batchId)
        if (range === undefined || !range.published) {
          return yield* notInLog("its batch was anchored before the network's log started, or its checkpoint is not confirmed yet")
        }
        const batchSize = range.start + range.leafCount
        const size = query.size ?? batchSize
        if (size < batchSize) return yield* notInLog(`size ${size} is before its batch's checkpoint (${batchSize} leaves)`)
        const checkpoint = yield* log.checkpointAt(a.networkId, size)
        if (checkpoint === undefined) return yield* notInLog(`no published checkpoint of ${size} leaves`)
        if (checkpoint.note === null) return yield* notInLog("this node signs no checkpoints: set LOG_KEY_FILE (docs/transparency-log.md)")
        const index = range.start + a.logIndex
        const proof = yield* proveInclusion(index, size, log.hashReader(a.networkId)).pipe(
          Effect.catchTag("TreeRangeError", (e) => Effect.die(new Error(`log of ${a.networkId}: ${e.detail}`)))
        )
        const anchor = receiptAnchor(a)
        const extra = new TextEncoder().encode(JSON.stringify({
          ...anchor,
          checkpoint: { size, batchId: checkpoint.batchId === a.batchId ? anchor.batchId : undefined }
        }))
        return formatProofText({ extra, index, proof, checkpoint: checkpoint.note })
      }).pipe(atEdge))
  })).pipe(Layer.provide(ReceiptStore.layer))
