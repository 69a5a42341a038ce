// Content-Security-Policy as CSP Level 3 defines it (W3C CSP3 §2.2 "parse a serialized CSP"):
// a header value may carry several policies separated by ","; a policy is ";"-separated
// directives; the name is lower-cased; a repeated directive is ignored (the first one wins); the
// value is the whitespace-separated source list. Every enforced policy applies at once, so a
// script runs only if EVERY policy allows it: the assessment says "allows X" only when all do.
// Report-only policies are parsed and reported apart; they enforce nothing.
//
// Fallbacks (CSP3 §6.8.3 "effective directive"): script elements use script-src-elem, then
// script-src, then default-src; inline event handlers script-src-attr, then script-src, then
// default-src (likewise for styles); object-src falls back to default-src; base-uri,
// form-action and frame-ancestors never fall back. A nonce or hash source disables
// 'unsafe-inline'; 'strict-dynamic' (with a nonce or hash) also disables host and scheme sources.

export interface CspPolicy {
  directives: Record<string, string[]>;
  /** Directive names that appeared again in the same policy (ignored by browsers). */
  duplicates: string[];
  /** Directive names CSP3 and its extensions do not define (typos such as "script-src:"). */
  unknown: string[];
}

export interface CspAssessment {
  enforced: boolean;
  /** Where the enforced policies came from. */
  source: 'header' | 'meta' | 'header_and_meta' | null;
  policies: CspPolicy[];
  reportOnly: CspPolicy[];
  /** Syntax problems of the enforced and report-only policies, human readable. */
  problems: string[];
  scripts: {
    /** Some policy restricts scripts at all (script-src-elem, script-src or default-src). */
    restricted: boolean;
    unsafeInline: boolean;
    unsafeEval: boolean;
    /** Scripts may come from any host or a data: URL (*, http:, https:, data:…). */
    broadSources: boolean;
    nonces: boolean;
    hashes: boolean;
    strictDynamic: boolean;
  };
  /** object-src (or default-src) is 'none'. */
  objectSrcNone: boolean;
  /** base-uri is set and not broad. */
  baseUriRestricted: boolean;
  /** frame-ancestors of the header policies (a meta policy cannot set it); null when absent. */
  frameAncestors: string[] | null;
  formActionRestricted: boolean;
  upgradeInsecureRequests: boolean;
  /** The directives (`*-src-elem`, `*-src-attr`…) present in any enforced policy. */
  directiveNames: string[];
}

const KNOWN = new Set([
  'default-src',
  'script-src',
  'script-src-elem',
  'script-src-attr',
  'style-src',
  'style-src-elem',
  'style-src-attr',
  'img-src',
  'font-src',
  'connect-src',
  'media-src',
  'object-src',
  'frame-src',
  'child-src',
  'worker-src',
  'manifest-src',
  'prefetch-src',
  'fenced-frame-src',
  'base-uri',
  'sandbox',
  'form-action',
  'frame-ancestors',
  'navigate-to',
  'report-uri',
  'report-to',
  'upgrade-insecure-requests',
  'block-all-mixed-content',
  'require-trusted-types-for',
  'trusted-types',
  'require-sri-for',
  'plugin-types',
  'webrtc',
]);

/** Sources that let content come from anywhere (or from inline data). */
const BROAD = new Set([
  '*',
  'http:',
  'https:',
  'data:',
  'blob:',
  'filesystem:',
  'ftp:',
  'ws:',
  'wss:',
  'http://*',
  'https://*',
]);
const ASCII_WS = /[\t\n\f\r ]+/;

/** At most this many syntax problems are listed (a policy of "a;a;a;…" repeats one directive thousands of times). */
export const MAX_CSP_PROBLEMS = 50;

const isAsciiWs = (c: number) => c === 9 || c === 10 || c === 12 || c === 13 || c === 32;

/**
 * Strips leading and trailing ASCII whitespace (CSP3 §2.2.1: TAB, LF, FF, CR, SPACE; not \v, NBSP
 * or U+FEFF, which String.prototype.trim also strips). An index walk: the anchored regex
 * /[\t\n\f\r ]+$/ is tried at every position of an inner whitespace run, which made a 60 KB run cost
 * seconds (issue 18).
 */
export function trimAsciiWs(s: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && isAsciiWs(s.charCodeAt(start))) start++;
  while (end > start && isAsciiWs(s.charCodeAt(end - 1))) end--;
  return start === 0 && end === s.length ? s : s.slice(start, end);
}

/** One serialized policy (CSP3 §2.2.1). Linear in its length. */
export function parseCspPolicy(serialized: string): CspPolicy {
  const policy: CspPolicy = { directives: {}, duplicates: [], unknown: [] };
  for (const raw of serialized.split(';')) {
    const token = trimAsciiWs(raw);
    // eslint-disable-next-line no-control-regex
    if (token === '' || /[^\x00-\x7f]/.test(token)) continue;
    const [name, ...value] = token.split(ASCII_WS);
    const directive = name!.toLowerCase();
    if (Object.hasOwn(policy.directives, directive)) {
      policy.duplicates.push(directive);
      continue;
    }
    if (!KNOWN.has(directive)) policy.unknown.push(directive);
    policy.directives[directive] = value.map((v) =>
      v.toLowerCase().startsWith("'nonce-") || v.toLowerCase().startsWith("'sha") ? v : v.toLowerCase(),
    );
  }
  return policy;
}

/** A header value may hold several policies, comma-separated (CSP3 §2.2.2). */
export function parseCspHeader(values: readonly string[]): CspPolicy[] {
  return values
    .flatMap((v) => v.split(','))
    .map(trimAsciiWs)
    .filter((s) => s.length > 0)
    .map(parseCspPolicy);
}

/**
 * Every policy of a response, parsed once: the CSP3 assessment (assessCsp) and the Observatory
 * score (observatory-score.ts) both read this. `meta` keeps the <meta> policies as written
 * (frame-ancestors, report-uri and sandbox included): the Observatory reads them that way, CSP3
 * ignores those three (assessCsp drops them).
 */
export interface ParsedCsp {
  header: CspPolicy[];
  meta: CspPolicy[];
  reportOnly: CspPolicy[];
}

export function parseCsp(input: {
  header: readonly string[];
  meta: readonly string[];
  reportOnly: readonly string[];
}): ParsedCsp {
  return {
    header: parseCspHeader(input.header),
    meta: parseCspHeader(input.meta),
    reportOnly: parseCspHeader(input.reportOnly),
  };
}

function list(p: CspPolicy, ...names: string[]): string[] | null {
  for (const n of names) if (Object.hasOwn(p.directives, n)) return p.directives[n]!;
  return null;
}

const hasNonce = (l: string[]) => l.some((s) => s.startsWith("'nonce-"));
const hasHash = (l: string[]) => l.some((s) => /^'sha(256|384|512)-/.test(s));

/** What one policy lets scripts do; null list = the policy does not restrict them. */
function scriptFacts(p: CspPolicy) {
  const elem = list(p, 'script-src-elem', 'script-src', 'default-src');
  const attr = list(p, 'script-src-attr', 'script-src', 'default-src');
  const base = list(p, 'script-src', 'default-src');
  const inlineAllowed = (l: string[] | null) =>
    l === null || (l.includes("'unsafe-inline'") && !hasNonce(l) && !hasHash(l));
  const strictDynamic = !!elem && elem.includes("'strict-dynamic'") && (hasNonce(elem) || hasHash(elem));
  const broad = elem === null || (!strictDynamic && elem.some((s) => BROAD.has(s)));
  return {
    restricted: elem !== null,
    unsafeInline: inlineAllowed(elem) || inlineAllowed(attr),
    unsafeEval: base === null || base.includes("'unsafe-eval'"),
    broad,
    nonces: !!elem && hasNonce(elem),
    hashes: !!elem && hasHash(elem),
    strictDynamic,
  };
}

function problemsOf(policies: CspPolicy[], label: string): string[] {
  return policies.flatMap((p, i) => [
    ...p.duplicates.map((d) => `${label} policy ${i + 1}: directive ${d} repeated (browsers ignore the repeat)`),
    ...p.unknown.map((d) => `${label} policy ${i + 1}: unknown directive "${d}" (ignored by browsers)`),
  ]);
}

function capped(problems: string[]): string[] {
  if (problems.length <= MAX_CSP_PROBLEMS) return problems;
  return [
    ...problems.slice(0, MAX_CSP_PROBLEMS),
    `… and ${problems.length - MAX_CSP_PROBLEMS} more problems of the same kinds (not listed)`,
  ];
}

export function assessCsp(parsed: ParsedCsp): CspAssessment {
  const fromHeader = parsed.header;
  // A <meta> policy cannot carry frame-ancestors, report-uri or sandbox (HTML §4.2.5.3).
  const fromMeta = parsed.meta.map((p) => {
    const directives = { ...p.directives };
    for (const d of ['frame-ancestors', 'report-uri', 'sandbox']) delete directives[d];
    return { ...p, directives };
  });
  const policies = [...fromHeader, ...fromMeta];
  const reportOnly = parsed.reportOnly;
  const facts = policies.map(scriptFacts);
  const every = (f: (x: ReturnType<typeof scriptFacts>) => boolean) => facts.length === 0 || facts.every(f);
  const some = (f: (x: ReturnType<typeof scriptFacts>) => boolean) => facts.some(f);
  const frameAncestors = fromHeader.map((p) => list(p, 'frame-ancestors')).find((l) => l !== null) ?? null;
  const baseUris = policies.map((p) => list(p, 'base-uri'));
  const formActions = policies.map((p) => list(p, 'form-action'));
  return {
    enforced: policies.length > 0,
    source:
      fromHeader.length && fromMeta.length
        ? 'header_and_meta'
        : fromHeader.length
          ? 'header'
          : fromMeta.length
            ? 'meta'
            : null,
    policies,
    reportOnly,
    problems: capped([...problemsOf(policies, 'enforced'), ...problemsOf(reportOnly, 'report-only')]),
    scripts: {
      restricted: some((f) => f.restricted),
      unsafeInline: every((f) => f.unsafeInline),
      unsafeEval: every((f) => f.unsafeEval),
      broadSources: every((f) => f.broad),
      nonces: some((f) => f.nonces),
      hashes: some((f) => f.hashes),
      strictDynamic: some((f) => f.strictDynamic),
    },
    objectSrcNone: policies.some((p) => {
      const l = list(p, 'object-src', 'default-src');
      return !!l && (l.length === 0 || (l.length === 1 && l[0] === "'none'"));
    }),
    baseUriRestricted: baseUris.some((l) => l !== null && !l.some((s) => BROAD.has(s))),
    frameAncestors,
    formActionRestricted: formActions.some((l) => l !== null && !l.some((s) => BROAD.has(s))),
    upgradeInsecureRequests: policies.some((p) => Object.hasOwn(p.directives, 'upgrade-insecure-requests')),
    directiveNames: [...new Set(policies.flatMap((p) => Object.keys(p.directives)))].sort(),
  };
}
