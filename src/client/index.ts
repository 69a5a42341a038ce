// The LSS client SDK: `new LssClient({ apiKey: process.env.LSS_API_KEY! })`. See docs/client.md.
export { LssClient, DEFAULT_BASE_URL } from './client.ts';
export type {
  Accepted,
  ClientOptions,
  FindingPageOptions,
  LookupOptions,
  ListOptions,
  LookupResult,
  MonitorCreated,
  WriteOptions,
} from './client.ts';
export { LssWebhookError, verifyWebhook, verifyWebhookRequest } from './webhooks.ts';
export type { VerifiedWebhook, VerifyOptions, WebhookErrorReason, WebhookHeaders } from './webhooks.ts';
export { LssApiError, LssError, LssPartialError, LssTransportError } from './errors.ts';
export type { ClientErrorCode } from './errors.ts';
export type { RetryEvent } from './http-transport.ts';
export type { JobOutcome, WaitOptions } from './job-polling.ts';
export type { Collected, PageOptions } from './page-iterator.ts';
export type { ChangePageOptions, CollectedChanges } from './change-pages.ts';
export type { RetrySettings } from './retry-policy.ts';
export { productRoutes } from './routes.ts';
export type * from './types.ts';
