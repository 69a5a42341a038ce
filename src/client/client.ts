// The LSS client: lookups, scans and retained jobs over the transport's retry and idempotency
// rules. Every answer keeps what the service said about coverage: a lookup result carries
// `status`, `coverage`, `lanes` and `limitations` and says `complete: false` when partial; a job
// outcome carries its terminal state. Nothing is flattened into success or absence.
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { LssPartialError } from './errors.ts';
import { HttpTransport, newIdempotencyKey, type RetryEvent } from './http-transport.ts';
import { jobOutcome, pollUntilTerminal, type JobOutcome, type WaitOptions } from './job-polling.ts';
import { collectPages, iteratePages, type Collected, type PageOptions } from './page-iterator.ts';
import {
  collectChangePages,
  iterateChangePages,
  type ChangePageOptions,
  type CollectedChanges,
} from './change-pages.ts';
import { defaultRetrySettings, type RetrySettings } from './retry-policy.ts';
import { apiPaths, productRoutes } from './routes.ts';
import type {
  AsyncKind,
  ExportFormat,
  ExportSubject,
  ChangeItem,
  ChangePage,
  DeliveriesPage,
  Delivery,
  Monitor,
  MonitorList,
  MonitorPatch,
  MonitorRequest,
  InventoryFinding,
  InventoryFindingsOptions,
  InventoryFindingsPage,
  InventoryItem,
  InventoryOptions,
  InventoryPage,
  Suppression,
  SuppressionList,
  SuppressionPatch,
  SuppressionRequest,
  Envelope,
  FindingItem,
  FindingPage,
  JobStatus,
  ObjectDetail,
  ProductList,
  Requests,
  ResultItem,
  ResultPage,
  Results,
  Severity,
  SyncKind,
} from './types.ts';

export const DEFAULT_BASE_URL = 'http://localhost:8080';

export interface ClientOptions {
  /** A workspace application key (lsk_…). Kept private to the transport; never logged. */
  apiKey: string;
  /** Default http://localhost:8080. */
  baseUrl?: string | undefined;
  /** Per-attempt timeout (default 30 s; inline lookups end within 25 s on the service). */
  timeoutMs?: number | undefined;
  retry?: Partial<RetrySettings> | undefined;
  /** Observe retries (attempt, wait, reason, the unchanged Idempotency-Key). */
  onRetry?: ((e: RetryEvent) => void) | undefined;
  userAgent?: string | undefined;
}

export interface WriteOptions {
  /** Your own key for this logical write; default: one generated and kept for all its retries. */
  idempotencyKey?: string | undefined;
  signal?: AbortSignal | undefined;
}

export interface LookupOptions extends WriteOptions {
  /** Throw LssPartialError instead of returning a partial result. */
  requireComplete?: boolean | undefined;
}

export interface LookupResult<R> {
  /** True only when the envelope is `completed` with complete coverage. */
  complete: boolean;
  status: Envelope<R>['status'];
  result: R;
  coverage: Envelope<R>['coverage'];
  lanes: Envelope<R>['lanes'];
  limitations: Envelope<R>['limitations'];
  /** The envelope exactly as the service sent it. */
  envelope: Envelope<R>;
  requestId: string;
  /** The service replayed a committed reply (a retry of a write that had executed). */
  replayed: boolean;
  idempotencyKey: string;
}

export interface Accepted {
  job: JobStatus;
  jobRef: string;
  replayed: boolean;
  idempotencyKey: string;
}

export interface FindingPageOptions extends PageOptions {
  /** Minimum severity. */
  severity?: Severity | undefined;
  /** CONTRACT §15: include (default), exclude or only the suppressed findings. */
  suppressed?: 'include' | 'exclude' | 'only' | undefined;
}

export interface MonitorCreated {
  monitor: Monitor;
  /** The webhook's whsec_ secret: shown once (kept by the service encrypted). Null without a webhook. */
  secret: string | null;
  replayed: boolean;
  idempotencyKey: string;
}

export interface ListOptions {
  limit?: number | undefined;
  signal?: AbortSignal | undefined;
}

export class LssClient {
  readonly #http: HttpTransport;

  constructor(opts: ClientOptions) {
    if (!opts.apiKey) throw new TypeError('apiKey is required');
    this.#http = new HttpTransport({
      apiKey: opts.apiKey,
      baseUrl: opts.baseUrl ?? DEFAULT_BASE_URL,
      timeoutMs: opts.timeoutMs ?? 30_000,
      retry: { ...defaultRetrySettings, ...opts.retry },
      userAgent: opts.userAgent ?? 'lss-client/2.0.0',
      onRetry: opts.onRetry,
    });
  }

  get baseUrl(): string {
    return this.#http.baseUrl;
  }

  /** An inline lookup (mac, phone, ip, dns): 200 with a completed or partial envelope. */
  async lookup<K extends SyncKind>(
    kind: K,
    body: Requests[K],
    opts: LookupOptions = {},
  ): Promise<LookupResult<Results[K]>> {
    const reply = await this.#http.call<Envelope<Results[K]>>('POST', productRoutes[kind].path, {
      expect: [200],
      body,
      ...writeOpts(opts),
    });
    const envelope = reply.body;
    const result: LookupResult<Results[K]> = {
      complete: envelope.status === 'completed' && envelope.coverage.complete,
      status: envelope.status,
      result: envelope.result,
      coverage: envelope.coverage,
      lanes: envelope.lanes,
      limitations: envelope.limitations,
      envelope,
      requestId: envelope.requestId,
      replayed: reply.replayed,
      idempotencyKey: reply.idempotencyKey!,
    };
    if (opts.requireComplete && !result.complete) throw new LssPartialError(envelope);
    return result;
  }

  /** Starts background work (domain, mail, web lookups; scans): 202 with the queued job. */
  async submit<K extends AsyncKind>(kind: K, body: Requests[K], opts: WriteOptions = {}): Promise<Accepted> {
    const reply = await this.#http.call<JobStatus>('POST', productRoutes[kind].path, {
      expect: [202],
      body,
      ...writeOpts(opts),
    });
    return {
      job: reply.body,
      jobRef: reply.body.jobRef,
      replayed: reply.replayed,
      idempotencyKey: reply.idempotencyKey!,
    };
  }

  /** submit, then wait for the terminal state. */
  async run<K extends AsyncKind>(
    kind: K,
    body: Requests[K],
    opts: WriteOptions & WaitOptions = {},
  ): Promise<JobOutcome<Results[K]>> {
    const accepted = await this.submit(kind, body, opts);
    return this.waitForJob<Results[K]>(accepted.jobRef, { ...opts, first: accepted.job });
  }

  async getJob(jobRef: string, opts: { signal?: AbortSignal | undefined } = {}): Promise<JobStatus> {
    return (await this.#http.call<JobStatus>('GET', apiPaths.status(jobRef), { expect: [200], signal: opts.signal }))
      .body;
  }

  /** Polls (honouring pollAfterMs) until the job is terminal. */
  async waitForJob<R = Record<string, unknown>>(
    jobRef: string,
    opts: WaitOptions & { first?: JobStatus } = {},
  ): Promise<JobOutcome<R>> {
    const job = await pollUntilTerminal(() => this.getJob(jobRef, { signal: opts.signal }), opts.first, opts);
    return jobOutcome<R>(job);
  }

  /** Asks the service to cancel; the answer is the status after the request (often `cancelling`). */
  async cancelJob(jobRef: string, opts: WriteOptions & { reason?: string | undefined } = {}): Promise<JobStatus> {
    const body = opts.reason === undefined ? {} : { reason: opts.reason };
    return (
      await this.#http.call<JobStatus>('POST', apiPaths.cancel(jobRef), { expect: [202], body, ...writeOpts(opts) })
    ).body;
  }

  resultPages(jobRef: string, opts: PageOptions = {}): AsyncGenerator<ResultPage> {
    return iteratePages(
      (cursor) => this.#page<ResultPage>(apiPaths.results(jobRef), { limit: opts.limit, cursor }, opts.signal),
      opts,
    );
  }

  findingPages(jobRef: string, opts: FindingPageOptions = {}): AsyncGenerator<FindingPage> {
    return iteratePages(
      (cursor) =>
        this.#page<FindingPage>(
          apiPaths.findings(jobRef),
          { limit: opts.limit, cursor, severity: opts.severity, suppressed: opts.suppressed },
          opts.signal,
        ),
      opts,
    );
  }

  async *results(jobRef: string, opts: PageOptions = {}): AsyncGenerator<ResultItem> {
    for await (const page of this.resultPages(jobRef, opts)) yield* page.items;
  }

  async *findings(jobRef: string, opts: FindingPageOptions = {}): AsyncGenerator<FindingItem> {
    for await (const page of this.findingPages(jobRef, opts)) yield* page.items;
  }

  /** Every result item, with the job status, coverage and limitations of the last page read. */
  collectResults(jobRef: string, opts: PageOptions = {}): Promise<Collected<ResultPage>> {
    return collectPages(this.resultPages(jobRef, opts));
  }

  collectFindings(jobRef: string, opts: FindingPageOptions = {}): Promise<Collected<FindingPage>> {
    return collectPages(this.findingPages(jobRef, opts));
  }

  /**
   * The job's changes since its baseline (CONTRACT §13): what is new, changed, gone, resolved or
   * unconfirmed. Empty until the job is terminal (`wait` reads on until it is).
   */
  changePages(jobRef: string, opts: ChangePageOptions = {}): AsyncGenerator<ChangePage> {
    return iterateChangePages(
      (cursor) =>
        this.#page<ChangePage>(
          apiPaths.changes(jobRef),
          { limit: opts.limit, cursor, change: opts.change?.join(','), kind: opts.kind },
          opts.signal,
        ),
      opts,
    );
  }

  async *changes(jobRef: string, opts: ChangePageOptions = {}): AsyncGenerator<ChangeItem> {
    for await (const page of this.changePages(jobRef, opts)) yield* page.items;
  }

  /** Every change, with the baseline and whether finding items were left out (no finding:read). */
  collectChanges(jobRef: string, opts: ChangePageOptions = {}): Promise<CollectedChanges> {
    return collectChangePages(this.changePages(jobRef, opts));
  }

  async getObject(jobRef: string, objectId: string, opts: { signal?: AbortSignal } = {}): Promise<ObjectDetail> {
    return (
      await this.#http.call<ObjectDetail>('GET', apiPaths.object(jobRef, objectId), {
        expect: [200],
        signal: opts.signal,
      })
    ).body;
  }

  // ---- Exports and the report (CONTRACT §17) ------------------------------------------------

  /**
   * A terminal job's findings (default) or objects as SARIF, CSV or JSONL: the response body as a
   * Node stream, never held whole (pipe it to a file). Refused with job_not_terminal (409) while
   * the job runs; findings need finding:read. A body cut short errors the stream.
   */
  async exportJob(
    jobRef: string,
    format: ExportFormat,
    opts: { what?: ExportSubject | undefined; signal?: AbortSignal | undefined } = {},
  ): Promise<Readable> {
    const reply = await this.#http.stream(apiPaths.export(jobRef), {
      expect: [200],
      query: { format, what: opts.what },
      signal: opts.signal,
    });
    return Readable.fromWeb(reply.body as NodeReadableStream<Uint8Array>);
  }

  /** The job's report: one self-contained HTML page (no script), as text. */
  async jobReport(jobRef: string, opts: { signal?: AbortSignal | undefined } = {}): Promise<string> {
    const reply = await this.#http.stream(apiPaths.report(jobRef), { expect: [200], signal: opts.signal });
    return new Response(reply.body).text();
  }

  async products(opts: { signal?: AbortSignal } = {}): Promise<ProductList> {
    return (await this.#http.call<ProductList>('GET', apiPaths.products(), { expect: [200], signal: opts.signal }))
      .body;
  }

  // ---- Monitors and webhooks (CONTRACT §14) -------------------------------------------------

  /** A monitor: `request` run again every `schedule.intervalSeconds`, its result posted, signed, to `webhook.url`. */
  async createMonitor(body: MonitorRequest, opts: WriteOptions = {}): Promise<MonitorCreated> {
    const reply = await this.#http.call<Monitor>('POST', apiPaths.monitors(), {
      expect: [201],
      body,
      ...writeOpts(opts),
    });
    return {
      monitor: reply.body,
      secret: reply.body.webhook?.secret ?? null,
      replayed: reply.replayed,
      idempotencyKey: reply.idempotencyKey!,
    };
  }

  /** One monitor with its last runs. */
  async getMonitor(monitorId: string, opts: { signal?: AbortSignal | undefined } = {}): Promise<Monitor> {
    return (await this.#http.call<Monitor>('GET', apiPaths.monitor(monitorId), { expect: [200], signal: opts.signal }))
      .body;
  }

  /**
   * Schedule, pause/resume, webhook URL (re-enables a disabled one), rotateSecret (the new secret in
   * webhook.secret, once). Sent with an Idempotency-Key (one per call, the same on its retries), so a
   * rotation whose reply was lost returns the same secret when retried.
   */
  async updateMonitor(monitorId: string, patch: MonitorPatch, opts: WriteOptions = {}): Promise<Monitor> {
    return (
      await this.#http.call<Monitor>('PATCH', apiPaths.monitor(monitorId), {
        expect: [200],
        body: patch,
        idempotencyKey: opts.idempotencyKey ?? newIdempotencyKey(),
        signal: opts.signal,
      })
    ).body;
  }

  pauseMonitor(monitorId: string, opts: { signal?: AbortSignal | undefined } = {}): Promise<Monitor> {
    return this.updateMonitor(monitorId, { paused: true }, opts);
  }

  /** Resumed: the next run is due at once. */
  resumeMonitor(monitorId: string, opts: { signal?: AbortSignal | undefined } = {}): Promise<Monitor> {
    return this.updateMonitor(monitorId, { paused: false }, opts);
  }

  /** No run starts after it and no event is delivered for it. */
  async deleteMonitor(monitorId: string, opts: { signal?: AbortSignal | undefined } = {}): Promise<void> {
    await this.#http.call<undefined>('DELETE', apiPaths.monitor(monitorId), { expect: [204], signal: opts.signal });
  }

  /** Every monitor of the workspace, following the page cursors. */
  async *monitors(opts: ListOptions = {}): AsyncGenerator<Monitor> {
    let cursor: string | undefined;
    do {
      const page: MonitorList = await this.#page<MonitorList>(
        apiPaths.monitors(),
        { limit: opts.limit, cursor },
        opts.signal,
      );
      yield* page.items;
      cursor = page.page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  /** The monitor's events and their delivery, newest first. */
  async *deliveries(monitorId: string, opts: ListOptions = {}): AsyncGenerator<Delivery> {
    let cursor: string | undefined;
    do {
      const page: DeliveriesPage = await this.#page<DeliveriesPage>(
        apiPaths.deliveries(monitorId),
        { limit: opts.limit, cursor },
        opts.signal,
      );
      yield* page.items;
      cursor = page.page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  /** Sends an event again (same webhook-id, a fresh retry schedule). */
  async redeliver(monitorId: string, eventId: string, opts: WriteOptions = {}): Promise<Delivery> {
    return (
      await this.#http.call<Delivery>('POST', apiPaths.redeliver(monitorId, eventId), {
        expect: [202],
        body: {},
        ...writeOpts(opts),
      })
    ).body;
  }

  // ---- Suppressions and the inventory (CONTRACT §15-16) -------------------------------------

  /** A finding accepted on purpose: marked (never hidden) on every job that ends from now on. */
  async createSuppression(
    body: SuppressionRequest,
    opts: WriteOptions = {},
  ): Promise<{ suppression: Suppression; replayed: boolean }> {
    const reply = await this.#http.call<Suppression>('POST', apiPaths.suppressions(), {
      expect: [201],
      body,
      ...writeOpts(opts),
    });
    return { suppression: reply.body, replayed: reply.replayed };
  }

  async getSuppression(id: string, opts: { signal?: AbortSignal | undefined } = {}): Promise<Suppression> {
    return (await this.#http.call<Suppression>('GET', apiPaths.suppression(id), { expect: [200], signal: opts.signal }))
      .body;
  }

  /** Note and expiry; a revoked suppression cannot be changed. */
  async updateSuppression(
    id: string,
    patch: SuppressionPatch,
    opts: { signal?: AbortSignal | undefined } = {},
  ): Promise<Suppression> {
    return (
      await this.#http.call<Suppression>('PATCH', apiPaths.suppression(id), {
        expect: [200],
        body: patch,
        signal: opts.signal,
      })
    ).body;
  }

  /** Revoked: applied to no job that ends after it, still listed with revokedAt. */
  async deleteSuppression(id: string, opts: { signal?: AbortSignal | undefined } = {}): Promise<void> {
    await this.#http.call<undefined>('DELETE', apiPaths.suppression(id), { expect: [204], signal: opts.signal });
  }

  /** Every suppression of the workspace (active: only active ones, or only revoked and expired ones). */
  async *suppressions(opts: ListOptions & { active?: boolean | undefined } = {}): AsyncGenerator<Suppression> {
    let cursor: string | undefined;
    do {
      const page: SuppressionList = await this.#page<SuppressionList>(
        apiPaths.suppressions(),
        { limit: opts.limit, cursor, active: opts.active === undefined ? undefined : String(opts.active) },
        opts.signal,
      );
      yield* page.items;
      cursor = page.page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  /** The estate: one row per identity the workspace's jobs have seen, following the cursors. */
  async *inventory(opts: InventoryOptions = {}): AsyncGenerator<InventoryItem> {
    const { signal, ...query } = opts;
    let cursor: string | undefined;
    do {
      const page: InventoryPage = await this.#page<InventoryPage>(apiPaths.inventory(), { ...query, cursor }, signal);
      yield* page.items;
      cursor = page.page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  /** Open findings across the estate, one per finding identity. */
  async *inventoryFindings(opts: InventoryFindingsOptions = {}): AsyncGenerator<InventoryFinding> {
    const { signal, ...query } = opts;
    let cursor: string | undefined;
    do {
      const page: InventoryFindingsPage = await this.#page<InventoryFindingsPage>(
        apiPaths.inventoryFindings(),
        { ...query, cursor },
        signal,
      );
      yield* page.items;
      cursor = page.page.nextCursor ?? undefined;
    } while (cursor !== undefined);
  }

  async #page<P>(
    path: string,
    query: Record<string, string | number | undefined>,
    signal: AbortSignal | undefined,
  ): Promise<P> {
    return (await this.#http.call<P>('GET', path, { expect: [200], query, signal })).body;
  }
}

function writeOpts(opts: WriteOptions) {
  return { idempotencyKey: opts.idempotencyKey, signal: opts.signal };
}
