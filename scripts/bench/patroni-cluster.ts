/**
 * A Patroni cluster on one machine for `npm run soak:patroni`, from Debian's packages and the files under
 * ops/: one etcd member, three Patroni members on PostgreSQL 15 (each with its own data directory, ports and
 * REST API under a temporary directory, run as the `postgres` user when we are root), and HAProxy routing to
 * the member whose Patroni answers GET /primary. Only loopback addresses. Each member reaches etcd through
 * its own TCP switch in this process, so that one member can be cut off from etcd and nothing else.
 *
 * The operator's files are taken as written; only what is per machine is replaced: names, addresses, ports,
 * directories, passwords, pg_hba's network (and `use_proxies`, which keeps Patroni on its switch rather than
 * on the etcd URLs it would otherwise discover).
 */
import * as ChildProcess from "node:child_process"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { dump, load } from "js-yaml"
import { freePort } from "../../src/dev/EmbeddedPostgres.ts"
import { PG_BIN } from "./pg-pair.ts"
import { startTcpSwitch, type TcpSwitch } from "./tcp-switch.ts"

const root = Path.resolve(import.meta.dirname, "../..")
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const asRoot = process.getuid?.() === 0

/** What the soak runs, and the Debian package each comes from. */
const NEEDED: ReadonlyArray<{ readonly bin: string; readonly pkg: string }> = [
  { bin: "patroni", pkg: "patroni" },
  { bin: "patronictl", pkg: "patroni" },
  { bin: "etcd", pkg: "etcd-server" },
  { bin: "haproxy", pkg: "haproxy" }
]
export const APT_LINE = "apt-get install -y patroni etcd-server haproxy"

/** On PATH, or in /usr/sbin (HAProxy's place, often not on a user's PATH). */
const which = (bin: string) =>
  [...(process.env.PATH ?? "").split(":").filter((d) => d !== ""), "/usr/sbin"].map((d) => Path.join(d, bin)).find((p) => {
    try {
      Fs.accessSync(p, Fs.constants.X_OK)
      return true
    } catch {
      return false
    }
  })

/** The packages whose programs are not found (PostgreSQL 15's server binaries too). Installs nothing. */
export const missingPackages = (): Array<string> => {
  const missing = new Set(NEEDED.filter((n) => which(n.bin) === undefined).map((n) => n.pkg))
  if (!Fs.existsSync(Path.join(PG_BIN, "postgres"))) missing.add("postgresql-15")
  return [...missing]
}

/** The versions the soak ran with, for the report. */
export const versions = () => {
  const out = (cmd: string, args: Array<string>) => ChildProcess.execFileSync(Path.isAbsolute(cmd) ? cmd : which(cmd)!, args, { encoding: "utf8" })
  return {
    patroni: /(\d+\.\d+\.\d+)/.exec(out("patroni", ["--version"]))?.[1] ?? "?",
    etcd: /etcd Version: (\S+)/.exec(out("etcd", ["--version"]))?.[1] ?? "?",
    haproxy: /HAProxy version (\S+)/.exec(out("haproxy", ["-v"]))?.[1] ?? "?",
    postgres: /(\d+\.\d+)/.exec(out(Path.join(PG_BIN, "postgres"), ["--version"]))?.[1] ?? "?"
  }
}

export interface Member {
  readonly name: string
  readonly pgPort: number
  readonly restPort: number
  readonly dataDir: string
  readonly config: string
  /** Its link to etcd: cut it to partition this member from the DCS. */
  readonly etcdLink: TcpSwitch
}

interface ClusterMember {
  readonly name: string
  readonly role: string
  readonly state: string
  readonly lag?: number | string
}

export interface PatroniCluster {
  readonly dir: string
  readonly members: ReadonlyArray<Member>
  readonly haproxyPort: number
  readonly etcdPort: number
  /** A superuser URL to a database, through HAProxy (no port: HAProxy's) or directly to a port. */
  readonly url: (db: string, port?: number) => string
  readonly psql: (sql: string, port?: number, db?: string) => Promise<Array<string>>
  /** Patroni's own view (GET /cluster on the first member that answers). */
  readonly cluster: () => Promise<ReadonlyArray<ClusterMember>>
  /** GET /primary on a member: 200 on the leader only. */
  readonly isPrimary: (m: Member) => Promise<boolean>
  /** A leader and a synchronous standby, every member running and its Patroni answering, HAProxy on the leader. */
  readonly waitHealthy: (timeoutMs: number) => Promise<{ leader: Member; sync: Member | undefined }>
  /** The postmaster's pid (NaN when it is not running). */
  readonly postmasterPid: (m: Member) => number
  readonly patroniPid: (m: Member) => number
  readonly startPatroni: (m: Member) => void
  readonly patronictl: (args: Array<string>) => Promise<string>
  readonly destroy: () => Promise<void>
}

const fetchJson = async (url: string, timeoutMs = 1000): Promise<{ status: number; body: any }> => {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) })
  return { status: res.status, body: await res.json().catch(() => undefined) }
}

export interface ClusterOptions {
  /** synchronous_mode as in ops/patroni/patroni.yml (true), or turned off: asynchronous replication. */
  readonly synchronous: boolean
  /** One-way latency of each replica's link to the primary (replication and cloning; HAProxy goes direct). */
  readonly linkDelayMs: number
}

export const startPatroniCluster = async (
  log: (line: string) => void,
  { linkDelayMs, synchronous }: ClusterOptions = { synchronous: true, linkDelayMs: 0 }
): Promise<PatroniCluster> => {
  const memberCount = 3
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "anchord-patroni-"))
  Fs.chmodSync(dir, 0o755)
  const owner = asRoot ?
    {
      uid: Number(ChildProcess.execFileSync("id", ["-u", "postgres"], { encoding: "utf8" })),
      gid: Number(ChildProcess.execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }))
    } :
    undefined
  if (owner) Fs.chownSync(dir, owner.uid, owner.gid)
  const children: Array<ChildProcess.ChildProcess> = []
  const patronis = new Map<string, ChildProcess.ChildProcess>()
  const links: Array<TcpSwitch> = []
  const members: Array<Member> = []
  const superPassword = randomBytes(12).toString("hex")
  const spawnLogged = (name: string, cmd: string, args: Array<string>, asPostgres: boolean) => {
    const out = Fs.openSync(Path.join(dir, `${name}.log`), "a")
    const child = ChildProcess.spawn(cmd, args, {
      cwd: dir,
      stdio: ["ignore", out, out],
      env: { ...process.env, HOME: dir, PGPASSWORD: superPassword },
      ...(asPostgres && owner ? owner : {})
    })
    Fs.closeSync(out)
    children.push(child)
    return child
  }
  const destroy = async () => {
    for (const p of patronis.values()) p.kill("SIGTERM") // Patroni stops its PostgreSQL on the way out
    await Promise.race([Promise.all([...patronis.values()].map((p) => p.exitCode !== null ? undefined : new Promise((r) => p.once("exit", r)))), sleep(30_000)])
    for (const m of members) {
      const pid = postmasterPid(m)
      if (Number.isFinite(pid)) {
        try {
          process.kill(pid, "SIGQUIT") // immediate shutdown of a postmaster whose Patroni was killed
        } catch {}
      }
    }
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL")
    for (const l of links) await l.close()
    await sleep(1000)
    if (process.env.SOAK_KEEP_LOGS === "1") log(`cluster kept in ${dir}`)
    else Fs.rmSync(dir, { recursive: true, force: true })
  }
  const postmasterPid = (m: Member) => {
    try {
      const pid = Number(Fs.readFileSync(Path.join(m.dataDir, "postmaster.pid"), "utf8").split("\n")[0])
      process.kill(pid, 0)
      return pid
    } catch {
      return NaN
    }
  }
  try {
    // etcd: one member from ops/etcd/etcd.conf.yml, on loopback ports.
    const etcdClient = await freePort()
    const etcdPeer = await freePort()
    const etcdConf = load(Fs.readFileSync(Path.join(root, "ops/etcd/etcd.conf.yml"), "utf8")) as Record<string, unknown>
    Object.assign(etcdConf, {
      name: "etcd1",
      "data-dir": Path.join(dir, "etcd"),
      "listen-peer-urls": `http://127.0.0.1:${etcdPeer}`,
      "listen-client-urls": `http://127.0.0.1:${etcdClient}`,
      "initial-advertise-peer-urls": `http://127.0.0.1:${etcdPeer}`,
      "advertise-client-urls": `http://127.0.0.1:${etcdClient}`,
      "initial-cluster": `etcd1=http://127.0.0.1:${etcdPeer}`
    })
    Fs.writeFileSync(Path.join(dir, "etcd.conf.yml"), dump(etcdConf))
    spawnLogged("etcd", which("etcd")!, ["--config-file", Path.join(dir, "etcd.conf.yml")], false)
    for (let i = 0;; i++) {
      try {
        if ((await fetch(`http://127.0.0.1:${etcdClient}/health`)).ok) break
      } catch {}
      if (i > 300) throw new Error(`etcd did not start (${dir}/etcd.log)`)
      await sleep(100)
    }
    log(`etcd on :${etcdClient}`)

    // Patroni: ops/patroni/patroni.yml per member.
    const template = load(Fs.readFileSync(Path.join(root, "ops/patroni/patroni.yml"), "utf8")) as any
    for (let n = 1; n <= memberCount; n++) {
      const name = `pg${n}`
      const pgPort = await freePort()
      const restPort = await freePort()
      const etcdLink = await startTcpSwitch(etcdClient)
      links.push(etcdLink)
      // Other members reach this one at its connect_address: through a delaying link when asked.
      const replicationLink = linkDelayMs > 0 ? await startTcpSwitch(pgPort, linkDelayMs) : undefined
      if (replicationLink) links.push(replicationLink)
      const dataDir = Path.join(dir, name)
      const conf = structuredClone(template)
      conf.scope = "anchord-soak"
      conf.name = name
      conf.restapi = { ...conf.restapi, listen: `127.0.0.1:${restPort}`, connect_address: `127.0.0.1:${restPort}` }
      conf.etcd3 = { hosts: `127.0.0.1:${etcdLink.port}`, use_proxies: true }
      if (!synchronous) conf.bootstrap.dcs.synchronous_mode = false
      conf.bootstrap.pg_hba = [
        "local all all trust",
        "host replication replicator 127.0.0.1/32 scram-sha-256",
        "host all all 127.0.0.1/32 scram-sha-256"
      ]
      conf.postgresql = {
        ...conf.postgresql,
        listen: `127.0.0.1:${pgPort}`,
        connect_address: `127.0.0.1:${replicationLink?.port ?? pgPort}`,
        data_dir: dataDir,
        bin_dir: PG_BIN,
        pgpass: Path.join(dir, `pgpass-${name}`),
        authentication: {
          replication: { username: "replicator", password: superPassword },
          superuser: { username: "postgres", password: superPassword },
          rewind: { username: "rewind_user", password: superPassword }
        },
        parameters: { ...conf.postgresql.parameters, unix_socket_directories: dir }
      }
      const config = Path.join(dir, `${name}.yml`)
      Fs.writeFileSync(config, dump(conf))
      if (owner) Fs.chownSync(config, owner.uid, owner.gid)
      members.push({ name, pgPort, restPort, dataDir, config, etcdLink })
    }
    const startPatroni = (m: Member) => {
      patronis.set(m.name, spawnLogged(`patroni-${m.name}`, which("patroni")!, [m.config], true))
    }
    // The first bootstraps the cluster (initdb); the others clone it (pg_basebackup) once it leads.
    startPatroni(members[0]!)
    const isPrimary = (m: Member) => fetchJson(`http://127.0.0.1:${m.restPort}/primary`).then((r) => r.status === 200, () => false)
    for (let i = 0; !(await isPrimary(members[0]!)); i++) {
      if (i > 1200) throw new Error(`${members[0]!.name} did not bootstrap (${dir}/patroni-${members[0]!.name}.log)`)
      await sleep(100)
    }
    for (const m of members.slice(1)) startPatroni(m)

    // HAProxy: ops/haproxy/haproxy.cfg, its bind and servers on loopback.
    const haproxyPort = await freePort()
    const cfg = Fs.readFileSync(Path.join(root, "ops/haproxy/haproxy.cfg"), "utf8").split("\n")
    const serverLine = cfg.find((l) => /^\s*server\s/.test(l))!
    const [, indent, , , options] = /^(\s*)server\s+(\S+)\s+(\S+)\s+(.*?)\s*check port \d+\s*$/.exec(serverLine)!
    const out = cfg.filter((l) => !/^\s*server\s/.test(l)).map((l) => l.replace(/^(\s*)bind\s+\S+/, `$1bind 127.0.0.1:${haproxyPort}`))
    const at = out.findIndex((l) => /^\s*default-server\s/.test(l)) + 1
    out.splice(at, 0, ...members.map((m) => `${indent}server ${m.name} 127.0.0.1:${m.pgPort} ${options} check port ${m.restPort}`))
    const haproxyCfg = Path.join(dir, "haproxy.cfg")
    Fs.writeFileSync(haproxyCfg, out.join("\n"))
    ChildProcess.execFileSync(which("haproxy")!, ["-c", "-q", "-f", haproxyCfg])
    spawnLogged("haproxy", which("haproxy")!, ["-db", "-f", haproxyCfg], false)

    // patronictl talks to etcd directly (not through a member's link, which a fault may cut).
    const ctlConfig = Path.join(dir, "patronictl.yml")
    Fs.writeFileSync(ctlConfig, dump({ scope: "anchord-soak", namespace: template.namespace, etcd3: { hosts: `127.0.0.1:${etcdClient}` } }))
    const url = (db: string, port = haproxyPort) => `postgres://postgres:${superPassword}@127.0.0.1:${port}/${db}`
    const psql = (sql: string, port = haproxyPort, db = "postgres") =>
      new Promise<Array<string>>((resolve, reject) =>
        ChildProcess.execFile(Path.join(PG_BIN, "psql"), [url(db, port), "-At", "-X", "-c", sql], { encoding: "utf8", timeout: 30_000 }, (error, stdout) =>
          error ? reject(error) : resolve(stdout.split("\n").filter((l) => l !== "")))
      )
    const cluster = async () => {
      for (const m of members) {
        try {
          const r = await fetchJson(`http://127.0.0.1:${m.restPort}/cluster`)
          if (r.status === 200) return r.body.members as Array<ClusterMember>
        } catch {}
      }
      return []
    }
    const waitHealthy = async (timeoutMs: number) => {
      const until = Date.now() + timeoutMs
      let seen: string
      for (;;) {
        const cl = await cluster()
        seen = cl.map((c) => `${c.name} ${c.role} ${c.state}`).join(", ")
        const leader = members.find((m) => cl.some((c) => c.name === m.name && c.role === "leader" && c.state === "running"))
        const sync = members.find((m) => cl.some((c) => c.name === m.name && c.role === "sync_standby" && ["running", "streaming"].includes(c.state)))
        const allUp = cl.length === members.length && cl.every((c) => ["running", "streaming"].includes(c.state))
        if (leader && (sync || !synchronous) && allUp && await isPrimary(leader)) {
          // HAProxy has it too: a statement through it runs on the leader.
          try {
            const port = Number((await psql("SELECT current_setting('port')"))[0])
            if (port === leader.pgPort) return { leader, sync }
          } catch {}
        }
        if (Date.now() > until) throw new Error(`the cluster did not become healthy: ${seen} (logs in ${dir})`)
        await sleep(500)
      }
    }
    return {
      dir,
      members,
      haproxyPort,
      etcdPort: etcdClient,
      url,
      psql,
      cluster,
      isPrimary,
      waitHealthy,
      postmasterPid,
      patroniPid: (m) => patronis.get(m.name)?.pid ?? NaN,
      startPatroni,
      patronictl: (args) =>
        new Promise<string>((resolve, reject) =>
          ChildProcess.execFile(which("patronictl")!, ["-c", ctlConfig, ...args], { encoding: "utf8", timeout: 60_000 }, (error, stdout, stderr) =>
            error ? reject(new Error(`patronictl ${args.join(" ")}: ${stderr || error.message}`)) : resolve(stdout))
        ),
      destroy
    }
  } catch (e) {
    await destroy()
    throw e
  }
}
