/**
 * What doctor says about replication, from the server DATABASE_URL leads to: a standby (anchord writes to
 * the primary only: fatal), a primary with a synchronous standby streaming (a 202 is on two servers), a
 * primary whose standbys are all asynchronous (a failover can lose records already answered 202), or a
 * single server. A cluster managed by Patroni is named by its `cluster_name` (Patroni sets it to the scope).
 */
import { Effect, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { rowDefects } from "../db/rows.ts"
import { type CheckResult, fatal, ok, warn } from "./result.ts"

const HA_DOC = "docs/operating.md, \"Patroni, etcd and HAProxy: the tested setup\""

export const replicationCheck = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const server = yield* rowDefects(SqlSchema.findOne({
    Request: Schema.Void,
    Result: Schema.Struct({ standby: Schema.Boolean, names: Schema.String, commit: Schema.String, cluster: Schema.String }),
    execute: () =>
      sql`SELECT pg_is_in_recovery() AS standby, current_setting('synchronous_standby_names') AS names,
        current_setting('synchronous_commit') AS commit, current_setting('cluster_name') AS cluster`
  })())
  const where = server.cluster === "" ? "" : ` of cluster "${server.cluster}"`
  if (server.standby) {
    return fatal("replication", `DATABASE_URL leads to a standby${where} (in recovery): anchord writes to the primary only`,
      `point DATABASE_URL at the endpoint that follows the primary (HAProxy checking Patroni's GET /primary, ${HA_DOC})`)
  }
  // sync_state is NULL for a role without pg_read_all_stats (pg_monitor): then it is not known.
  const standbys = yield* rowDefects(SqlSchema.findAll({
    Request: Schema.Void,
    Result: Schema.Struct({ name: Schema.String, state: Schema.NullOr(Schema.String) }),
    execute: () => sql`SELECT coalesce(application_name, '') AS name, sync_state AS state FROM pg_stat_replication`
  })())
  const sync = standbys.filter((s) => s.state === "sync" || s.state === "quorum")
  const commit = `synchronous_commit ${server.commit}`
  if (sync.length > 0) {
    return server.commit === "local" || server.commit === "off"
      ? warn("replication", `primary${where} with a synchronous standby (${sync.map((s) => s.name).join(", ")}), but ${commit}: commits do not wait for it`,
        "set synchronous_commit = on")
      : ok("replication", `primary${where}, synchronous standby ${sync.map((s) => s.name).join(", ")} streaming, ${commit}: a 202 is on two servers`)
  }
  if (standbys.some((s) => s.state === null)) {
    return warn("replication", `primary${where} with ${standbys.length} standby(s) whose state this role cannot read`,
      "GRANT pg_monitor TO the node's role, so that doctor can tell whether a synchronous standby is streaming")
  }
  if (server.names !== "") {
    return warn("replication", `synchronous_standby_names = '${server.names}' but no synchronous standby is streaming: commits wait for one`,
      `bring a standby back (${HA_DOC})`)
  }
  if (standbys.length > 0) {
    return warn("replication", `primary${where} with ${standbys.length} asynchronous standby(s) (${
      standbys.map((s) => s.name).join(", ")
    }): a failover can lose records already answered 202`, `synchronous replication (Patroni: synchronous_mode: true; ${HA_DOC})`)
  }
  return ok("replication", `a single server${where} (no standby streaming), ${commit}: see ${HA_DOC} for failover`)
}) as Effect.Effect<CheckResult, unknown, SqlClient.SqlClient>
