// The four scan profiles of CONTRACT §11, as data: what runs at distance 0, where recursion may
// find names, how many hops it follows, how many objects a job keeps, and which active work an
// advanced scan adds. docs/products/scan.md shows this table; test/unit/scan-planner.test.ts
// checks the planner against it.
export const scanProfiles = ['quick', 'balanced', 'deep', 'advanced'] as const;
export type ScanProfile = (typeof scanProfiles)[number];

/** Where names come from (each source is capped per task at `sourceCap`). */
export type NameSource = 'mx' | 'ns' | 'cname' | 'srv' | 'spf' | 'san' | 'link' | 'axfr' | 'wordlist';

export type ActiveWork = 'tcp_probe' | 'tls_protocols' | 'axfr' | 'wordlist' | 'well_known';

export interface ProfileSpec {
  passive: boolean;
  /** Names at most this many hops from the target are scanned (0: the target only). */
  hops: number;
  /**
   * Objects a job keeps at least; with `objectCapPerCredit`, the cap grows with the budget
   * (scanObjectCap: CONTRACT §11, "scales with maxCredits").
   */
  objectCap: number;
  /** Objects kept per credit of maxCredits, when the cap scales (deep, advanced); 0: fixed. */
  objectCapPerCredit: number;
  /** Names one source of one task may contribute; beyond it the task is partial (source_truncated). */
  sourceCap: number;
  /** Recursion sources; names found elsewhere are recorded, never followed. */
  sources: readonly NameSource[];
  /** Web posture of which in-scope hosts: none, the apex and www, or every host that resolves. */
  web: 'none' | 'apex_www' | 'every_host';
  /** Delegation and registration of the registrable domain. */
  domain: boolean;
  /** Mail posture of every in-scope name with MX records (not only the target's). */
  mailEveryDomain: boolean;
  /** The mail check probes DKIM selectors. */
  dkimProbes: boolean;
  active: readonly ActiveWork[];
  /** Job deadline. */
  deadlineMs: number;
}

const MIN = 60_000;

export const profiles: Record<ScanProfile, ProfileSpec> = {
  quick: {
    passive: true,
    hops: 0,
    objectCap: 50,
    objectCapPerCredit: 0,
    sourceCap: 25,
    sources: [],
    web: 'none',
    domain: false,
    mailEveryDomain: false,
    dkimProbes: false,
    active: [],
    deadlineMs: 10 * MIN,
  },
  balanced: {
    passive: true,
    hops: 1,
    objectCap: 500,
    objectCapPerCredit: 0,
    sourceCap: 50,
    sources: ['mx', 'ns', 'cname', 'srv', 'spf', 'san'],
    web: 'apex_www',
    domain: true,
    mailEveryDomain: false,
    dkimProbes: false,
    active: [],
    deadlineMs: 30 * MIN,
  },
  deep: {
    passive: true,
    hops: 3,
    objectCap: 5000,
    objectCapPerCredit: 2,
    sourceCap: 200,
    sources: ['mx', 'ns', 'cname', 'srv', 'spf', 'san', 'link'],
    web: 'every_host',
    domain: true,
    mailEveryDomain: true,
    dkimProbes: true,
    active: [],
    deadlineMs: 120 * MIN,
  },
  advanced: {
    passive: false,
    hops: 3,
    objectCap: 10_000,
    objectCapPerCredit: 2,
    sourceCap: 200,
    sources: ['mx', 'ns', 'cname', 'srv', 'spf', 'san', 'link', 'axfr', 'wordlist'],
    web: 'every_host',
    domain: true,
    mailEveryDomain: true,
    dkimProbes: true,
    active: ['tcp_probe', 'tls_protocols', 'axfr', 'wordlist', 'well_known'],
    deadlineMs: 240 * MIN,
  },
};

/** CONTRACT §6: what one task of each kind costs. */
export const unitCosts = { dns: 1, mail: 2, web: 2, domain: 1, active: 3 } as const;

export const scanBudgetBounds: Record<ScanProfile, { min: number; max: number }> = {
  quick: { min: 5, max: 100 },
  balanced: { min: 20, max: 1000 },
  deep: { min: 50, max: 100_000 },
  advanced: { min: 50, max: 200_000 },
};
