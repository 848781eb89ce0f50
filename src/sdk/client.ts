/**
 * `AnchordClient`: the records API over plain `fetch`, for applications that do not use Effect.
 * No runtime dependency beyond the platform (fetch, node:crypto's randomUUID via globalThis.crypto).
 *
 * Retries (bounded by `retries`): 429 RATE_LIMIT_EXCEEDED and 503 are retried after their
 * `Retry-After` (the server did nothing), network errors and timeouts after a backoff for requests
 * that are safe to repeat: GET, PATCH (a repeat changes nothing and sends no event) and the POSTs,
 * which always carry an `Idempotency-Key` (one per logical call when the caller gives none) so a
 * repeat returns the first answer instead of creating a second record. DELETE is not repeated after a
 * network error (a delete that did happen would then answer 410).
 */
import type { AnchordRecord, AnchorRequest, BatchResult, ChainType, DeleteResult, HashScheme, JsonObject, PackageMode, ProofBundle, RecordPage, RecordPatch,
  RecordStatus } from "./types.ts"

export interface AnchordClientOptions {
  /** The node's address, e.g. `http://127.0.0.1:8080` (a trailing `/v1` is accepted). */
  readonly baseUrl: string
  /** `dcp_test_…` or `dcp_live_…`. Never included in errors or in the client's own properties. */
  readonly apiKey: string
  /** A fetch implementation (default: the global one). */
  readonly fetch?: typeof globalThis.fetch
  /** Retries after the first attempt (default 3); 0 disables retrying. */
  readonly retries?: number
  /** Deadline of one attempt, in milliseconds (default 30,000). */
  readonly timeoutMs?: number
  /** The longest `Retry-After` waited for (default 60,000 ms); a longer one is returned as the error. */
  readonly maxRetryDelayMs?: number
}

/** Options of the record-creating calls. */
export interface AnchorOptions {
  readonly webhookUrl?: string
  readonly chain?: ChainType
  readonly packageMode?: PackageMode
  readonly metadata?: JsonObject
  /** A grouping name (not hashed, immutable); `list({ collection })` filters by it. */
  readonly collection?: string
  /** Sent as `Idempotency-Key`; one is generated for the call when absent. */
  readonly idempotencyKey?: string
}

/** An error answer of the API (`{ success: false, error, errorCode }`), or a failure to get one. */
export class AnchordError extends Error {
  /** The HTTP status; 0 when no answer was received (network error, timeout) or for a client-side outcome. */
  readonly status: number
  /** The API's `errorCode` (e.g. `RECORD_NOT_FOUND`), or `NETWORK_ERROR`, `TIMEOUT`, `ANCHOR_FAILED`, `INVALID_RESPONSE`. */
  readonly errorCode: string
  /** `Retry-After` of a 429 or 503, in seconds, when the server sent one. */
  readonly retryAfterSeconds: number | undefined

  constructor(status: number, errorCode: string, message: string, options?: { cause?: unknown; retryAfterSeconds?: number | undefined }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause })
    this.name = "AnchordError"
    this.status = status
    this.errorCode = errorCode
    this.retryAfterSeconds = options?.retryAfterSeconds
  }
}

interface RequestSpec {
  readonly method: "GET" | "POST" | "PATCH" | "DELETE"
  readonly path: string
  readonly query?: Record<string, string | undefined>
  readonly body?: unknown
  readonly headers?: Record<string, string | undefined>
  /** Whether a repeat after a network error or timeout is safe. */
  readonly repeatable: boolean
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** `Retry-After` as milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
const retryAfterMillis = (value: string | null): number | undefined => {
  if (value === null || value.trim() === "") return undefined
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now())
}

/** Exponential backoff with jitter for failures that name no wait: ~0.5 s, 1 s, 2 s, … up to 8 s. */
const backoffMillis = (attempt: number) => Math.min(8_000, 500 * 2 ** attempt) * (0.5 + Math.random() / 2)

const newIdempotencyKey = () => globalThis.crypto.randomUUID()

export class AnchordClient {
  readonly baseUrl: string
  // A private field: not enumerable, so logging the client or an error never shows the key.
  readonly #apiKey: string
  readonly #fetch: typeof globalThis.fetch
  readonly #retries: number
  readonly #timeoutMs: number
  readonly #maxRetryDelayMs: number

  constructor(options: AnchordClientOptions) {
    if (typeof options.baseUrl !== "string" || options.baseUrl === "") throw new TypeError("AnchordClient: baseUrl is required")
    if (typeof options.apiKey !== "string" || options.apiKey === "") throw new TypeError("AnchordClient: apiKey is required")
    this.baseUrl = options.baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "")
    this.#apiKey = options.apiKey
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis)
    this.#retries = Math.max(0, Math.floor(options.retries ?? 3))
    this.#timeoutMs = options.timeoutMs ?? 30_000
    this.#maxRetryDelayMs = options.maxRetryDelayMs ?? 60_000
  }

  /** Submit a record (`POST /v1/anchor`): 202, status `QUEUED`, hash = sha256(JCS(data)). */
  anchor(data: JsonObject, options: AnchorOptions = {}): Promise<AnchordRecord> {
    return this.#create("/v1/anchor", { data, ...fields(options) }, options.idempotencyKey)
  }

  /**
   * Submit a record stored only as AES-256-GCM ciphertext (`encryptionKey`: 32 printable ASCII characters).
   * Its hash is salted by default (`hashScheme` `salted-jcs-sha256`): keep the answer's `salt` with the data
   * (or read it back with `get(id, { encryptionKey })`) to recompute the hash; `jcs-sha256` asks for the
   * unsalted sha256(JCS(data)).
   */
  anchorEncrypted(
    data: JsonObject,
    encryptionKey: string,
    options: AnchorOptions & { readonly hashScheme?: HashScheme } = {}
  ): Promise<AnchordRecord> {
    const scheme = options.hashScheme === undefined ? {} : { hashScheme: options.hashScheme }
    return this.#create("/v1/anchor/encrypted", { data, encryptionKey, ...fields(options), ...scheme }, options.idempotencyKey)
  }

  /** Anchor a SHA-256 you computed (64 hex); no data is sent. */
  anchorHash(hash: string, options: Omit<AnchorOptions, "packageMode"> = {}): Promise<AnchordRecord> {
    return this.#create("/v1/anchor/hash", { hash, ...fields(options) }, options.idempotencyKey)
  }

  /**
   * Up to 100 records in one call, a result per item (invalid items are reported, valid ones accepted):
   * resolves for HTTP 202 (all accepted) and 207 (some or all refused); `summary` counts both.
   */
  anchorBatch(records: ReadonlyArray<AnchorRequest>, options: { readonly idempotencyKey?: string } = {}): Promise<BatchResult> {
    return this.#create("/v1/anchor/batch", { records }, options.idempotencyKey)
  }

  /** A record; with `encryptionKey` an encrypted record's data is decrypted by the node. */
  get(recordId: string, options: { readonly encryptionKey?: string; readonly includeDeleted?: boolean } = {}): Promise<AnchordRecord> {
    return this.#request({
      method: "GET",
      path: `/v1/records/${encodeURIComponent(recordId)}`,
      query: { includeDeleted: options.includeDeleted === undefined ? undefined : String(options.includeDeleted) },
      headers: { "x-encryption-key": options.encryptionKey },
      repeatable: true
    })
  }

  /**
   * The records of this key's environment, newest first, one page per iteration (cursor pagination):
   * `for await (const page of client.list({ limit: 100 })) …`.
   */
  async *list(options: {
    readonly status?: RecordStatus
    /** Only the records submitted with this collection. */
    readonly collection?: string
    readonly limit?: number
    readonly includeDeleted?: boolean
    readonly cursor?: string
  } = {}): AsyncGenerator<RecordPage, void, undefined> {
    let cursor = options.cursor
    for (;;) {
      const page: RecordPage = await this.#request({
        method: "GET",
        path: "/v1/records",
        query: {
          limit: options.limit === undefined ? undefined : String(options.limit),
          status: options.status,
          collection: options.collection,
          includeDeleted: options.includeDeleted === undefined ? undefined : String(options.includeDeleted),
          cursor
        },
        repeatable: true
      })
      yield page
      if (page.nextCursor === null) return
      cursor = page.nextCursor
    }
  }

  /** Change `metadata` and/or `webhookUrl` (null clears it); unchanged values are not a change. */
  update(recordId: string, patch: RecordPatch): Promise<AnchordRecord> {
    return this.#request({ method: "PATCH", path: `/v1/records/${encodeURIComponent(recordId)}`, body: patch, repeatable: true })
  }

  /** Soft (default: hidden, kept) or hard (data and metadata erased, a tombstone kept) delete. */
  delete(recordId: string, options: { readonly mode?: "soft" | "hard" } = {}): Promise<DeleteResult> {
    return this.#request({
      method: "DELETE",
      path: `/v1/records/${encodeURIComponent(recordId)}`,
      query: { mode: options.mode },
      repeatable: false
    })
  }

  /** The proof bundle of an anchored record (409 NOT_ANCHORED before). Check it with `verifyBundle`. */
  proof(recordId: string): Promise<ProofBundle> {
    return this.#request({ method: "GET", path: `/v1/records/${encodeURIComponent(recordId)}/proof`, repeatable: true })
  }

  /**
   * Polls until the record is `ANCHORED` and returns it. Throws `AnchordError` `TIMEOUT` after
   * `timeoutMs` (default 120 s), `ANCHOR_FAILED` if the record reaches `FAILED`, and any API error
   * (404, 410) as it comes.
   */
  async waitForAnchored(recordId: string, options: { readonly timeoutMs?: number; readonly pollMs?: number } = {}): Promise<AnchordRecord> {
    const timeoutMs = options.timeoutMs ?? 120_000
    const pollMs = options.pollMs ?? 1_000
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const record = await this.get(recordId)
      if (record.status === "ANCHORED") return record
      if (record.status === "FAILED") throw new AnchordError(0, "ANCHOR_FAILED", `Record ${recordId} failed to anchor`)
      const left = deadline - Date.now()
      if (left <= 0) throw new AnchordError(0, "TIMEOUT", `Record ${recordId} is still ${record.status} after ${timeoutMs} ms`)
      await sleep(Math.min(pollMs, left))
    }
  }

  #create<A>(path: string, body: unknown, idempotencyKey: string | undefined): Promise<A> {
    // One key for every attempt of this call: a repeat is answered with the first response.
    return this.#request({ method: "POST", path, body, headers: { "idempotency-key": idempotencyKey ?? newIdempotencyKey() }, repeatable: true })
  }

  async #request<A>(spec: RequestSpec): Promise<A> {
    const url = new URL(`${this.baseUrl}${spec.path}`)
    for (const [name, value] of Object.entries(spec.query ?? {})) if (value !== undefined) url.searchParams.set(name, value)
    const headers: Record<string, string> = { authorization: `Bearer ${this.#apiKey}`, accept: "application/json" }
    for (const [name, value] of Object.entries(spec.headers ?? {})) if (value !== undefined) headers[name] = value
    const body = spec.body === undefined ? undefined : JSON.stringify(spec.body)
    if (body !== undefined) headers["content-type"] = "application/json"

    for (let attempt = 0;; attempt++) {
      const canRetry = attempt < this.#retries
      let response: Response
      try {
        response = await this.#fetch(url, { method: spec.method, headers, body, signal: AbortSignal.timeout(this.#timeoutMs) })
      } catch (cause) {
        if (canRetry && spec.repeatable) {
          await sleep(backoffMillis(attempt))
          continue
        }
        const timedOut = cause instanceof Error && (cause.name === "TimeoutError" || cause.name === "AbortError")
        throw timedOut
          ? new AnchordError(0, "TIMEOUT", `${spec.method} ${spec.path}: no answer within ${this.#timeoutMs} ms`, { cause })
          : new AnchordError(0, "NETWORK_ERROR", `${spec.method} ${spec.path}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause })
      }
      const text = await response.text().catch(() => "")
      let json: any
      try {
        json = text === "" ? undefined : JSON.parse(text)
      } catch {
        json = undefined
      }
      if (response.ok && json?.success === true) return json.data as A

      const retryAfter = retryAfterMillis(response.headers.get("retry-after"))
      // 429 RATE_LIMIT_EXCEEDED and 503: refused before any work, so any request may be sent again.
      // QUOTA_EXCEEDED is a 429 too, but waits for the next month.
      const transient = response.status === 503 || (response.status === 429 && json?.errorCode !== "QUOTA_EXCEEDED")
      if (transient && canRetry) {
        const wait = retryAfter ?? backoffMillis(attempt)
        if (wait <= this.#maxRetryDelayMs) {
          await sleep(wait)
          continue
        }
      }
      const retryAfterSeconds = retryAfter === undefined ? undefined : Math.ceil(retryAfter / 1000)
      if (json?.success === false && typeof json.errorCode === "string") {
        throw new AnchordError(response.status, json.errorCode, typeof json.error === "string" ? json.error : json.errorCode, { retryAfterSeconds })
      }
      throw new AnchordError(response.status, "INVALID_RESPONSE", `${spec.method} ${spec.path}: HTTP ${response.status} without an anchord answer`, {
        retryAfterSeconds
      })
    }
  }
}

/** The body members of the record-creating calls (the idempotency key travels as a header). */
const fields = (options: AnchorOptions) => {
  const { idempotencyKey: _, ...rest } = options
  return rest
}
