/**
 * A TCP switch the failover soak controls: the stand-in for the endpoint an HA manager moves (a virtual
 * IP held by vip-manager, an HAProxy backend chosen by Patroni's health check, PgBouncer's target).
 * `@effect/sql-pg`'s own driver takes one host: it refuses a multi-host URL ("Invalid connection URL")
 * and ignores `target_session_attrs` (docs/operating.md, "PostgreSQL high availability"), so the nodes
 * reach PostgreSQL through one address and the switch decides what is behind it.
 *
 * Pointed at nothing (between the primary's death and the promotion), a new connection is accepted and
 * closed at once, as HAProxy does with no healthy backend; moving it closes every connection to the
 * old target, as a VIP move or a PgBouncer reconnect does.
 */
import * as Net from "node:net"

export interface TcpSwitch {
  readonly port: number
  /** Routes new connections to `port` (undefined: none), closing those open to the previous target. */
  readonly point: (port: number | undefined) => void
  readonly close: () => Promise<void>
}

/**
 * `delayMs`: every chunk is forwarded that much later, each way (a link's one-way latency: used for the
 * standby's replication connection, where it stands for the distance to another zone).
 */
export const startTcpSwitch = async (target: number | undefined, delayMs = 0): Promise<TcpSwitch> => {
  let current = target
  const open = new Set<Net.Socket>()
  const server = Net.createServer((client) => {
    if (current === undefined) return void client.destroy()
    const upstream = Net.connect(current, "127.0.0.1")
    open.add(client).add(upstream)
    const end = () => {
      client.destroy()
      upstream.destroy()
      open.delete(client)
      open.delete(upstream)
    }
    client.on("error", end).on("close", end)
    upstream.on("error", end).on("close", end)
    if (delayMs === 0) {
      client.pipe(upstream)
      upstream.pipe(client)
    } else {
      // Timers of one duration fire in the order they were set: the bytes keep their order.
      const late = (to: Net.Socket) => (chunk: Buffer) => void setTimeout(() => to.destroyed || to.write(chunk), delayMs)
      client.on("data", late(upstream))
      upstream.on("data", late(client))
    }
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    port: (server.address() as Net.AddressInfo).port,
    point: (port) => {
      current = port
      for (const s of open) s.destroy()
      open.clear()
    },
    close: () => {
      for (const s of open) s.destroy()
      return new Promise((resolve) => server.close(() => resolve()))
    }
  }
}
