// The SDK's types, derived from the service's own zod schemas (type-only imports: none of the
// service's code is loaded by a client). A schema change in src/contract or a product module
// changes these types, and `npm test` type-checks every use of them.
import type { z } from 'zod';
import type { ErrorCode } from '../contract/errors.ts';
import type { laneOutcomeSchema, limitationSchema, sourceSchema } from '../contract/envelope.ts';
import type { jobStatusSchema } from '../contract/job-schemas.ts';
import type { findingPageSchema, objectDetailSchema, resultPageSchema } from '../contract/page-schemas.ts';
import type { errorEnvelopeSchema, productListSchema } from '../contract/schemas.ts';
import type {
  ChangeKind,
  ChangeMark,
  UnconfirmedReason,
  changeCountsSchema,
  changePageSchema,
} from '../contract/change-schemas.ts';
import type {
  createMonitorBody,
  deliveriesPageSchema,
  deliverySchema,
  monitorEventSchema,
  monitorListSchema,
  monitorSchema,
  patchMonitorBody,
} from '../contract/monitor-schemas.ts';
import type { Severity } from '../contract/tasks.ts';
import type { ExportFormat, ExportSubject } from '../contract/export-schemas.ts';
import type {
  createSuppressionBody,
  patchSuppressionBody,
  suppressionListSchema,
  suppressionSchema,
} from '../contract/suppression-schemas.ts';
import type {
  inventoryFindingSchema,
  inventoryFindingsPageSchema,
  inventoryFindingsQuery,
  inventoryItemSchema,
  inventoryPageSchema,
  inventoryQuery,
} from '../contract/inventory-schemas.ts';
import type { macInput, macResult } from '../products/mac/index.ts';
import type { phoneInput, phoneResult } from '../products/phone/index.ts';
import type { ipInput, ipResult } from '../products/ip/index.ts';
import type { dnsInput, dnsResult } from '../products/dns-lookup/index.ts';
import type { domainInput } from '../products/domain/index.ts';
import type { domainResult } from '../products/domain/schema.ts';

export type { ChangeKind, ChangeMark, ErrorCode, ExportFormat, ExportSubject, Severity, UnconfirmedReason };

export type JobStatus = z.output<typeof jobStatusSchema>;
export type JobState = JobStatus['status'];
export type TerminalJobState = Exclude<JobState, 'queued' | 'running' | 'cancelling'>;
export type ResultPage = z.output<typeof resultPageSchema>;
export type FindingPage = z.output<typeof findingPageSchema>;
export type ResultItem = ResultPage['items'][number];
export type FindingItem = FindingPage['items'][number];
export type ObjectDetail = z.output<typeof objectDetailSchema>;
/** GET /v2/jobs/{job_ref}/changes (CONTRACT §13). */
export type ChangePage = z.output<typeof changePageSchema>;
export type ChangeItem = ChangePage['items'][number];
/** The job status's `changes`: the comparison with the baseline, counted. */
export type ChangeCounts = z.output<typeof changeCountsSchema>;
export type ProductList = z.output<typeof productListSchema>;
export type ErrorEnvelope = z.output<typeof errorEnvelopeSchema>;
export type LaneOutcome = z.output<typeof laneOutcomeSchema>;
export type Limitation = z.output<typeof limitationSchema>;
export type SourceRef = z.output<typeof sourceSchema>;

// ---- Monitors and webhooks (CONTRACT §14) ---------------------------------------------------
export type MonitorRequest = z.input<typeof createMonitorBody>;
export type MonitorPatch = z.input<typeof patchMonitorBody>;
export type Monitor = z.output<typeof monitorSchema>;
export type MonitorList = z.output<typeof monitorListSchema>;
export type Delivery = z.output<typeof deliverySchema>;
export type DeliveriesPage = z.output<typeof deliveriesPageSchema>;
/** What a webhook receiver gets as the body (verifyWebhook returns it parsed). */
export type MonitorEvent = z.output<typeof monitorEventSchema>;

/** The CONTRACT §7 product envelope (a 200 lookup reply; the `result` of an async lookup job). */
export interface Envelope<R = Record<string, unknown>> {
  product: string;
  /** A 200 reply: completed or partial. A job's result: the job's status (docs/api.md). */
  status: 'completed' | 'partial' | 'unavailable' | 'failed';
  input: Record<string, unknown>;
  result: R;
  lanes: LaneOutcome[];
  sources: SourceRef[];
  limitations: Limitation[];
  coverage: { complete: boolean };
  credits: { charged: number };
  requestId: string;
  completedAt: string;
}

// ---- Request bodies ------------------------------------------------------------------------
// Built products: the input side of their zod schemas. Mail, web and scans are declared here from
// SERVICE.md/CONTRACT §8 until their modules land; test/unit/client-drift.test.ts checks all eight
// against the OpenAPI document the service serves.

export type MacRequest = z.input<typeof macInput>;
export type PhoneRequest = z.input<typeof phoneInput>;
export type IpRequest = z.input<typeof ipInput>;
export type DnsRequest = z.input<typeof dnsInput>;
export type DomainRequest = z.input<typeof domainInput>;
export interface MailRequest {
  value: string;
}
export interface WebRequest {
  url: string;
  /** Authorized active checks (TLS protocol enumeration): passes the active gates. */
  authorized?: boolean;
}
export type ScanProfile = 'quick' | 'balanced' | 'deep' | 'advanced';
export interface ScanRequest {
  profile: ScanProfile;
  target: { type: 'domain_name'; value: string };
  options: { active: boolean; maxCredits: number };
}

export interface Requests {
  mac: MacRequest;
  phone: PhoneRequest;
  ip: IpRequest;
  dns: DnsRequest;
  domain: DomainRequest;
  mail: MailRequest;
  web: WebRequest;
  scan: ScanRequest;
}

/** The `result` projection of each product (unbuilt products: an open record). */
export interface Results {
  mac: z.output<typeof macResult>;
  phone: z.output<typeof phoneResult>;
  ip: z.output<typeof ipResult>;
  dns: z.output<typeof dnsResult>;
  domain: z.output<typeof domainResult>;
  mail: Record<string, unknown>;
  web: Record<string, unknown>;
  scan: Record<string, unknown>;
}

export type SyncKind = 'mac' | 'phone' | 'ip' | 'dns';
export type AsyncKind = 'domain' | 'mail' | 'web' | 'scan';
export type ProductKind = SyncKind | AsyncKind;

// ---- Suppressions and the inventory (CONTRACT §15-16) ---------------------------------------
export type SuppressionRequest = z.input<typeof createSuppressionBody>;
export type SuppressionPatch = z.input<typeof patchSuppressionBody>;
export type Suppression = z.output<typeof suppressionSchema>;
export type SuppressionList = z.output<typeof suppressionListSchema>;
export type InventoryItem = z.output<typeof inventoryItemSchema>;
export type InventoryFinding = z.output<typeof inventoryFindingSchema>;
export type InventoryPage = z.output<typeof inventoryPageSchema>;
export type InventoryFindingsPage = z.output<typeof inventoryFindingsPageSchema>;
type Query<Q> = { [K in Exclude<keyof Q, 'cursor' | 'limit'>]?: Q[K] | undefined };
export type InventoryOptions = Query<z.output<typeof inventoryQuery>> & ListSignal;
export type InventoryFindingsOptions = Query<z.output<typeof inventoryFindingsQuery>> & ListSignal;
interface ListSignal {
  limit?: number | undefined;
  signal?: AbortSignal | undefined;
}
