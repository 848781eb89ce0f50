/**
 * The Fabric gateway dev peer as a scoped service: `anchord dev` runs one under the data directory
 * (state survives restarts) and `anchord fabric-devpeer` runs one on its own. A development peer,
 * not a Fabric network: see docs/fabric-devpeer.md.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Config, Context, Effect, Layer } from "effect"
import { type DevPeer, type DevPeerOptions, startDevPeer } from "./fabric-peer/index.ts"

/** `anchord dev` writes it: what `anchord verify --fabric-profile` needs to reach the dev peer. */
export const devFabricProfilePath = (dataDir: string) => Path.resolve(dataDir, "fabric-profile.json")

/**
 * The ports the peer tries in turn: the configured one (7051, Fabric's usual; 0 asks for none), the
 * one used last time, any free port — the one bound is remembered, so a profile printed once keeps
 * working. Tried by binding, not checked first: a check and a later bind let a second dev node
 * starting at the same moment take the port in between.
 */
const stablePorts = (wanted: number, portFile: string): ReadonlyArray<number> => {
  const last = Fs.existsSync(portFile) ? Number(Fs.readFileSync(portFile, "utf8")) : 0
  return [...new Set([wanted, Number.isInteger(last) ? last : 0, 0].filter((p, i, all) => p > 0 || i === all.length - 1))]
}

export class FabricDevPeer extends Context.Service<FabricDevPeer, DevPeer>()("anchord/fabric/FabricDevPeer") {
  static readonly layer = (options: DevPeerOptions) =>
    Layer.effect(
      FabricDevPeer,
      Effect.acquireRelease(
        Effect.promise(() => startDevPeer(options)),
        (peer) => Effect.promise(() => peer.close())
      )
    )

  /** `anchord dev`'s peer: a stable port (DEV_FABRIC_PORT, default 7051) and a connection profile written. */
  static readonly layerDev = (dataDir: string) =>
    Layer.unwrap(Effect.gen(function*() {
      const wanted = yield* Config.Int("DEV_FABRIC_PORT").pipe(Config.withDefault(7051))
      const dir = Path.resolve(dataDir, "fabric-devpeer")
      const portFile = Path.join(dir, "port")
      const ports = stablePorts(wanted, portFile)
      return Layer.effect(
        FabricDevPeer,
        Effect.gen(function*() {
          const peer = yield* Effect.acquireRelease(
            Effect.promise(() => startDevPeer({ dataDir: dir, ports })),
            (peer) => Effect.promise(() => peer.close())
          )
          Fs.writeFileSync(portFile, String(peer.port))
          Fs.writeFileSync(devFabricProfilePath(dataDir), JSON.stringify({
            peerEndpoint: peer.address,
            mspId: peer.mspId,
            certPath: peer.clientIdentity.certPath,
            keyPath: peer.clientIdentity.keyPath,
            channel: peer.channel,
            chaincode: peer.chaincode
          }, null, 2) + "\n")
          return peer
        })
      )
    }))
}
