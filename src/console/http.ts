/**
 * Handlers of the console's API (src/api/console.ts, src/api/consoleAreas.ts), one file per area in
 * ./handlers/: signing in and the session (session.ts), operators (operators.ts), one account and its
 * keys (accounts.ts), its webhook and deliveries (webhooks.ts), its records (records.ts), its members
 * (members.ts). They read and change through the capabilities' own services; what is the console's is
 * who may do what (./handlers/access.ts). Domain errors go to the wire through `atEdge`, like every
 * handler's.
 */
import { Layer } from "effect"
import { ConsoleAccountsHttpLayer } from "./handlers/accounts.ts"
import { ConsoleMembersHttpLayer } from "./handlers/members.ts"
import { ConsoleOperatorsHttpLayer } from "./handlers/operators.ts"
import { ConsoleRecordsHttpLayer } from "./handlers/records.ts"
import { ConsoleAuthHttpLayer, ConsoleSessionHttpLayer } from "./handlers/session.ts"
import { ConsoleWebhooksHttpLayer } from "./handlers/webhooks.ts"

/** Every group of the console's API, implemented. */
export const ConsoleHttpLayer = Layer.mergeAll(
  ConsoleAuthHttpLayer,
  ConsoleSessionHttpLayer,
  ConsoleOperatorsHttpLayer,
  ConsoleAccountsHttpLayer,
  ConsoleWebhooksHttpLayer,
  ConsoleRecordsHttpLayer,
  ConsoleMembersHttpLayer
)
