/**
 * The base of a capability's errors that reach a client: a `Schema.TaggedError` with its SPEC code (`errorCode`, a
 * literal: `toWire` and `atEdge` read it, the handlers' wire types follow from it) and the message the client gets,
 * made from the error's fields. Both are getters on the prototype, as written by hand before: the error's fields,
 * its encoding and its logs are those of the plain `Schema.TaggedError`.
 *
 *     export class RecordNotFound extends DomainErrorClass<RecordNotFound>()(
 *       "RecordNotFound", { recordId: Schema.String }, "RECORD_NOT_FOUND", (error) => `Record ${error.recordId} not found`
 *     ) {}
 */
import { type Cause, Schema } from "effect"
import type { ErrorCode } from "./errors.ts"

export const DomainErrorClass = <Self>() =>
<const Tag extends string, const Fields extends Schema.Struct.Fields, const Code extends ErrorCode>(
  tag: Tag,
  fields: Fields,
  errorCode: Code,
  message: (error: Schema.Struct.Type<Fields>) => string
): Schema.Class<Self, Schema.TaggedStruct<Tag, Fields>, Cause.YieldableError & { readonly errorCode: Code }> => {
  // The class is made for a `Self` not known here, so its type is the declared return type, not inferred.
  const TaggedError: new(...args: ReadonlyArray<any>) => object = Schema.TaggedError<any>()(tag, fields)
  class WithCode extends TaggedError {
    get errorCode() {
      return errorCode
    }
    get message() {
      return message(this as never)
    }
  }
  return WithCode as never
}
