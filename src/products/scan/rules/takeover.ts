// Subdomain takeover, precise enough to trust. A dangling CNAME is a finding only when
//   - its target answers an authoritative NXDOMAIN (SERVFAIL, timeout and an empty NOERROR are
//     not enough: they prove nothing about the target), or
//   - a documented provider matches BOTH the CNAME target's suffix and the response body the
//     provider serves for an unclaimed name (a body string alone fires on any page that quotes it).
// Providers whose takeover is an edge case (claims are possible only in some setups) are at most
// low / tentative. Service and policy names (_tcp, _dmarc, _domainkey…) never raise either.
//
// The fingerprints follow the public "can-i-take-over-xyz" notes (EdOverflow et al.), kept to the
// providers whose unclaimed-name page is stable; docs/products/scan.md lists them.
import { isServiceName, normalName } from './names.ts';

export interface TakeoverProvider {
  name: string;
  /** CNAME target suffixes (a label boundary is required: "x.github.io", never "evilgithub.io"). */
  suffixes: readonly string[];
  /** Text the provider serves for an unclaimed name (matched case-sensitively, as served). */
  fingerprints: readonly string[];
  /** Claiming is possible only in some configurations: low / tentative at most. */
  edgeCase: boolean;
}

export const takeoverProviders: readonly TakeoverProvider[] = [
  {
    name: 'GitHub Pages',
    suffixes: ['github.io'],
    fingerprints: ["There isn't a GitHub Pages site here."],
    edgeCase: false,
  },
  {
    name: 'Amazon S3',
    suffixes: ['s3.amazonaws.com', 's3-website-us-east-1.amazonaws.com', 's3-website.eu-west-1.amazonaws.com'],
    fingerprints: ['The specified bucket does not exist', 'NoSuchBucket'],
    edgeCase: false,
  },
  {
    name: 'Heroku',
    suffixes: ['herokuapp.com', 'herokudns.com'],
    fingerprints: ['No such app', 'herokucdn.com/error-pages/no-such-app.html'],
    edgeCase: true,
  },
  { name: 'Surge.sh', suffixes: ['surge.sh'], fingerprints: ['project not found'], edgeCase: false },
  { name: 'Bitbucket', suffixes: ['bitbucket.io'], fingerprints: ['Repository not found'], edgeCase: false },
  {
    name: 'Ghost',
    suffixes: ['ghost.io'],
    fingerprints: ['The thing you were looking for is no longer here, or never was'],
    edgeCase: false,
  },
  {
    name: 'Pantheon',
    suffixes: ['pantheonsite.io'],
    fingerprints: ['The gods are wise, but do not know of the site which you seek.'],
    edgeCase: false,
  },
  {
    name: 'Shopify',
    suffixes: ['myshopify.com'],
    fingerprints: ['Sorry, this shop is currently unavailable.'],
    edgeCase: true,
  },
  {
    name: 'Tumblr',
    suffixes: ['domains.tumblr.com'],
    fingerprints: ["Whatever you were looking for doesn't currently exist at this address."],
    edgeCase: true,
  },
  { name: 'Fastly', suffixes: ['fastly.net'], fingerprints: ['Fastly error: unknown domain'], edgeCase: true },
  { name: 'Zendesk', suffixes: ['zendesk.com'], fingerprints: ['Help Center Closed'], edgeCase: true },
  { name: 'Readme.io', suffixes: ['readme.io'], fingerprints: ['Project doesnt exist... yet!'], edgeCase: false },
];

export function providerFor(cnameTarget: string): TakeoverProvider | null {
  const t = normalName(cnameTarget);
  return takeoverProviders.find((p) => p.suffixes.some((s) => t === s || t.endsWith(`.${s}`))) ?? null;
}

/** The provider whose suffix AND fingerprint both match; null otherwise (or for a service name). */
export function fingerprintMatch(
  name: string,
  cnameTargets: readonly string[],
  body: string | null,
): TakeoverProvider | null {
  if (isServiceName(name) || !body) return null;
  for (const target of cnameTargets) {
    const p = providerFor(target);
    if (p?.fingerprints.some((f) => body.includes(f))) return p;
  }
  return null;
}
