/**
 * The console's settings (README, "Configuration"): session lifetimes, the Secure flag of its cookie,
 * how long one-time links stay valid. The sign-in throttle's numbers are constants (SignInThrottle.ts).
 */
import { Config, Context, Effect, Layer } from "effect"

export interface ConsoleConfigShape {
  /** A session unused this long is over (CONSOLE_SESSION_IDLE_MINUTES, default 30). */
  readonly idleMillis: number
  /** A session is over this long after sign-in, used or not (CONSOLE_SESSION_MAX_HOURS, default 12). */
  readonly absoluteMillis: number
  /**
   * The session cookie's Secure flag: "auto" sets it when the node is reached over HTTPS (PUBLIC_URL is
   * https, a TLS connection to the node itself, or TRUST_PROXY and X-Forwarded-Proto: https); true/false force it
   * (CONSOLE_SECURE_COOKIE).
   */
  readonly secureCookie: "auto" | boolean
  /** An invitation link is valid this long (CONSOLE_INVITATION_DAYS, default 7). */
  readonly invitationMillis: number
  /** A one-time sign-in link is valid this long (CONSOLE_SIGN_IN_LINK_MINUTES, default 60). */
  readonly signInLinkMillis: number
}

export class ConsoleConfig extends Context.Service<ConsoleConfig, ConsoleConfigShape>()("anchord/console/ConsoleConfig") {
  static readonly config = Config.all({
    idleMinutes: Config.Int("CONSOLE_SESSION_IDLE_MINUTES").pipe(Config.withDefault(30)),
    maxHours: Config.Int("CONSOLE_SESSION_MAX_HOURS").pipe(Config.withDefault(12)),
    secureCookie: Config.Literals(["auto", "true", "false"] as const, "CONSOLE_SECURE_COOKIE").pipe(Config.withDefault("auto" as const)),
    invitationDays: Config.Int("CONSOLE_INVITATION_DAYS").pipe(Config.withDefault(7)),
    signInLinkMinutes: Config.Int("CONSOLE_SIGN_IN_LINK_MINUTES").pipe(Config.withDefault(60))
  })

  static readonly layer = Layer.effect(ConsoleConfig, Effect.map(ConsoleConfig.config, (c) =>
    ConsoleConfig.of({
      idleMillis: c.idleMinutes * 60_000,
      absoluteMillis: c.maxHours * 3_600_000,
      secureCookie: c.secureCookie === "auto" ? "auto" : c.secureCookie === "true",
      invitationMillis: c.invitationDays * 86_400_000,
      signInLinkMillis: c.signInLinkMinutes * 60_000
    })))
}
