/** The console capability's services, as the node (src/app/layers.ts) and the CLI compose them. */
import { Layer } from "effect"
import { Certificates } from "../certificates/Certificates.ts"
import { ConsoleAuth } from "./ConsoleAuth.ts"
import { ConsoleConfig } from "./config.ts"
import { ConsoleStats } from "./ConsoleStats.ts"
import { ConsoleLinks } from "./Links.ts"
import { ConsoleSessions } from "./Sessions.ts"
import { SignInThrottle } from "./SignInThrottle.ts"
import { ConsoleUsers } from "./Users.ts"

/** Users, sessions, links and sign-in (over Accounts and PostgreSQL): what `anchord users` needs too. */
export const ConsoleCoreLayer = ConsoleAuth.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(ConsoleUsers.layer, ConsoleSessions.layer, ConsoleLinks.layer, SignInThrottle.layer)),
  Layer.provideMerge(ConsoleConfig.layer)
)

/** Everything the console's handlers use besides the other capabilities' services. */
export const ConsoleServicesLayer = Layer.mergeAll(ConsoleCoreLayer, ConsoleStats.layer, Certificates.layer)
