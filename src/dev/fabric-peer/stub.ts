/**
 * In-process chaincode execution: a ChaincodeStub implementing what contracts use of fabric-shim's
 * stub (state with read/write set recording, tx id/timestamp, creator, events, composite keys), a
 * ClientIdentity, and a router with fabric-shim's contract routing rules
 * (lib/contract-spi/chaincodefromcontract.js): "contract:function" or the default (first) contract,
 * public prototype methods only, parameter count check, before/around/after hooks,
 * unknownTransaction, and errors turned into a 500 response carrying `error.message`, as
 * fabric-shim 2.5.8 sends it to the peer.
 */
import { Contract } from "fabric-contract-api"
import type { ReadEntry, VersionRef, WriteEntry, EventEntry } from "./blocks.ts"
import type { Creator } from "./signature.ts"

export interface StateReader {
  get(namespace: string, key: string): { readonly value: Uint8Array; readonly version: VersionRef } | undefined
}

export interface Invocation {
  readonly channelId: string
  readonly chaincodeId: string
  readonly txId: string
  readonly timestamp: { readonly seconds: number; readonly nanos: number }
  readonly creator: Creator
  readonly args: Uint8Array[]
  readonly transient: Map<string, Uint8Array>
}

export interface SimulationResult {
  readonly status: number
  readonly message: string
  readonly payload: Uint8Array
  readonly reads: ReadEntry[]
  readonly writes: WriteEntry[]
  readonly event: EventEntry | null
}

const COMPOSITE_KEY_NAMESPACE = "\x00"
const MIN_UNICODE_RUNE = "\u0000"
const MAX_UNICODE_RUNE = "\u{10ffff}"

class NotSupported extends Error {
  constructor(method: string) {
    super(`${method} is not supported by the anchord dev peer`)
  }
}

export class DevChaincodeStub {
  readonly #invocation: Invocation
  readonly #state: StateReader
  readonly #reads = new Map<string, ReadEntry>()
  readonly #writes = new Map<string, WriteEntry>()
  #event: EventEntry | null = null

  constructor(invocation: Invocation, state: StateReader) {
    this.#invocation = invocation
    this.#state = state
  }

  getArgs(): string[] {
    return this.#invocation.args.map((arg) => Buffer.from(arg).toString("utf8"))
  }
  getStringArgs(): string[] {
    return this.getArgs()
  }
  getBufferArgs(): Buffer[] {
    return this.#invocation.args.map((arg) => Buffer.from(arg))
  }
  getFunctionAndParameters(): { fcn: string; params: string[] } {
    const [fcn = "", ...params] = this.getArgs()
    return { fcn, params }
  }
  getTxID(): string {
    return this.#invocation.txId
  }
  getChannelID(): string {
    return this.#invocation.channelId
  }
  getCreator(): { mspid: string; idBytes: Uint8Array } {
    return { mspid: this.#invocation.creator.mspId, idBytes: Buffer.from(this.#invocation.creator.certPem, "utf8") }
  }
  getMspID(): string {
    throw new NotSupported("getMspID (the peer's own MSP id, from CORE_PEER_LOCALMSPID)")
  }
  getTransient(): Map<string, Uint8Array> {
    return new Map(this.#invocation.transient)
  }
  /** Like fabric-shim: `{ seconds: Long (unsigned), nanos }`; the Long here is a minimal look-alike. */
  getTxTimestamp(): { seconds: LongLike; nanos: number } {
    const { seconds, nanos } = this.#invocation.timestamp
    return { seconds: longLike(seconds), nanos }
  }
  getDateTimestamp(): Date {
    const { seconds, nanos } = this.#invocation.timestamp
    return new Date(seconds * 1000 + Math.floor(nanos / 1e6))
  }

  async getState(key: string): Promise<Uint8Array> {
    const namespace = this.#invocation.chaincodeId
    const committed = this.#state.get(namespace, key)
    if (!this.#reads.has(key)) this.#reads.set(key, { namespace, key, version: committed?.version ?? null })
    // Like Fabric: reads see committed state only, never this transaction's own writes.
    return committed ? Buffer.from(committed.value) : Buffer.alloc(0)
  }
  async putState(key: string, value: Uint8Array): Promise<void> {
    validateKey(key)
    this.#writes.set(key, { namespace: this.#invocation.chaincodeId, key, value: Buffer.from(value), isDelete: false })
  }
  async deleteState(key: string): Promise<void> {
    validateKey(key)
    this.#writes.set(key, { namespace: this.#invocation.chaincodeId, key, value: new Uint8Array(0), isDelete: true })
  }
  setEvent(name: string, payload: Uint8Array): void {
    if (typeof name !== "string" || name === "") throw new Error("Event name must be a non-empty string")
    const { chaincodeId, txId } = this.#invocation
    this.#event = { chaincodeId, txId, eventName: name, payload: Buffer.from(payload) }
  }

  createCompositeKey(objectType: string, attributes: string[]): string {
    validateCompositeKeyAttribute(objectType)
    let key = COMPOSITE_KEY_NAMESPACE + objectType + MIN_UNICODE_RUNE
    for (const attribute of attributes) {
      validateCompositeKeyAttribute(attribute)
      key += attribute + MIN_UNICODE_RUNE
    }
    return key
  }
  splitCompositeKey(compositeKey: string): { objectType: string | null; attributes: string[] } {
    if (!compositeKey || compositeKey[0] !== COMPOSITE_KEY_NAMESPACE) return { objectType: null, attributes: [] }
    const [objectType = null, ...attributes] = compositeKey.slice(1, -1).split(MIN_UNICODE_RUNE)
    return { objectType, attributes }
  }

  getStateByRange(): never {
    throw new NotSupported("getStateByRange")
  }
  getStateByPartialCompositeKey(): never {
    throw new NotSupported("getStateByPartialCompositeKey")
  }
  getQueryResult(): never {
    throw new NotSupported("getQueryResult")
  }
  getHistoryForKey(): never {
    throw new NotSupported("getHistoryForKey")
  }
  invokeChaincode(): never {
    throw new NotSupported("invokeChaincode")
  }
  getPrivateData(): never {
    throw new NotSupported("private data")
  }
  putPrivateData(): never {
    throw new NotSupported("private data")
  }
  setStateValidationParameter(): never {
    throw new NotSupported("state-based endorsement")
  }

  results(): Pick<SimulationResult, "reads" | "writes" | "event"> {
    return { reads: [...this.#reads.values()], writes: [...this.#writes.values()], event: this.#event }
  }
}

export interface LongLike {
  readonly low: number
  readonly high: number
  readonly unsigned: boolean
  toNumber(): number
  toString(): string
  valueOf(): number
}

const longLike = (value: number): LongLike => ({
  low: value % 2 ** 32 | 0,
  high: Math.floor(value / 2 ** 32) | 0,
  unsigned: true,
  toNumber: () => value,
  toString: () => String(value),
  valueOf: () => value
})

function validateKey(key: string): void {
  if (typeof key !== "string" || key === "") throw new Error("key must not be an empty string")
}

function validateCompositeKeyAttribute(value: string): void {
  if (typeof value !== "string" || value.includes(MIN_UNICODE_RUNE) || value.includes(MAX_UNICODE_RUNE)) {
    throw new Error(`input contains unicode 0x0 or 0x10FFFF: ${JSON.stringify(value)}`)
  }
}

/** fabric-shim's ClientIdentity over the creator certificate. */
export class DevClientIdentity {
  readonly #creator: Creator
  constructor(creator: Creator) {
    this.#creator = creator
  }
  getMSPID(): string {
    return this.#creator.mspId
  }
  getID(): string {
    const dn = (name: string) => name.split("\n").reverse().join(",")
    return `x509::${dn(this.#creator.certificate.subject)}::${dn(this.#creator.certificate.issuer)}`
  }
  getIDBytes(): Uint8Array {
    return Buffer.from(this.#creator.certPem, "utf8")
  }
  getAttributeValue(): string | null {
    return null // dev certificates carry no Fabric CA attributes
  }
  assertAttributeValue(): boolean {
    return false
  }
}

type ContractClass = new() => Contract
type ContractInstance = Contract & Record<string, unknown>
interface ContractContext {
  setChaincodeStub(stub: unknown): void
  setClientIdentity(identity: unknown): void
}

/** Routes invocations to contract instances the way fabric-shim's contract SPI does. */
export class ContractRouter {
  readonly #contracts = new Map<string, { instance: ContractInstance; functions: Set<string> }>()
  readonly #defaultName: string

  constructor(contractClasses: ReadonlyArray<ContractClass>) {
    if (contractClasses.length === 0) throw new Error("at least one contract class is required")
    const skip = new Set(Object.getOwnPropertyNames(Contract.prototype))
    for (const ContractType of contractClasses) {
      const instance = new ContractType() as ContractInstance
      if (!(instance instanceof Contract) && !(instance as { __isContract?: boolean }).__isContract) throw new Error(`${ContractType.name} is not a Contract`)
      const functions = new Set(
        Object.getOwnPropertyNames(Object.getPrototypeOf(instance)).filter(
          (name) => typeof instance[name] === "function" && name !== "constructor" && !name.startsWith("_") && !skip.has(name)
        )
      )
      this.#contracts.set(instance.getName(), { instance, functions })
    }
    this.#defaultName = [...this.#contracts.keys()][0]!
  }

  /** Contract metadata as `org.hyperledger.fabric:GetMetadata` returns it (introspected, no schemas). */
  metadata(): object {
    const contracts: Record<string, object> = {}
    for (const [name, { functions }] of this.#contracts) {
      contracts[name] = {
        name,
        ...(name === this.#defaultName ? { default: true } : {}),
        transactions: [...functions].map((fn) => ({ name: fn, tags: ["submitTx"] })),
        info: { title: "", version: "" }
      }
    }
    return { $schema: "https://hyperledger.github.io/fabric-chaincode-node/release-2.1/api/contract-schema.json", contracts, info: { title: "", version: "" },
      components: { schemas: {} } }
  }

  async invoke(invocation: Invocation, state: StateReader): Promise<SimulationResult> {
    const stub = new DevChaincodeStub(invocation, state)
    const done = (status: number, message: string, payload: Uint8Array = new Uint8Array(0)): SimulationResult => ({
      status,
      message,
      payload,
      ...(status === 200 ? stub.results() : { reads: [], writes: [], event: null })
    })
    const [fAndP, ...rest] = stub.getArgs()
    if (fAndP === undefined) return done(200, "", Buffer.from("Default initiator successful."))
    try {
      const separator = fAndP.indexOf(":")
      const contractName = separator >= 0 ? fAndP.slice(0, separator) : this.#defaultName
      const fn = separator >= 0 ? fAndP.slice(separator + 1) : fAndP
      if (contractName === "org.hyperledger.fabric" && fn === "GetMetadata") {
        return done(200, "", Buffer.from(JSON.stringify(this.metadata())))
      }
      const contract = this.#contracts.get(contractName)
      if (!contract) throw new Error(`Contract name is not known: ${contractName}`)
      const ctx = contract.instance.createContext() as unknown as ContractContext
      ctx.setChaincodeStub(stub)
      ctx.setClientIdentity(new DevClientIdentity(invocation.creator))
      if (!contract.functions.has(fn)) {
        await contract.instance.unknownTransaction(ctx as never)
        return done(200, "")
      }
      // fabric-shim's introspected metadata declares (length - 1) string parameters, and checks the count.
      const arity = (contract.instance[fn] as (...args: unknown[]) => unknown).length
      if (arity > 1 && rest.length !== arity - 1) throw new Error(`Expected ${arity - 1} parameters, but ${rest.length} have been supplied`)
      await contract.instance.beforeTransaction(ctx as never)
      const result: unknown = await contract.instance.aroundTransaction(ctx as never, fn as never, rest as never)
      await contract.instance.afterTransaction(ctx as never, result)
      return done(200, "", toWire(result))
    } catch (error) {
      // fabric-shim 2.5.8: shim.error(error.message), sent to the peer as a COMPLETED 500 response.
      return done(500, error instanceof Error ? error.message : String(error))
    }
  }
}

/** fabric-contract-api's JSONSerializer.toBuffer without a return schema. */
function toWire(result: unknown): Uint8Array {
  if (result === undefined || result === null) return new Uint8Array(0)
  if (typeof result === "string" || typeof result === "number" || typeof result === "boolean") return Buffer.from(result.toString(), "utf8")
  return Buffer.from(JSON.stringify(result), "utf8")
}
