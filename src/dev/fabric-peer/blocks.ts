/**
 * Blocks and transactions in Fabric's wire format: header hashing (protoutil.BlockHeaderBytes),
 * data hash, the five metadata slots, the genesis config block, filtered blocks, and the parsing of
 * endorser transaction envelopes (header, creator, read/write set, chaincode event).
 */
import { createHash, randomBytes, type KeyObject } from "node:crypto"
import { common, ledger, peer } from "@hyperledger/fabric-protos"
import { derInteger, derOctetString, derSequence } from "./identity.ts"
import { signLowS } from "./signature.ts"
import { Timestamp } from "./pb.ts"

export type TxValidationCode = peer.TxValidationCodeMap[keyof peer.TxValidationCodeMap]
export type HeaderType = common.HeaderTypeMap[keyof common.HeaderTypeMap]
export const Code = peer.TxValidationCode
export const HeaderTypes = common.HeaderType

export const sha256 = (...parts: Uint8Array[]): Buffer => {
  const hash = createHash("sha256")
  for (const part of parts) hash.update(part)
  return hash.digest()
}

/** ASN.1 DER SEQUENCE{INTEGER number, OCTET STRING previous_hash, OCTET STRING data_hash}. */
export function blockHeaderBytes(header: common.BlockHeader): Buffer {
  return derSequence(
    derInteger(BigInt(header.getNumber())),
    derOctetString(header.getPreviousHash_asU8()),
    derOctetString(header.getDataHash_asU8())
  )
}

export const blockHeaderHash = (header: common.BlockHeader): Buffer => sha256(blockHeaderBytes(header))

/** sha256 of the concatenated data entries (protoutil.ComputeBlockDataHash). */
export const blockDataHash = (data: Uint8Array[]): Buffer => sha256(...data)

export interface VersionRef {
  readonly blockNum: number
  readonly txNum: number
}
export interface ReadEntry {
  readonly namespace: string
  readonly key: string
  readonly version: VersionRef | null
}
export interface WriteEntry {
  readonly namespace: string
  readonly key: string
  readonly value: Uint8Array
  readonly isDelete: boolean
}
export interface EventEntry {
  readonly chaincodeId: string
  readonly txId: string
  readonly eventName: string
  readonly payload: Uint8Array
}

/** What the ledger needs to know about one envelope. */
export interface ParsedTx {
  readonly txId: string
  readonly type: HeaderType
  readonly channelId: string
  readonly creator: Uint8Array
  readonly nonce: Uint8Array
  readonly signature: Uint8Array
  readonly payload: Uint8Array
  readonly reads: ReadEntry[]
  readonly writes: WriteEntry[]
  readonly event: EventEntry | null
  /** Of the (single) chaincode action: the endorsed payload and its endorsements. */
  readonly proposalResponsePayload: Uint8Array
  readonly endorsements: Array<{ readonly endorser: Uint8Array; readonly signature: Uint8Array }>
}

/** Parses an envelope; throws with a TxValidationCode-shaped reason if it is malformed. */
export function parseEnvelope(envelopeBytes: Uint8Array): ParsedTx {
  const envelope = common.Envelope.deserializeBinary(envelopeBytes)
  const payloadBytes = envelope.getPayload_asU8()
  const payload = common.Payload.deserializeBinary(payloadBytes)
  const header = payload.getHeader()
  if (!header) throw new Error("BAD_COMMON_HEADER: missing header")
  const channelHeader = common.ChannelHeader.deserializeBinary(header.getChannelHeader_asU8())
  const signatureHeader = common.SignatureHeader.deserializeBinary(header.getSignatureHeader_asU8())
  const parsed = {
    txId: channelHeader.getTxId(),
    type: channelHeader.getType() as HeaderType,
    channelId: channelHeader.getChannelId(),
    creator: signatureHeader.getCreator_asU8(),
    nonce: signatureHeader.getNonce_asU8(),
    signature: envelope.getSignature_asU8(),
    payload: payloadBytes,
    reads: [] as ReadEntry[],
    writes: [] as WriteEntry[],
    event: null as EventEntry | null,
    proposalResponsePayload: new Uint8Array(0) as Uint8Array,
    endorsements: [] as ParsedTx["endorsements"]
  }
  if (parsed.type !== HeaderTypes.ENDORSER_TRANSACTION) return parsed

  const transaction = peer.Transaction.deserializeBinary(payload.getData_asU8())
  const actions = transaction.getActionsList()
  if (actions.length !== 1) throw new Error("INVALID_ENDORSER_TRANSACTION: expected exactly one action")
  for (const action of actions) {
    const actionPayload = peer.ChaincodeActionPayload.deserializeBinary(action.getPayload_asU8())
    const endorsed = actionPayload.getAction()
    if (!endorsed) throw new Error("INVALID_ENDORSER_TRANSACTION: missing endorsed action")
    parsed.proposalResponsePayload = endorsed.getProposalResponsePayload_asU8()
    parsed.endorsements = endorsed.getEndorsementsList().map((e) => ({ endorser: e.getEndorser_asU8(), signature: e.getSignature_asU8() }))
    const responsePayload = peer.ProposalResponsePayload.deserializeBinary(parsed.proposalResponsePayload)
    const chaincodeAction = peer.ChaincodeAction.deserializeBinary(responsePayload.getExtension_asU8())
    const rwset = ledger.rwset.TxReadWriteSet.deserializeBinary(chaincodeAction.getResults_asU8())
    for (const ns of rwset.getNsRwsetList()) {
      const namespace = ns.getNamespace()
      const kv = ledger.rwset.kvrwset.KVRWSet.deserializeBinary(ns.getRwset_asU8())
      for (const read of kv.getReadsList()) {
        const version = read.getVersion()
        parsed.reads.push({
          namespace,
          key: read.getKey(),
          version: version ? { blockNum: version.getBlockNum(), txNum: version.getTxNum() } : null
        })
      }
      for (const write of kv.getWritesList()) {
        parsed.writes.push({ namespace, key: write.getKey(), value: write.getValue_asU8(), isDelete: write.getIsDelete() })
      }
    }
    const eventBytes = chaincodeAction.getEvents_asU8()
    if (eventBytes.length > 0) {
      const event = peer.ChaincodeEvent.deserializeBinary(eventBytes)
      if (event.getEventName() !== "") {
        parsed.event = {
          chaincodeId: event.getChaincodeId(),
          txId: event.getTxId(),
          eventName: event.getEventName(),
          payload: event.getPayload_asU8()
        }
      }
    }
  }
  return parsed
}

/** A committed block with the per-transaction facts the services need. */
export interface StoredBlock {
  readonly number: number
  readonly block: common.Block
  readonly bytes: Uint8Array
  readonly headerHash: Buffer
  readonly txs: ReadonlyArray<{ readonly txId: string; readonly type: HeaderType; readonly code: TxValidationCode; readonly event: EventEntry | null }>
}

export interface BlockSigner {
  readonly identity: Uint8Array // serialized msp.SerializedIdentity
  readonly key: KeyObject
}

function metadataBytes(value: Uint8Array, signatures: common.MetadataSignature[] = []): Uint8Array {
  const metadata = new common.Metadata()
  metadata.setValue(value)
  metadata.setSignaturesList(signatures)
  return metadata.serializeBinary()
}

/** Cuts a block: hash chain, data hash, and metadata [SIGNATURES, LAST_CONFIG, TRANSACTIONS_FILTER, ORDERER, COMMIT_HASH]. */
export function buildBlock(args: {
  number: number
  previousHash: Uint8Array
  envelopes: Uint8Array[]
  codes: TxValidationCode[]
  lastConfig: number
  commitHash: Uint8Array
  signer: BlockSigner
}): common.Block {
  const header = new common.BlockHeader()
  header.setNumber(args.number)
  header.setPreviousHash(args.previousHash)
  header.setDataHash(blockDataHash(args.envelopes))
  const data = new common.BlockData()
  data.setDataList(args.envelopes)

  const lastConfig = new common.LastConfig()
  lastConfig.setIndex(args.lastConfig)
  const ordererMetadata = new common.OrdererBlockMetadata()
  ordererMetadata.setLastConfig(lastConfig)
  const signatureHeader = new common.SignatureHeader()
  signatureHeader.setCreator(args.signer.identity)
  signatureHeader.setNonce(randomBytes(24))
  const value = ordererMetadata.serializeBinary()
  const signatureHeaderBytes = signatureHeader.serializeBinary()
  const signature = new common.MetadataSignature()
  signature.setSignatureHeader(signatureHeaderBytes)
  signature.setSignature(signLowS(args.signer.key, Buffer.concat([value, signatureHeaderBytes, blockHeaderBytes(header)])))

  const metadata = new common.BlockMetadata()
  metadata.setMetadataList([
    metadataBytes(value, [signature]),
    metadataBytes(lastConfig.serializeBinary()),
    Uint8Array.from(args.codes),
    new Uint8Array(0),
    metadataBytes(args.commitHash)
  ])
  const block = new common.Block()
  block.setHeader(header)
  block.setData(data)
  block.setMetadata(metadata)
  return block
}

/** The config transaction of block 0 (a minimal, empty channel config). */
export function genesisEnvelope(channelId: string, signer: BlockSigner, time: Date): Uint8Array {
  const channelHeader = new common.ChannelHeader()
  channelHeader.setType(HeaderTypes.CONFIG)
  channelHeader.setChannelId(channelId)
  channelHeader.setTimestamp(Timestamp.fromDate(time))
  const signatureHeader = new common.SignatureHeader()
  signatureHeader.setCreator(signer.identity)
  signatureHeader.setNonce(randomBytes(24))
  const header = new common.Header()
  header.setChannelHeader(channelHeader.serializeBinary())
  header.setSignatureHeader(signatureHeader.serializeBinary())
  const config = new common.Config()
  config.setSequence(0)
  config.setChannelGroup(new common.ConfigGroup())
  const configEnvelope = new common.ConfigEnvelope()
  configEnvelope.setConfig(config)
  const payload = new common.Payload()
  payload.setHeader(header)
  payload.setData(configEnvelope.serializeBinary())
  const payloadBytes = payload.serializeBinary()
  const envelope = new common.Envelope()
  envelope.setPayload(payloadBytes)
  envelope.setSignature(signLowS(signer.key, payloadBytes))
  return envelope.serializeBinary()
}

/** `peer.FilteredBlock` view of a stored block (chaincode events without payloads). */
export function filteredBlock(channelId: string, stored: StoredBlock): peer.FilteredBlock {
  const filtered = new peer.FilteredBlock()
  filtered.setChannelId(channelId)
  filtered.setNumber(stored.number)
  filtered.setFilteredTransactionsList(
    stored.txs.map((tx) => {
      const ftx = new peer.FilteredTransaction()
      ftx.setTxid(tx.txId)
      ftx.setType(tx.type)
      ftx.setTxValidationCode(tx.code)
      if (tx.type === HeaderTypes.ENDORSER_TRANSACTION) {
        const actions = new peer.FilteredTransactionActions()
        if (tx.event) {
          const action = new peer.FilteredChaincodeAction()
          action.setChaincodeEvent(chaincodeEvent(tx.event, false))
          actions.setChaincodeActionsList([action])
        }
        ftx.setTransactionActions(actions)
      }
      return ftx
    })
  )
  return filtered
}

export function chaincodeEvent(event: EventEntry, withPayload = true): peer.ChaincodeEvent {
  const message = new peer.ChaincodeEvent()
  message.setChaincodeId(event.chaincodeId)
  message.setTxId(event.txId)
  message.setEventName(event.eventName)
  if (withPayload) message.setPayload(event.payload)
  return message
}
