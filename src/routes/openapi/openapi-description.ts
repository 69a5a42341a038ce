// The prose of the OpenAPI document (info.description, Markdown): the client rules of SERVICE.md,
// the product table and the error-code table, generated from the product and error registries so
// the reference page (GET /docs renders this document) cannot disagree with the service.
import { errorRegistry, type ErrorCode } from '../../contract/errors.ts';
import type { ProductDefinition } from '../../products/kit/product-contract.ts';

const CLIENT_RULES = [
  'Send `Authorization: Bearer $LSS_API_KEY` on every request. The key is a workspace application key; it is used only server side and never goes into browser code, examples or logs.',
  'Every POST carries an `Idempotency-Key` (1-255 visible ASCII characters). Generate it once per logical write and send the *same* key and body on every retry of that write: the service executes it once and replays the stored reply (`Idempotent-Replayed: true`). Reusing a key for a different body is `idempotency_key_conflict`.',
  'Retry connection failures, `idempotency_request_in_progress` (409), `rate_limit_exceeded` / `capability_rate_limit_exceeded` (429) and retryable 503s. Wait for `Retry-After` when it is sent (it is exact), otherwise back off exponentially with jitter. Never change the key or the request to get around a limit.',
  'A 202 means accepted, not done: poll `GET /v2/jobs/{job_ref}` every `pollAfterMs` until `terminal` is true. Terminal states are `completed`, `partial`, `cancelled`, `failed` and `unavailable`; none of the last four is a success.',
  'Read results and findings by following `page.nextCursor` verbatim; never invent offsets. `nextCursor: null` with `terminal: false` means "nothing more yet", not "no more ever".',
  'A change is only `gone` or `resolved` when the job observed the absence; what it could not recheck is `unconfirmed` with a `reason`, never gone.',
  'Keep `status`, `coverage`, `lanes` and `limitations` with every answer and in every report built from it. A partial answer, a timeout, an unconfigured provider or a missing finding proves neither absence nor safety.',
  'Branch on `error.code`, never on `error.message`; quote `error.requestId` (also the `X-Request-Id` header) when asking for help.',
];

function productTable(products: readonly ProductDefinition[]): string {
  const rows = products.map(
    (p) =>
      `| \`${p.id}\` | \`POST ${p.path}\` | ${p.title} | ${p.mode === 'sync' ? '200, completed inline' : '202, a job'} | \`${p.scope}\` |`,
  );
  return ['| product | route | what | reply | scope |', '|---|---|---|---|---|', ...rows].join('\n');
}

function errorTable(): string {
  const rows = (Object.entries(errorRegistry) as Array<[ErrorCode, (typeof errorRegistry)[ErrorCode]]>).map(
    ([code, s]) =>
      `| \`${code}\` | ${s.status} | ${s.retryable ? 'yes' : 'no'} | ${{ always: 'always', when_known: 'when known', never: '—' }[s.retryAfter]} | ${s.message} |`,
  );
  return ['| code | HTTP | retry | Retry-After | meaning |', '|---|---|---|---|---|', ...rows].join('\n');
}

const EXAMPLES = `\`\`\`sh
export LSS_API_KEY=lsk_…            # from the admin CLI; never in browser code
curl -sS -X POST "$LSS_BASE_URL/v2/lookups/dns" \\
  -H "Authorization: Bearer $LSS_API_KEY" -H 'Content-Type: application/json' \\
  -H "Idempotency-Key: $(uuidgen)" -d '{"value":"example.com"}'

# The lss CLI and the TypeScript SDK (src/client) follow every rule above for you:
lss lookup dns example.com
lss lookup domain example.com --fail-on high
lss scan example.com --profile balanced --max-credits 200 --wait
\`\`\``;

export function describeApi(products: readonly ProductDefinition[]): string {
  return [
    'Public API v2 of the Lookup and Scan Service: server-to-server lookups of network and identity artifacts and recursive scans of a domain, with retained, workspace-scoped results. This page is rendered from `GET /v2/openapi.json`; it has no "try it" console on purpose: API keys never belong in a browser.',
    '## Client rules',
    CLIENT_RULES.map((r, i) => `${i + 1}. ${r}`).join('\n'),
    '## Products',
    productTable(products),
    "Retained-job routes: `GET /v2/jobs/{job_ref}` (status), `POST /v2/jobs/{job_ref}/cancel`, `GET /v2/jobs/{job_ref}/results`, `GET /v2/jobs/{job_ref}/findings` (also needs `finding:read`), `GET /v2/jobs/{job_ref}/objects/{object_id}`, `GET /v2/jobs/{job_ref}/changes` (what is new, changed, gone or resolved since the baseline: the workspace's previous job of the same product and target; `baseline` and `changes` counts are on the job status). `GET /v2/products` lists every product with its readiness right now.",
    '## Error codes',
    'Every error is `{ "error": { "code", "message", "status", "retryable", "requestId", "details"? } }`.',
    errorTable(),
    '## Examples',
    EXAMPLES,
  ].join('\n\n');
}
