/**
 * The transparency log's store (src/translog/LogStore.ts) on real PostgreSQL, held to src/tlog's in-memory
 * reference (src/tlog/memory.ts, the RFC 9162 definitions): batches cut by the real BatchStore, ranges assigned,
 * truncated and published in a seeded random order; after every step the head, the proofs, every stored hash,
 * the entries and the published checkpoint equal what the reference computes over the same leaves.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { beforeAll } from "vitest"
import { BatchStore } from "../../src/anchoring/BatchStore.ts"
import * as Crypto from "node:crypto"
import { Result } from "effect"
import { type AssignedRange, CheckpointSigner, LogStore } from "../../src/translog/LogStore.ts"
import { openCheckpoint } from "../../src/tlog/checkpoint.ts"
import { ed25519NoteSigner, parseVerifierKey } from "../../src/tlog/note.ts"
import { leafHash } from "../../src/tlog/hash.ts"
import { consistencyProof, inclusionProof, memoryHashReader, merkleTreeHash } from "../../src/tlog/memory.ts"
import { proveInclusion } from "../../src/tlog/proofs.ts"
import { appendHashes, storedHashCount } from "../../src/tlog/tree.ts"
import { hexId, withDatabaseServices } from "../support/clock.ts"
import { freshDatabase } from "../support/db.ts"

let url = ""
beforeAll(async () => {
  url = await freshDatabase()
})
const withStores = withDatabaseServices(() => url, Layer.mergeAll(BatchStore.layer, LogStore.layer))

const evmMeta = { chainType: "evm", chainId: 31337, contractAddress: "0x5FbDB2315678afecb367f032d93F642f64180aa3" } as const

/** mulberry32: a small seeded generator, so a failure replays. */
const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex")
const hexAll = (bs: ReadonlyArray<Uint8Array>) => bs.map(hex)

/** `count` QUEUED EVM records of a fresh account on `net`, random hashes. */
const queueRecords = (net: string, count: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const account = `acc_${hexId()}`
    yield* sql`INSERT INTO accounts (id, name, plan) VALUES (${account}, 'log', 'ENTERPRISE')`
    yield* sql`
      INSERT INTO records (id, account_id, environment, hash, status, chain_type, network_id, package_mode, source)
      SELECT substr(md5(random()::text || i::text), 1, 24), ${account}, 'test', md5(random()::text) || md5(random()::text), 'QUEUED', 'evm', ${net},
        'SEPARATED', 'hash'
      FROM generate_series(1, ${count}) i`
  })

describe("LogStore (real PostgreSQL)", () => {
  it.effect("random assign / truncate / publish sequences equal the in-memory log", () =>
    Effect.gen(function*() {
      const batches = yield* BatchStore
      const logs = yield* LogStore
      const net = `evm-log-${hexId(6)}`
      yield* queueRecords(net, 400)
      const random = prng(20261128)

      /** The model: batches in log order (each with its leaves), the unassigned pool, how many are published. */
      const logged: Array<{ id: string; leaves: ReadonlyArray<Uint8Array> }> = []
      const pool: Array<{ id: string; leaves: ReadonlyArray<Uint8Array> }> = []
      let published = 0
      const allLeaves = () => logged.flatMap((b) => b.leaves)

      const check = Effect.gen(function*() {
        const leaves = allLeaves()
        const hashes = leaves.map(leafHash)
        const head = yield* logs.head(net)
        assert.strictEqual(head.size, leaves.length)
        assert.strictEqual(hex(head.root), hex(merkleTreeHash(hashes)))
        const count = storedHashCount(leaves.length)
        // Every stored hash, as a tile reader asks: each index once, in order.
        const stored = yield* logs.hashReader(net).readHashes(Array.from({ length: count }, (_, i) => i))
        const reference: Array<Uint8Array> = []
        for (let i = 0; i < leaves.length; i++) reference.push(...(yield* appendHashes(i, [leaves[i]!], memoryHashReader(reference))))
        assert.deepStrictEqual(hexAll(stored), hexAll(reference))
        assert.deepStrictEqual(hexAll(yield* logs.entries(net, 0, leaves.length)), hexAll(leaves))
        if (leaves.length > 0) {
          const index = Math.floor(random() * leaves.length)
          const proof = yield* proveInclusion(index, leaves.length, logs.hashReader(net))
          assert.deepStrictEqual(hexAll(proof), hexAll(inclusionProof(hashes, index)))
        }
        const latest = yield* logs.latestCheckpoint(net)
        if (published === 0) assert.isUndefined(latest)
        else {
          const size = logged.slice(0, published).reduce((n, b) => n + b.leaves.length, 0)
          assert.strictEqual(latest?.size, size)
          assert.strictEqual(hex(latest!.root), hex(merkleTreeHash(hashes, size)))
          assert.strictEqual(latest?.batchId, logged[published - 1]!.id)
        }
      })

      const checkAssigned = (r: AssignedRange, leaves: ReadonlyArray<Uint8Array>) => {
        const hashes = leaves.map(leafHash)
        assert.strictEqual(r.newSize, leaves.length)
        assert.strictEqual(hex(r.oldRoot), hex(merkleTreeHash(hashes, r.oldSize)))
        assert.strictEqual(hex(r.newRoot), hex(merkleTreeHash(hashes)))
        assert.deepStrictEqual(hexAll(r.consistency), r.oldSize === 0 ? [] : hexAll(consistencyProof(hashes, r.oldSize)))
      }

      let steps = 0
      for (let step = 0; step < 120; step++) {
        const roll = random()
        if (roll < 0.35) {
          const cut = yield* batches.cutBatch(net, 1 + Math.floor(random() * 17), evmMeta)
          if (cut !== undefined) pool.push({ id: cut.batchId, leaves: yield* logs.batchLeaves(cut.batchId, cut.leafCount) })
        } else if (roll < 0.7 && pool.length > 0) {
          const [b] = pool.splice(Math.floor(random() * pool.length), 1)
          const r = yield* logs.assign(net, b!.id, b!.leaves)
          logged.push(b!)
          checkAssigned(r, allLeaves())
          // Again: the same range back, nothing appended.
          const again = yield* logs.assign(net, b!.id, b!.leaves)
          assert.deepStrictEqual({ ...again, consistency: hexAll(again.consistency) }, { ...r, consistency: hexAll(r.consistency) })
        } else if (roll < 0.85 && logged.length > published) {
          const at = published + Math.floor(random() * (logged.length - published))
          const later = yield* logs.truncateFrom(logged[at]!.id)
          assert.deepStrictEqual(later, logged.slice(at + 1).map((b) => b.id))
          pool.push(...logged.splice(at))
        } else if (logged.length > published) {
          const cp = yield* logs.publish(logged[published]!.id)
          published++
          assert.strictEqual(cp?.size, logged.slice(0, published).reduce((n, b) => n + b.leaves.length, 0))
        } else continue
        steps++
        yield* check
      }
      assert.isAbove(published, 3)
      assert.isAbove(allLeaves().length, 50)
      assert.isAbove(steps, 60)

      // A published range is the chain's: cutting it is a bug, refused.
      const refused = yield* logs.truncateFrom(logged[0]!.id).pipe(Effect.exit)
      assert.isTrue(Exit.hasDies(refused))
      // A batch with no range truncates nothing.
      if (pool.length > 0) assert.deepStrictEqual(yield* logs.truncateFrom(pool[0]!.id), [])
      yield* check
    }).pipe(withStores), 120_000)

  it.effect("assigns at once on one network serialize on its head: contiguous ranges, one log", () =>
    Effect.gen(function*() {
      const batches = yield* BatchStore
      const logs = yield* LogStore
      const net = `evm-log-${hexId(6)}`
      yield* queueRecords(net, 64)
      const cut: Array<{ id: string; leaves: ReadonlyArray<Uint8Array> }> = []
      for (let i = 0; i < 8; i++) {
        const b = yield* batches.cutBatch(net, 8, evmMeta)
        cut.push({ id: b!.batchId, leaves: yield* logs.batchLeaves(b!.batchId, b!.leafCount) })
      }
      const ranges = yield* Effect.all(cut.map((b) => logs.assign(net, b.id, b.leaves)), { concurrency: "unbounded" })
      const byStart = ranges.map((r, i) => ({ r, leaves: cut[i]!.leaves })).sort((a, b) => a.r.oldSize - b.r.oldSize)
      const leaves: Array<Uint8Array> = []
      for (const { leaves: l, r } of byStart) {
        assert.strictEqual(r.oldSize, leaves.length)
        leaves.push(...l)
        assert.strictEqual(hex(r.newRoot), hex(merkleTreeHash(leaves.map(leafHash))))
      }
      const head = yield* logs.head(net)
      assert.strictEqual(head.size, 64)
      assert.strictEqual(hex(head.root), hex(merkleTreeHash(leaves.map(leafHash))))
    }).pipe(withStores), 60_000)

  it.effect("with a CheckpointSigner, a published checkpoint carries its C2SP signed note", () =>
    Effect.gen(function*() {
      const batches = yield* BatchStore
      const logs = yield* LogStore
      const net = `evm-log-${hexId(6)}`
      yield* queueRecords(net, 5)
      const b = (yield* batches.cutBatch(net, 5, evmMeta))!
      const leaves = yield* logs.batchLeaves(b.batchId, b.leafCount)
      const r = yield* logs.assign(net, b.batchId, leaves)
      const { privateKey } = Crypto.generateKeyPairSync("ed25519")
      const signer = ed25519NoteSigner("anchord.test/log", privateKey)
      const origin = `anchord.test/log/${net}`
      const cp = yield* logs.publish(b.batchId).pipe(Effect.provideService(CheckpointSigner, { origin: () => origin, signer: () => signer }))
      const opened = openCheckpoint(cp!.note!, origin, [Result.getOrThrow(parseVerifierKey(signer.verifierKey))])
      assert.isTrue(Result.isSuccess(opened), String(cp?.note))
      const checkpoint = Result.getOrThrow(opened).checkpoint
      assert.strictEqual(checkpoint.size, 5)
      assert.strictEqual(hex(checkpoint.root), hex(r.newRoot))
      assert.strictEqual((yield* logs.latestCheckpoint(net))?.note, cp!.note)
    }).pipe(withStores), 60_000)
})
