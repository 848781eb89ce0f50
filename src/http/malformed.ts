/**
 * Requests node:http refuses before any handler sees them (SPEC 3: malformed HTTP gets a 4xx with the
 * error body, never a bare reply): a parse error (`clientError`: bad Content-Length, both
 * Content-Length and Transfer-Encoding, an invalid method, header or URL, headers too large), an
 * `Expect` other than 100-continue (`checkExpectation`), and `CONNECT` (`connect`). Answered with the
 * JSON error body, `Connection: close` (the stream cannot be trusted past the error) and the
 * X-RateLimit-* headers the caller supplies (counted by address). No domain imports.
 */
import type * as Http from "node:http"
import type * as Net from "node:net"
import { errorBody, type ErrorCode, statusOf } from "../api/errors.ts"

const REASONS: Record<number, string> = {
  400: "Bad Request",
  405: "Method Not Allowed",
  413: "Content Too Large",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large"
}

/** The code and message of a node:http parse error. */
export const describeClientError = (error: Error & { readonly code?: string }): { readonly code: ErrorCode; readonly message: string } => {
  switch (error.code) {
    case "HPE_HEADER_OVERFLOW":
      return { code: "HEADERS_TOO_LARGE", message: "The request's header fields are larger than the limit (16 KiB in all)" }
    case "HPE_INVALID_CONTENT_LENGTH":
    case "HPE_UNEXPECTED_CONTENT_LENGTH":
      return { code: "VALIDATION_ERROR", message: "Malformed HTTP request: invalid Content-Length" }
    case "HPE_INVALID_TRANSFER_ENCODING":
    case "HPE_INVALID_CHUNK_SIZE":
      return { code: "VALIDATION_ERROR", message: "Malformed HTTP request: invalid Transfer-Encoding or chunk" }
    case "HPE_INVALID_METHOD":
      return { code: "VALIDATION_ERROR", message: "Malformed HTTP request: invalid method" }
    case "HPE_INVALID_URL":
      return { code: "VALIDATION_ERROR", message: "Malformed HTTP request: invalid request target" }
    case "HPE_INVALID_HEADER_TOKEN":
    case "HPE_LF_EXPECTED":
    case "HPE_CR_EXPECTED":
      return { code: "VALIDATION_ERROR", message: "Malformed HTTP request: invalid header" }
    case "HPE_INVALID_VERSION":
      return { code: "VALIDATION_ERROR", message: "Malformed HTTP request: unsupported HTTP version" }
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { code: "VALIDATION_ERROR", message: "The request was not received in time" }
    default:
      return { code: "VALIDATION_ERROR", message: "Malformed HTTP request" }
  }
}

/** The whole response as bytes, for a socket no ServerResponse owns. */
export const rawErrorResponse = (code: ErrorCode, message: string, headers: Readonly<Record<string, string>>): string => {
  const status = statusOf(code)
  const body = JSON.stringify(errorBody(code, message))
  const lines = [
    `HTTP/1.1 ${status} ${REASONS[status] ?? "Error"}`,
    "content-type: application/json",
    `content-length: ${Buffer.byteLength(body)}`,
    "cache-control: no-store",
    "connection: close",
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)
  ]
  return `${lines.join("\r\n")}\r\n\r\n${body}`
}

/** Writes `text` and closes the socket, giving the client time to read it before a reset could. */
export const answerAndClose = (socket: Net.Socket, text: string) => {
  if (socket.destroyed || !socket.writable) return socket.destroy()
  socket.end(text)
  const timer = setTimeout(() => socket.destroy(), 2000)
  socket.once("close", () => clearTimeout(timer))
}

/** The same answer through a ServerResponse (`checkExpectation`: node:http has made one). */
export const answerResponse = (response: Http.ServerResponse, code: ErrorCode, message: string, headers: Readonly<Record<string, string>>) => {
  const body = JSON.stringify(errorBody(code, message))
  response.writeHead(statusOf(code), {
    ...headers,
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(body)),
    "cache-control": "no-store",
    connection: "close"
  })
  response.end(body)
}
