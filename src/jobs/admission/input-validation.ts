// Step 5 of admission: the body as read (its error held since step 3), then the zod schema, which
// is the contract (unknown fields are rejected by .strict() schemas), then the product's own checks
// beyond the schema (special-use names, scan_credit_budget_invalid).
import type { z } from 'zod';
import type { Config } from '../../config/config.ts';
import { ApiError } from '../../contract/errors.ts';
import type { ProductDefinition } from '../../products/kit/product-contract.ts';
import { refuseSpecialUseNames } from '../../products/kit/target-names.ts';
import type { AdmissionState } from './admission-state.ts';

/** What an error may echo of the caller's input: field names and messages are clipped. */
const MAX_ISSUES = 20;
const MAX_PATH = 200;
const MAX_MESSAGE = 300;

export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

export function zodIssues(error: z.ZodError): Array<{ path: string; message: string }> {
  return error.issues.slice(0, MAX_ISSUES).map((i) => ({
    path: clip(i.path.map((p) => clip(String(p), 64)).join('.'), MAX_PATH),
    message: clip(i.message, MAX_MESSAGE),
  }));
}

/** Step 5a: a body that could not be read is reported here, after the limit and key checks. */
export function reportBodyError(st: AdmissionState): void {
  st.step = 'validation';
  if (st.bodyError) throw st.bodyError;
}

/** Step 5b: st.rawBody through the schema into st.input. */
export function validateInput(st: AdmissionState, schema: z.ZodType, opts: { optional?: boolean } = {}): void {
  const raw = st.rawBody === undefined && opts.optional ? {} : st.rawBody;
  if (raw === undefined) {
    throw new ApiError('invalid_request', {
      message: 'A JSON body is required.',
      details: { issues: [{ path: '', message: 'body required' }] },
    });
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new ApiError('invalid_request', { details: { issues: zodIssues(parsed.error) } });
  st.input = parsed.data;
}

/** Step 5c: the product's checks beyond its schema, each with its own documented code. */
export function checkProductInput(
  def: ProductDefinition,
  input: unknown,
  config: Pick<Config, 'ALLOW_SPECIAL_USE_DOMAINS' | 'ALLOW_PRIVATE_TARGETS'>,
): void {
  if (def.targetNames) refuseSpecialUseNames(def.targetNames(input), config);
  def.check?.(input);
}
