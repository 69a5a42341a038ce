// MTA-STS record and policy parsing (parse pool), with mailauth's RFC 8461 parsers only: its
// resolvePolicy() replays the TXT answers the check gathered (no network: the resolver is a
// snapshot), parsePolicy() and validateMx() are pure. Its getPolicy()/fetchPolicy(), which
// fetch the policy with their own https.request, are never called: the check fetches through
// the outbound guard.
import mtaSts from 'mailauth/lib/mta-sts.js';
import { replay, type DnsSnapshot } from './dns-snapshot.ts';
import { mailauthResolver } from './mailauth-resolver.ts';

export interface MtaStsTxt {
  state: 'present' | 'absent' | 'multiple' | 'invalid' | 'unknown';
  id: string | null;
  /** The record follows RFC 8461 §3.1 exactly (mailauth strict mode). */
  strict: boolean;
  error: string | null;
}

export async function parseMtaStsTxt(input: { domain: string; snapshot: DnsSnapshot }): Promise<MtaStsTxt> {
  // Replays the gathered answers: mailauth's DNSResolver type wants strings, which TXT answers are.
  const resolver = mailauthResolver(replay(input.snapshot)) as (name: string, type: string) => Promise<string[][]>;
  try {
    const id = await mtaSts.resolvePolicy(input.domain, { resolver, strict: false });
    if (!id) {
      // resolvePolicy says false both for "no v=STSv1 record" and for "record without an id".
      const r = replay(input.snapshot)(`_mta-sts.${input.domain}`, 'TXT');
      const tagged = r.answers.some((a) =>
        /^v=STSv1/i.test((Array.isArray(a.data) ? (a.data as string[]).join('') : String(a.data)).trim()),
      );
      return { state: tagged ? 'invalid' : 'absent', id: null, strict: false, error: tagged ? 'no valid id' : null };
    }
    const strictId = await mtaSts.resolvePolicy(input.domain, { resolver, strict: true }).catch(() => false);
    return { state: 'present', id: String(id), strict: strictId === id, error: null };
  } catch (err) {
    const code = (err as { code?: string }).code ?? 'error';
    if (code === 'multi_sts_records') return { state: 'multiple', id: null, strict: false, error: code };
    return { state: 'unknown', id: null, strict: false, error: code };
  }
}

export interface MtaStsPolicy {
  policy: { version: string; mode: 'enforce' | 'testing' | 'none'; maxAge: number; mx: string[] } | null;
  /** Why the policy is unusable (mailauth's error code); null when it parsed. */
  error: string | null;
  /** Parsed only leniently: case or whitespace outside RFC 8461 §3.2. */
  lax: boolean;
  coverage: Array<{ host: string; covered: boolean; match: string | null }>;
}

export function parseMtaStsPolicy(input: { body: string; hosts: string[] }): MtaStsPolicy {
  let policy: MtaStsPolicy['policy'] = null;
  let lax = false;
  try {
    policy = mtaSts.parsePolicy(input.body, { strict: true }) as MtaStsPolicy['policy'];
  } catch {
    try {
      policy = mtaSts.parsePolicy(input.body, { strict: false }) as MtaStsPolicy['policy'];
      lax = true;
    } catch (err) {
      return { policy: null, error: (err as { code?: string }).code ?? 'invalid_policy', lax: false, coverage: [] };
    }
  }
  const coverage = input.hosts.map((host) => {
    const v = mtaSts.validateMx(host, policy as never) as { valid: boolean; match?: string };
    return { host, covered: v.valid, match: v.match ?? null };
  });
  return { policy, error: null, lax, coverage };
}
