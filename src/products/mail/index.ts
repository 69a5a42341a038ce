// lookup.mail.v1: the mail security posture of a domain in ten lanes, run as a job on the `mail`
// worker lane (./checks.ts), assembled with cross-lane derivations (./assemble.ts, ./derive.ts).
// Price 4 split across lanes by unit cost (./lanes.ts); a lane that ends unavailable, timeout or
// skipped is not captured. The dkim lane is at best partial (selectors cannot be listed), so a
// mail job is `partial` even when every other lane completed: docs/products/mail.md.
// The checks (./checks.ts) are imported by the lane workers only: the web and admin processes
// never load them, nor mailauth behind them.
import { z } from 'zod';
import { mailChangeRules } from './changes.ts';
import { domainName } from '../../contract/domain-name.ts';
import type { AsyncProduct, ProductDefinition, ProductRuntime } from '../kit/product-contract.ts';
import type { LaneReadiness } from '../../contract/lanes.ts';
import type { TaskPlan } from '../../contract/tasks.ts';
import { resolverOf } from '../kit/dns-replies.ts';
import { assembleMail } from './assemble.ts';
import { MAIL_PRICE, mailLaneList } from './lanes.ts';
import { mailResult, type MailResult } from './schema.ts';

export { mailFindings } from './findings.ts';
export { mailResult } from './schema.ts';

export const mailInput = z.strictObject({ value: domainName });
export type MailInput = z.infer<typeof mailInput>;

export const MAIL_DEADLINE_MS = 120_000;

const target = (i: MailInput) => i.value.toLowerCase().replace(/\.$/, '');

export function planMail(input: MailInput): TaskPlan[] {
  return mailLaneList.map((l) => ({
    check: l.check,
    lane: 'mail',
    productLane: l.lane,
    required: l.required,
    unitCost: l.unitCost,
    objectKey: target(input),
    distance: 0,
  }));
}

function readiness(runtime: ProductRuntime): Record<string, LaneReadiness> {
  const dns = resolverOf(runtime)?.readiness() ?? 'unconfigured';
  const outbound = runtime.services.outbound ? dns : 'unconfigured';
  return Object.fromEntries(
    mailLaneList.map((l) => [
      l.lane,
      l.lane === 'mta_sts' || l.lane === 'smtp_starttls' || l.lane === 'bimi' ? outbound : dns,
    ]),
  );
}

const job: AsyncProduct<MailInput> = {
  workerLanes: ['mail'],
  target: (i) => ({ type: 'domain_name', value: target(i) }),
  plan: planMail,
  assemble: (i, tasks) => assembleMail(target(i), tasks),
  deadlineMs: MAIL_DEADLINE_MS,
  changes: mailChangeRules,
};

export const mailProduct: ProductDefinition<MailInput, MailResult> = {
  id: 'lookup.mail.v1',
  title: 'Mail security lookup',
  mode: 'async',
  method: 'POST',
  path: '/v2/lookups/mail',
  scope: 'scan:create',
  rateClass: 'async_lookup',
  input: mailInput,
  echo: (i) => ({ value: i.value }),
  targetNames: (i) => [{ path: 'value', name: i.value }],
  resultSchema: mailResult,
  lanes: mailLaneList.map(({ lane, required, description }) => ({ lane, required, description })),
  price: () => MAIL_PRICE,
  readiness,
  job,
};
