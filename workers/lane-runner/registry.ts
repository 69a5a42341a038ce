// Check name → CheckSpec, for every lane. Product modules export their checks; adding a product's
// checks is adding its array to `productChecks`. Tests register their own with registerCheck().
// The lists are light (name, lane, timeout): each check's implementation is imported at its first
// run (src/products/kit/lazy.ts), so a lane loads only the code of the checks it runs and the
// orchestrator, which reads the timeouts, none.
import type { CheckSpec } from '../../src/products/kit/product-contract.ts';
import { domainChecks } from '../../src/products/domain/checks.ts';
import { webChecks } from '../../src/products/web/checks.ts';
import { mailChecks } from '../../src/products/mail/checks.ts';
import { scanChecks } from '../../src/products/scan/checks/index.ts';

/** Every check a product module ships. */
const productChecks: readonly CheckSpec[] = [...domainChecks, ...webChecks, ...mailChecks, ...scanChecks];

const registry = new Map<string, CheckSpec>();

export function registerCheck(spec: CheckSpec): void {
  const existing = registry.get(spec.name);
  if (existing && existing !== spec) throw new Error(`check ${spec.name} is already registered`);
  registry.set(spec.name, spec);
}

for (const spec of productChecks) registerCheck(spec);

export type CheckLookup = (name: string) => CheckSpec | undefined;

export const checkByName: CheckLookup = (name) => registry.get(name);

export function checkTimeoutMs(name: string): number | undefined {
  return registry.get(name)?.timeoutMs;
}

export function registeredChecks(): CheckSpec[] {
  return [...registry.values()];
}
