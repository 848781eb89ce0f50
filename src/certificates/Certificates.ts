/**
 * Issuing certificates (SPEC 9) for the API (`GET /v1/records/{id}/certificate`, `GET /v1/certificate/{hash}`,
 * ./http.ts) and the console: the record's proof bundle, exactly as `GET /v1/records/{id}/proof` serves
 * it, rendered by ./certificate.ts with a QR code to `<public URL>/verify#bundle=…`.
 */
import { Context, Effect, Layer, Schema } from "effect"
import type { SqlError } from "effect/sql"
import { HashNotFound, NotAnchored, type RecordDeleted, type RecordNotFound } from "../records/errors.ts"
import { type Owner, type BuiltProofBundle, RecordStore } from "../records/RecordStore.ts"
import { certificateId, certificatePdf } from "./certificate.ts"
import { DomainErrorClass } from "../api/domainError.ts"

/** The proof does not fit a QR code (a record with many anchors and a huge batch). */
export class CertificateTooLarge
  extends DomainErrorClass<CertificateTooLarge>()("CertificateTooLarge", { reason: Schema.String }, "CERTIFICATE_TOO_LARGE",
    (error) => `No certificate: ${error.reason}`)
{}

export interface Certificate {
  readonly id: string
  readonly pdf: Uint8Array
}

type Issue<E> = Effect.Effect<Certificate, E | NotAnchored | CertificateTooLarge | SqlError.SqlError>

/** The response headers of a certificate: inline PDF named after its id, not cached (it carries record facts). */
export const certificateHeaders = (c: Certificate) => ({
  "content-disposition": `inline; filename="${c.id}.pdf"`,
  "cache-control": "no-store"
})

export class Certificates extends Context.Service<Certificates, {
  readonly forRecord: (owner: Owner, recordId: string, verifyUrl: string) => Issue<RecordNotFound | RecordDeleted>
  /** The owner's newest anchored record with this hash. */
  readonly forHash: (owner: Owner, hash: string, verifyUrl: string) => Issue<HashNotFound>
}>()("anchord/certificates/Certificates") {
  static readonly layer = Layer.effect(Certificates, Effect.gen(function*() {
    const store = yield* RecordStore

    const render = (bundle: BuiltProofBundle, verifyUrl: string) =>
      Effect.gen(function*() {
        const pdf = yield* certificatePdf(bundle, { verifyUrl }).pipe(
          Effect.catchTag("CertificateError", (e) =>
            // A bundle this node built that the renderer refuses, or a verify URL it cannot use, is a bug.
            e.reason === "qr-capacity" ? Effect.fail(new CertificateTooLarge({ reason: e.message })) : Effect.die(e))
        )
        return { id: certificateId(bundle), pdf }
      })

    return Certificates.of({
      forRecord: Effect.fn("Certificates.forRecord")(function*(owner, recordId, verifyUrl) {
        return yield* render(yield* store.proof(owner, recordId), verifyUrl)
      }),
      forHash: Effect.fn("Certificates.forHash")(function*(owner, hash, verifyUrl) {
        const rows = yield* store.byHash(owner, hash.toLowerCase())
        if (rows.length === 0) return yield* new HashNotFound({ hash })
        const row = rows.find((r) => r.status === "ANCHORED") ?? rows[0]!
        if (row.status !== "ANCHORED") return yield* new NotAnchored({ recordId: row.id, status: row.status })
        return yield* render((yield* store.proofsOf([row]))[0]!, verifyUrl)
      })
    })
  }))
}
