/**
 * Companions: rows of another capability's table that exist only with their records (a time-stamp token
 * and its record: src/tsa/), committed in the records' transaction by ingest's group commit.
 */
import type { SqlClient, Statement } from "effect/sql"

/**
 * Inserts the companions of one kind, of the submissions committed together, in one statement after
 * their records. The statement is also a fragment: a group of one kind of companion for accounts without
 * a quota puts it in the records' own INSERT as a data-modifying CTE (`insertRecords`), one round trip
 * where a statement of its own takes a transaction of four (BEGIN, records, companions, COMMIT).
 */
type InsertCompanions<A> = (sql: SqlClient.SqlClient, items: ReadonlyArray<A>) => Statement.Statement<unknown>

/** The inserts of a group's companions, one per writer, in the order their writers first appear. */
type Gathered = Array<(sql: SqlClient.SqlClient) => Statement.Statement<unknown>>

/** A companion row bound to its writer (`CompanionWriter.of`), added to a gathering of the group's companions. */
export interface Companion {
  readonly gatherInto: (gathered: Gathered) => void
}

/** Makes the companions of one kind; its rows, of type `A`, are inserted together by `insert`. */
export interface CompanionWriter<A> {
  readonly of: (item: A) => Companion
}

/** One writer per kind (a module constant): the companions of a writer are grouped into one insert. */
export const companionWriter = <A>(insert: InsertCompanions<A>): CompanionWriter<A> => {
  // This writer's rows in each gathering (one gathering per commit), typed by the writer.
  const rows = new WeakMap<Gathered, Array<A>>()
  return {
    of: (item) => ({
      gatherInto: (gathered) => {
        const items = rows.get(gathered)
        if (items !== undefined) {
          items.push(item)
        } else {
          const first = [item]
          rows.set(gathered, first)
          gathered.push((sql) => insert(sql, first))
        }
      }
    })
  }
}

/** The inserts of the companions of `companions`, one per writer. */
export const gather = (companions: Iterable<Companion | undefined>): Gathered => {
  const gathered: Gathered = []
  for (const c of companions) c?.gatherInto(gathered)
  return gathered
}
