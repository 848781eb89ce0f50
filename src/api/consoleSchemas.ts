/** Wire schemas of the console's API (SPEC 9; src/api/console.ts). Shared by the server and the console's page. */
import { Schema } from "effect"
import { AnchorChainType, ChainType, Environment, PlanName, RecordStatus } from "./recordSchemas.ts"
import { DeliverySettings, EventKind, PayloadFormat } from "./webhookSchemas.ts"

export const ConsoleRole = Schema.Literals(["admin", "viewer"])
export type ConsoleRole = typeof ConsoleRole.Type

export const ConsoleUserView = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  /** Operators see and manage every account. */
  operator: Schema.Boolean,
  /** A member's account (null for operators). */
  accountId: Schema.NullOr(Schema.String),
  accountName: Schema.NullOr(Schema.String),
  role: Schema.NullOr(ConsoleRole),
  createdAt: Schema.String
}).annotate({ identifier: "ConsoleUser" })
export type ConsoleUserView = typeof ConsoleUserView.Type

export const SessionView = Schema.Struct({
  user: ConsoleUserView,
  /** Send it as X-CSRF-Token with every request that changes something. */
  csrfToken: Schema.String,
  expiresAt: Schema.String,
  idleExpiresAt: Schema.String,
  /** The user's account is suspended: the console shows everything and changes nothing (403 ACCOUNT_SUSPENDED). */
  readOnly: Schema.Boolean
}).annotate({ identifier: "ConsoleSession" })

export const SignInBody = Schema.Struct({
  email: Schema.String.check(Schema.isMaxLength(254)),
  password: Schema.String.check(Schema.isMaxLength(1024))
}).annotate({ identifier: "ConsoleSignIn" })

export const TokenBody = Schema.Struct({ token: Schema.String.check(Schema.isMaxLength(100)) }).annotate({ identifier: "ConsoleLinkToken" })

export const AcceptInvitationBody = Schema.Struct({
  token: Schema.String.check(Schema.isMaxLength(100)),
  password: Schema.String.check(Schema.isMaxLength(1024))
}).annotate({ identifier: "ConsoleAcceptInvitation" })

export const LinkView = Schema.Struct({
  kind: Schema.Literals(["invitation", "sign-in"]),
  email: Schema.String,
  operator: Schema.Boolean,
  accountId: Schema.NullOr(Schema.String),
  accountName: Schema.NullOr(Schema.String),
  role: Schema.NullOr(ConsoleRole),
  expiresAt: Schema.String
}).annotate({ identifier: "ConsoleLink" })

export const ConsoleNetwork = Schema.Struct({
  networkId: Schema.String,
  chainType: AnchorChainType,
  environment: Environment,
  /** Transactions link to `<explorerUrl>/tx/<txHash>` (EVM networks that configure one). */
  explorerUrl: Schema.NullOr(Schema.String)
}).annotate({ identifier: "ConsoleNetworkConfig" })

export const ConsoleConfigView = Schema.Struct({
  /** The node's public base URL (PUBLIC_URL, else as the browser reached it). */
  publicUrl: Schema.String,
  /** The public verify page, for links with a bundle in the fragment. */
  verifyUrl: Schema.String,
  networks: Schema.Array(ConsoleNetwork),
  /** Record filters this node supports beyond status, chain, date, id and hash. */
  recordFilters: Schema.Struct({ collection: Schema.Boolean })
}).annotate({ identifier: "ConsoleConfig" })

export const AccountStatus = Schema.Literals(["PENDING", "ACTIVE", "SUSPENDED"])

export const AccountView = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  email: Schema.NullOr(Schema.String),
  plan: PlanName,
  status: AccountStatus,
  ratePerSecond: Schema.NullOr(Schema.Number),
  defaultChain: ChainType,
  createdAt: Schema.String,
  activatedAt: Schema.NullOr(Schema.String)
}).annotate({ identifier: "ConsoleAccount" })

export const AccountList = Schema.Struct({ accounts: Schema.Array(AccountView) }).annotate({ identifier: "ConsoleAccountList" })

export const CreateAccountBody = Schema.Struct({
  name: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200)),
  email: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(254))),
  plan: PlanName,
  ratePerSecond: Schema.optionalKey(Schema.Number.check(Schema.isInt(), Schema.isGreaterThan(0))),
  defaultChain: Schema.optionalKey(ChainType),
  activate: Schema.optionalKey(Schema.Boolean)
}).annotate({ identifier: "ConsoleCreateAccount" })

export const PlanBody = Schema.Struct({
  plan: PlanName,
  /** ENTERPRISE only: a custom per-second limit (null: the default). */
  ratePerSecond: Schema.optionalKey(Schema.NullOr(Schema.Number.check(Schema.isInt(), Schema.isGreaterThan(0))))
}).annotate({ identifier: "ConsoleChangePlan" })

export const KeyStatus = Schema.Literals(["active", "revoked", "expired"])

export const KeyView = Schema.Struct({
  id: Schema.String,
  name: Schema.NullOr(Schema.String),
  environment: Environment,
  /** The prefix and last four characters (the key itself is shown once, at creation). */
  display: Schema.String,
  status: KeyStatus,
  createdAt: Schema.String,
  lastUsedAt: Schema.NullOr(Schema.String),
  expiresAt: Schema.NullOr(Schema.String),
  revokedAt: Schema.NullOr(Schema.String)
}).annotate({ identifier: "ConsoleApiKey" })

export const KeyList = Schema.Struct({ keys: Schema.Array(KeyView) }).annotate({ identifier: "ConsoleApiKeyList" })

export const CreateKeyBody = Schema.Struct({
  name: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100)),
  environment: Environment,
  expiresInDays: Schema.optionalKey(Schema.Number.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 3650 })))
}).annotate({ identifier: "ConsoleCreateApiKey" })

export const CreatedKey = Schema.Struct({
  /** The whole key: shown this once, never again. */
  key: Schema.String,
  info: KeyView
}).annotate({ identifier: "ConsoleCreatedApiKey" })

export const ConsoleWebhookView = Schema.Struct({
  url: Schema.NullOr(Schema.String),
  events: Schema.Array(EventKind),
  payloadFormat: PayloadFormat,
  enabled: Schema.Boolean,
  /** `whsec_` and the secret's first characters: enough to tell secrets apart, nothing to sign with. */
  secretPreview: Schema.String,
  rotation: Schema.NullOr(Schema.Struct({ startedAt: Schema.String, previousSecretExpiresAt: Schema.String })),
  delivery: DeliverySettings
}).annotate({ identifier: "ConsoleWebhook" })

export const RevealedSecret = Schema.Struct({
  /** The newest secret (during a rotation it signs x-webhook-signature-next). */
  secret: Schema.String,
  rotation: Schema.NullOr(Schema.Struct({ startedAt: Schema.String, previousSecretExpiresAt: Schema.String }))
}).annotate({ identifier: "ConsoleWebhookSecret" })

export const DailyCount = Schema.Struct({ day: Schema.String, count: Schema.Number })

export const OverviewView = Schema.Struct({
  account: AccountView,
  environment: Environment,
  usage: Schema.Struct({
    month: Schema.String,
    /** Records created this month (both environments: the quota counts them all). */
    used: Schema.Number,
    quota: Schema.NullOr(Schema.Number),
    resetsAt: Schema.String,
    perSecond: Schema.Number,
    /** Records created per day this month (UTC), both environments. */
    daily: Schema.Array(DailyCount)
  }),
  /** Records of this environment by status (DELETED: soft-deleted). */
  records: Schema.Record(RecordStatus, Schema.Number),
  networks: Schema.Array(Schema.Struct({
    networkId: Schema.String,
    chainType: AnchorChainType,
    environment: Environment,
    status: Schema.String,
    head: Schema.NullOr(Schema.String),
    lastError: Schema.NullOr(Schema.String)
  })),
  recentFailures: Schema.Struct({
    records: Schema.Array(Schema.Struct({ recordId: Schema.String, hash: Schema.String, networkId: Schema.String, updatedAt: Schema.String })),
    deliveries: Schema.Array(Schema.Struct({
      id: Schema.String,
      event: Schema.String,
      url: Schema.String,
      lastStatusCode: Schema.NullOr(Schema.Number),
      lastError: Schema.NullOr(Schema.String),
      createdAt: Schema.String
    }))
  })
}).annotate({ identifier: "ConsoleOverview" })

export const MemberList = Schema.Struct({
  members: Schema.Array(ConsoleUserView)
}).annotate({ identifier: "ConsoleMemberList" })

export const InviteBody = Schema.Struct({
  email: Schema.String.check(Schema.isMaxLength(254)),
  role: ConsoleRole
}).annotate({ identifier: "ConsoleInvite" })

export const InvitationView = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  role: ConsoleRole,
  /** Who made it (null: an operator's command line). */
  createdBy: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  expiresAt: Schema.String
}).annotate({ identifier: "ConsoleInvitation" })

export const InvitationList = Schema.Struct({ invitations: Schema.Array(InvitationView) }).annotate({ identifier: "ConsoleInvitationList" })

export const CreatedLink = Schema.Struct({
  /** Shown once: give it to the person it is for. */
  url: Schema.String,
  expiresAt: Schema.String
}).annotate({ identifier: "ConsoleCreatedLink" })

export const NetworkView = Schema.Struct({
  networkId: Schema.String,
  chainType: AnchorChainType,
  environment: Environment,
  /** This node holds the network's lock: it batches, sends and watches. */
  leader: Schema.Boolean,
  /**
   * Which node leads the network, as the database's lock table says: this one, another one (its
   * address as PostgreSQL sees it, and since when at the latest), none, or unknown (the lookup failed).
   */
  ledBy: Schema.Literals(["this-node", "another-node", "no-node", "unknown"]),
  leaderAddress: Schema.NullOr(Schema.String),
  leaderSince: Schema.NullOr(Schema.String),
  /** The endpoint as this node last saw it (unknown: this node has not used it, e.g. a follower). */
  rpc: Schema.Literals(["up", "down", "unknown"]),
  status: Schema.String,
  head: Schema.NullOr(Schema.String),
  lastError: Schema.NullOr(Schema.String),
  lastChangeAt: Schema.String,
  /** Records waiting for a batch. */
  queued: Schema.Number,
  /** Batches sent and not yet confirmed. */
  unconfirmedBatches: Schema.Number,
  /** How long the oldest unconfirmed batch has waited since it was sent (seconds): the confirmation lag. */
  confirmationLagSeconds: Schema.NullOr(Schema.Number),
  lastConfirmedAt: Schema.NullOr(Schema.String),
  signer: Schema.NullOr(Schema.Struct({
    address: Schema.String,
    /** Wei, as a decimal string; null when the endpoint did not answer. */
    balanceWei: Schema.NullOr(Schema.String),
    error: Schema.NullOr(Schema.String)
  }))
}).annotate({ identifier: "ConsoleNetwork" })

export const NetworkList = Schema.Struct({ networks: Schema.Array(NetworkView) }).annotate({ identifier: "ConsoleNetworkList" })

export const SignOutResult = Schema.Struct({ sessionsEnded: Schema.Number }).annotate({ identifier: "ConsoleSignOut" })

export const TestEventBody = Schema.Struct({ environment: Environment }).annotate({ identifier: "ConsoleTestEvent" })
