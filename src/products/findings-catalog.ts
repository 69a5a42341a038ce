// Every finding code the service can raise, gathered from the products that declare them.
// docs/findings.md lists the same rows; test/unit/findings-catalog.test.ts fails when they drift.
import { domainFindings } from './domain/findings.ts';
import type { FindingKind } from './kit/findings.ts';
import { webFindings } from './web/findings.ts';
import { mailFindings } from './mail/findings.ts';
import { scanFindings } from './scan/findings.ts';

export interface CatalogEntry extends FindingKind {
  product: string;
}

export const findingCatalog: readonly CatalogEntry[] = [
  ...Object.values(domainFindings).map((f) => ({ ...f, product: 'lookup.domain.v1' })),
  ...Object.values(webFindings).map((f) => ({ ...f, product: 'lookup.web.v1' })),
  ...Object.values(mailFindings).map((f) => ({ ...f, product: 'lookup.mail.v1' })),
  ...Object.values(scanFindings).map((f) => ({ ...f, product: 'scan.recursive.v1' })),
];
