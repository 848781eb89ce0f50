/**
 * Reading Fabric blocks as the indexer needs them (what fabric-samples' off_chain_data reads): the
 * header hash chain, the data hash, the validation code of each transaction (TRANSACTIONS_FILTER),
 * and the `Anchored` chaincode events of VALID endorser transactions. Independent of the dev peer.
 */
import { common, peer } from "@hyperledger/fabric-protos"
import { createHash } from "node:crypto"

const sha256 = (...parts: ReadonlyArray<Uint8Array>) => {
  const h = createHash("sha256")
  for (const p of parts) h.update(p)
  return h.digest()
}

const derLength = (n: number) => {
  if (n < 0x80) return Buffer.from([n])
  const bytes: Array<number> = []
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff)
  return Buffer.from([0x80 | bytes.length, ...bytes])
}
const tlv = (tag: number, content: Buffer) => Buffer.concat([Buffer.from([tag]), derLength(content.length), content])
const derInteger = (value: bigint) => {
  let hex = value.toString(16)
  if (hex.length % 2) hex = "0" + hex
  let bytes = Buffer.from(hex, "hex")
  if (bytes[0]! & 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes])
  return tlv(0x02, bytes)
}

/** Fabric's block hash: SHA-256 of the DER `SEQUENCE{INTEGER number, OCTET STRING previous_hash, OCTET STRING data_hash}`. */
export const headerHash = (number: bigint, previousHash: Uint8Array, dataHash: Uint8Array): Buffer =>
  sha256(tlv(0x30, Buffer.concat([derInteger(number), tlv(0x04, Buffer.from(previousHash)), tlv(0x04, Buffer.from(dataHash))])))

export interface AnchoredEvent {
  readonly txId: string
  readonly root: string
  readonly leafCount: number
  readonly batchId: string
  /** The transaction's timestamp (the chaincode takes it from the proposal, never its clock). */
  readonly timestamp: Date
}

export interface ParsedBlock {
  readonly number: bigint
  /** Header hash of this block, lowercase hex (no 0x). */
  readonly hash: string
  /** previous_hash from the header, lowercase hex. */
  readonly previousHash: string
  readonly dataHashOk: boolean
  readonly txCount: number
  readonly lastTxId: string | null
  /** `Anchored` events of the given chaincode in VALID transactions, in block order. */
  readonly anchors: ReadonlyArray<AnchoredEvent>
}

const VALID = 0

export const parseBlock = (block: common.Block, chaincode: string, eventName = "Anchored"): ParsedBlock => {
  const header = block.getHeader()
  if (header === undefined) throw new Error("block without a header")
  const number = BigInt(header.getNumber())
  const data = block.getData()?.getDataList_asU8() ?? []
  const dataHashOk = Buffer.from(header.getDataHash_asU8()).equals(sha256(...data))
  const metadata = block.getMetadata()?.getMetadataList_asU8() ?? []
  const filter = metadata[common.BlockMetadataIndex.TRANSACTIONS_FILTER] ?? new Uint8Array(0)
  const anchors: Array<AnchoredEvent> = []
  let lastTxId: string | null = null
  data.forEach((bytes, i) => {
    let payload: common.Payload
    let channelHeader: common.ChannelHeader
    try {
      payload = common.Payload.deserializeBinary(common.Envelope.deserializeBinary(bytes).getPayload_asU8())
      channelHeader = common.ChannelHeader.deserializeBinary(payload.getHeader()!.getChannelHeader_asU8())
    } catch {
      return
    }
    if (channelHeader.getTxId() !== "") lastTxId = channelHeader.getTxId()
    if (filter[i] !== VALID || channelHeader.getType() !== common.HeaderType.ENDORSER_TRANSACTION) return
    const tx = peer.Transaction.deserializeBinary(payload.getData_asU8())
    for (const action of tx.getActionsList()) {
      const actionPayload = peer.ChaincodeActionPayload.deserializeBinary(action.getPayload_asU8())
      const response = peer.ProposalResponsePayload.deserializeBinary(actionPayload.getAction()!.getProposalResponsePayload_asU8())
      const chaincodeAction = peer.ChaincodeAction.deserializeBinary(response.getExtension_asU8())
      const eventBytes = chaincodeAction.getEvents_asU8()
      if (eventBytes.length === 0) continue
      const event = peer.ChaincodeEvent.deserializeBinary(eventBytes)
      if (event.getChaincodeId() !== chaincode || event.getEventName() !== eventName) continue
      try {
        const p = JSON.parse(Buffer.from(event.getPayload_asU8()).toString("utf8")) as Record<string, unknown>
        if (typeof p.root !== "string" || typeof p.batchId !== "string") continue
        const ts = channelHeader.getTimestamp()
        const fromHeader = ts === undefined ? undefined : new Date(ts.getSeconds() * 1000 + Math.floor(ts.getNanos() / 1e6))
        anchors.push({
          txId: channelHeader.getTxId(),
          root: p.root.toLowerCase(),
          leafCount: Number(p.leafCount),
          batchId: p.batchId,
          timestamp: typeof p.timestamp === "string" ? new Date(p.timestamp) : fromHeader ?? new Date(0)
        })
      } catch {
        // not our payload
      }
    }
  })
  return {
    number,
    hash: headerHash(number, header.getPreviousHash_asU8(), header.getDataHash_asU8()).toString("hex"),
    previousHash: Buffer.from(header.getPreviousHash_asU8()).toString("hex"),
    dataHashOk,
    txCount: data.length,
    lastTxId,
    anchors
  }
}
