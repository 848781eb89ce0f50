/**
 * The database as the edge sees it: a statement that could not reach PostgreSQL is 503
 * SERVICE_UNAVAILABLE (retry later); a statement PostgreSQL refused is a bug (500).
 */
import { Effect } from "effect"
import { SqlError } from "effect/sql"
import { type DomainError, errorBody, ServiceUnavailable, toWire, type WireFor } from "../api/errors.ts"

/** Seconds a client is told to wait when the database is unavailable. */
export const UNAVAILABLE_RETRY_AFTER = 5

/**
 * A failure to reach the database (as opposed to a statement it refused). The client reports lost
 * sockets and SQLSTATE class 08 as ConnectionError; a server shutting down (class 57P, "terminating
 * connection") arrives as UnknownError with that code. Not the message: every error of the client
 * says "PgConnection: ...". A server that cannot write (SQLSTATE 25006: a demoted primary, or a standby
 * that the endpoint still leads to during a failover, until the proxy's health check drops it) is
 * unavailable too: the write belongs on the new primary, so the client is told to retry.
 */
export const isConnectionFailure = (error: unknown): boolean => {
  if (!SqlError.isSqlError(error)) return false
  const reason = error.reason
  if (reason._tag === "ConnectionError") return true
  if (reason._tag !== "UnknownError") return false
  const cause = reason.cause as { readonly code?: unknown; readonly message?: unknown } | undefined
  const code = typeof cause?.code === "string" ? cause.code : ""
  return code.startsWith("57P") || code === "25006" || /^(ECONNREFUSED|ECONNRESET|EPIPE)$/.test(code) ||
    /ECONNREFUSED|ECONNRESET|terminat/i.test(String(cause?.message ?? ""))
}

export const databaseUnavailable = () =>
  new ServiceUnavailable({
    ...errorBody("SERVICE_UNAVAILABLE", "The database is unavailable; retry later"),
    retryAfter: UNAVAILABLE_RETRY_AFTER
  })

/**
 * The edge of a handler: domain errors to their wire errors (`toWire`), SqlError to 503 when the
 * database could not be reached (a defect, so a 500, when it refused a statement).
 */
export const atEdge = <A, E extends DomainError | SqlError.SqlError, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, WireFor<Exclude<E, SqlError.SqlError>["errorCode"]> | ServiceUnavailable, R> =>
  Effect.catch(effect, (e): Effect.Effect<never, any> =>
    SqlError.isSqlError(e)
      ? (isConnectionFailure(e) ? Effect.fail(databaseUnavailable()) : Effect.die(e))
      : Effect.fail(toWire(e as DomainError))) as never
