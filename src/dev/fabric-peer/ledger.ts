/**
 * The channel ledger of the dev peer: ordering (a pending queue cut into blocks by a timer or a max
 * transaction count), validation (creator signature, tx id, duplicate tx id, endorsement signature,
 * MVCC read versions), commit (versioned world state, tx index, hash-chained blocks) and optional
 * persistence (blocks appended to a file, state rebuilt by replay on start).
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, truncateSync } from "node:fs"
import { dirname } from "node:path"
import { common } from "@hyperledger/fabric-protos"
import { blockHeaderHash, buildBlock, Code, genesisEnvelope, HeaderTypes, parseEnvelope, sha256, type BlockSigner, type ParsedTx, type StoredBlock,
  type TxValidationCode, type VersionRef } from "./blocks.ts"
import { computeTxId, parseCreator, verifySignature } from "./signature.ts"
import type { StateReader } from "./stub.ts"

export interface LedgerOptions {
  readonly channel: string
  /** MSP id whose members may transact (the dev peer's single organisation). */
  readonly mspId: string
  /** Identity that signs blocks and endorsements (the dev peer's own). */
  readonly signer: BlockSigner
  /** File blocks are appended to; replayed on start. In memory only when absent. */
  readonly blockFile?: string
  readonly blockIntervalMs: number
  readonly maxTxPerBlock: number
  readonly log?: (message: string) => void
}

export interface TxStatus {
  readonly code: TxValidationCode
  readonly blockNumber: number
}

interface StateEntry {
  readonly value: Uint8Array
  readonly version: VersionRef
}

const stateKey = (namespace: string, key: string) => `${namespace}\u0000${key}`
const sameVersion = (a: VersionRef | null, b: VersionRef | null) => a === null || b === null ? a === b : a.blockNum === b.blockNum && a.txNum === b.txNum

export class Ledger implements StateReader {
  readonly #options: LedgerOptions
  readonly #blocks: StoredBlock[] = []
  readonly #state = new Map<string, StateEntry>()
  readonly #txIndex = new Map<string, TxStatus>()
  readonly #waiters = new Map<string, Set<(status: TxStatus) => void>>()
  readonly #blockListeners = new Set<(block: StoredBlock) => void>()
  #pending: Uint8Array[] = []
  #timer: NodeJS.Timeout | undefined
  #commitHash: Uint8Array = new Uint8Array(0)
  #closed = false

  constructor(options: LedgerOptions) {
    this.#options = options
    if (options.blockFile && existsSync(options.blockFile)) this.#replay(options.blockFile)
    if (this.#blocks.length === 0) {
      const envelope = genesisEnvelope(options.channel, options.signer, new Date())
      this.#append([envelope], [Code.VALID], [null])
    }
  }

  get channel(): string {
    return this.#options.channel
  }
  height(): number {
    return this.#blocks.length
  }
  block(number: number): StoredBlock | undefined {
    return this.#blocks[number]
  }
  txStatus(txId: string): TxStatus | undefined {
    return this.#txIndex.get(txId)
  }
  get(namespace: string, key: string): StateEntry | undefined {
    return this.#state.get(stateKey(namespace, key))
  }
  pendingCount(): number {
    return this.#pending.length
  }

  /** Subscribes to committed blocks; returns the unsubscribe function. */
  onBlock(listener: (block: StoredBlock) => void): () => void {
    this.#blockListeners.add(listener)
    return () => this.#blockListeners.delete(listener)
  }

  /** Resolves when `txId` is committed (immediately if it already is); `signal` aborts the wait. */
  waitForTx(txId: string, signal: AbortSignal): Promise<TxStatus> {
    const known = this.#txIndex.get(txId)
    if (known) return Promise.resolve(known)
    return new Promise((resolve, reject) => {
      const waiters = this.#waiters.get(txId) ?? new Set()
      this.#waiters.set(txId, waiters)
      const onAbort = () => {
        waiters.delete(done)
        if (waiters.size === 0) this.#waiters.delete(txId)
        reject(signal.reason ?? new Error("aborted"))
      }
      const done = (status: TxStatus) => {
        signal.removeEventListener("abort", onAbort)
        resolve(status)
      }
      waiters.add(done)
      signal.addEventListener("abort", onAbort, { once: true })
    })
  }

  /** Ordering service "broadcast": queues a signed envelope for the next block. */
  enqueue(envelope: Uint8Array): void {
    if (this.#closed) throw new Error("ledger is closed")
    this.#pending.push(envelope)
    if (this.#pending.length >= this.#options.maxTxPerBlock) this.cut()
    else this.#timer ??= setTimeout(() => this.cut(), this.#options.blockIntervalMs)
  }

  /** Cuts, validates and commits a block from the pending envelopes (no-op when none). */
  cut(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    if (this.#pending.length === 0) return
    const envelopes = this.#pending
    this.#pending = []
    const blockNum = this.#blocks.length
    const seen = new Set<string>()
    const codes: TxValidationCode[] = []
    const parsed: Array<ParsedTx | null> = []
    envelopes.forEach((envelope, txNum) => {
      let tx: ParsedTx | null = null
      let code: TxValidationCode
      try {
        tx = parseEnvelope(envelope)
        code = this.#validate(tx, seen)
      } catch (error) {
        this.#options.log?.(`block ${blockNum} tx ${txNum}: bad payload: ${(error as Error).message}`)
        code = Code.BAD_PAYLOAD
      }
      if (tx && tx.txId) seen.add(tx.txId)
      if (tx && code === Code.VALID) this.#apply(tx, { blockNum, txNum })
      else if (tx) this.#options.log?.(`block ${blockNum} tx ${tx.txId}: invalid, code ${code}`)
      codes.push(code)
      parsed.push(tx)
    })
    this.#append(envelopes, codes, parsed)
  }

  close(): void {
    if (this.#closed) return
    this.cut() // commit what was accepted
    this.#closed = true
    this.#blockListeners.clear()
  }

  #validate(tx: ParsedTx, seenInBlock: Set<string>): TxValidationCode {
    if (tx.channelId !== this.#options.channel) return Code.TARGET_CHAIN_NOT_FOUND
    if (tx.type !== HeaderTypes.ENDORSER_TRANSACTION) return Code.UNKNOWN_TX_TYPE
    let creator
    try {
      creator = parseCreator(tx.creator)
    } catch {
      return Code.BAD_CREATOR_SIGNATURE
    }
    if (creator.mspId !== this.#options.mspId || verifySignature(creator, tx.payload, tx.signature) !== null) {
      return Code.BAD_CREATOR_SIGNATURE
    }
    if (tx.txId !== computeTxId(tx.nonce, tx.creator)) return Code.BAD_PROPOSAL_TXID
    if (this.#txIndex.has(tx.txId) || seenInBlock.has(tx.txId)) return Code.DUPLICATE_TXID
    // Endorsement policy of the dev peer: one valid endorsement by a member of its MSP.
    const endorsed = tx.endorsements.some((endorsement) => {
      try {
        const endorser = parseCreator(endorsement.endorser)
        const message = Buffer.concat([tx.proposalResponsePayload, endorsement.endorser])
        return endorser.mspId === this.#options.mspId && verifySignature(endorser, message, endorsement.signature) === null
      } catch {
        return false
      }
    })
    if (!endorsed) return Code.ENDORSEMENT_POLICY_FAILURE
    for (const read of tx.reads) {
      if (!sameVersion(this.get(read.namespace, read.key)?.version ?? null, read.version)) return Code.MVCC_READ_CONFLICT
    }
    return Code.VALID
  }

  #apply(tx: ParsedTx, version: VersionRef): void {
    const hash = [this.#commitHash]
    for (const write of tx.writes) {
      const key = stateKey(write.namespace, write.key)
      if (write.isDelete) this.#state.delete(key)
      else this.#state.set(key, { value: write.value, version })
      hash.push(Buffer.from(key), Buffer.from([write.isDelete ? 1 : 0]), write.value)
    }
    this.#commitHash = sha256(...hash)
  }

  #append(envelopes: Uint8Array[], codes: TxValidationCode[], parsed: Array<ParsedTx | null>): void {
    const number = this.#blocks.length
    const previous = this.#blocks[number - 1]
    const block = buildBlock({
      number,
      previousHash: previous ? previous.headerHash : new Uint8Array(0),
      envelopes,
      codes,
      lastConfig: 0,
      commitHash: this.#commitHash,
      signer: this.#options.signer
    })
    const bytes = block.serializeBinary()
    if (this.#options.blockFile) {
      mkdirSync(dirname(this.#options.blockFile), { recursive: true })
      appendFileSync(this.#options.blockFile, Buffer.from(bytes).toString("base64") + "\n")
    }
    this.#index(block, bytes, codes, parsed)
  }

  #index(block: common.Block, bytes: Uint8Array, codes: TxValidationCode[], parsed: Array<ParsedTx | null>): void {
    const header = block.getHeader()!
    const number = header.getNumber()
    const stored: StoredBlock = {
      number,
      block,
      bytes,
      headerHash: blockHeaderHash(header),
      txs: parsed.map((tx, i) => ({
        txId: tx?.txId ?? "",
        type: tx?.type ?? HeaderTypes.MESSAGE,
        code: codes[i]!,
        event: codes[i] === Code.VALID ? (tx?.event ?? null) : null
      }))
    }
    this.#blocks.push(stored)
    for (const tx of stored.txs) {
      if (!tx.txId || this.#txIndex.has(tx.txId)) continue // the first occurrence of a tx id is the one reported
      const status = { code: tx.code, blockNumber: number }
      this.#txIndex.set(tx.txId, status)
      const waiters = this.#waiters.get(tx.txId)
      this.#waiters.delete(tx.txId)
      waiters?.forEach((resolve) => resolve(status))
    }
    for (const listener of [...this.#blockListeners]) listener(stored)
  }

  #replay(file: string): void {
    let text = readFileSync(file, "utf8")
    if (text !== "" && !text.endsWith("\n")) {
      // A block whose append was cut short (crash): it was never reported committed; drop it.
      text = text.slice(0, text.lastIndexOf("\n") + 1)
      truncateSync(file, Buffer.byteLength(text))
      this.#options.log?.(`${file}: dropped a partially written last block`)
    }
    const lines = text.split("\n").filter((line) => line.trim() !== "")
    for (const line of lines) {
      const bytes = Buffer.from(line, "base64")
      const block = common.Block.deserializeBinary(bytes)
      const header = block.getHeader()
      const number = this.#blocks.length
      const previous = this.#blocks[number - 1]
      if (!header || header.getNumber() !== number) throw new Error(`${file}: expected block ${number}`)
      if (previous && !previous.headerHash.equals(Buffer.from(header.getPreviousHash_asU8()))) {
        throw new Error(`${file}: block ${number} does not chain to block ${number - 1}`)
      }
      const filter = block.getMetadata()!.getMetadataList_asU8()[common.BlockMetadataIndex.TRANSACTIONS_FILTER]!
      const codes = Array.from(filter) as TxValidationCode[]
      const parsed = block.getData()!.getDataList_asU8().map((envelope, txNum) => {
        try {
          const tx = parseEnvelope(envelope)
          if (codes[txNum] === Code.VALID && tx.type === HeaderTypes.ENDORSER_TRANSACTION) this.#apply(tx, { blockNum: number, txNum })
          return tx
        } catch {
          return null
        }
      })
      this.#index(block, bytes, codes, parsed)
    }
    this.#options.log?.(`replayed ${this.#blocks.length} blocks from ${file}`)
  }
}
