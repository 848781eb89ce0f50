/**
 * `anchord/client`: a plain TypeScript SDK of the anchord API, for applications that do not use Effect
 * (docs/sdk.md). Built to dist/ by `npm install` (the `prepare` script, tsconfig.sdk.json).
 */
export { AnchordClient, AnchordError, type AnchorOptions, type AnchordClientOptions } from "./client.ts"
export { type BundleAnchorCheck, verifyBundle, type VerifyBundleResult } from "./bundle.ts"
export type * from "./types.ts"
export { type VerifyWebhookInput, type VerifyWebhookResult, verifyWebhook, type WebhookEvent, type WebhookHeaders } from "./webhooks.ts"
