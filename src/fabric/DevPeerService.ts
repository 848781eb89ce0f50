/**
 * The Fabric gateway dev peer as a scoped service: `anchord dev` runs one under the data directory
 * (state survives restarts) and `anchord fabric-devpeer` runs one on its own. A development peer,
 * not a Fabric network: see docs/fabric-devpeer.md.
 */
import * as Path from "node:path"
import { Context, Effect, Layer } from "effect"
import { type DevPeer, type DevPeerOptions, startDevPeer } from "./devpeer/index.ts"

export class FabricDevPeer extends Context.Service<FabricDevPeer, DevPeer>()("anchord/fabric/FabricDevPeer") {
  static readonly layer = (options: DevPeerOptions) =>
    Layer.effect(
      FabricDevPeer,
      Effect.acquireRelease(
        Effect.promise(() => startDevPeer(options)),
        (peer) => Effect.promise(() => peer.close())
      )
    )

  /** Port 7051 (Fabric's usual peer port) when free, else any free port. */
  static readonly layerDev = (dataDir: string) =>
    Layer.unwrap(Effect.promise(async () => {
      const { isPortFree } = await import("../db/EmbeddedPostgres.ts")
      const port = (await isPortFree(7051)) ? 7051 : 0
      return FabricDevPeer.layer({ dataDir: Path.resolve(dataDir, "fabric-devpeer"), port })
    }))
}
