// A DKIM key record at a probed selector, parsed in the pool with mailauth's key parser
// (getPublicKey, replaying the TXT answer the check got: no network): key type, size, t=y, and
// revocation (an empty p=, RFC 6376 §3.6.1), which mailauth reports as an error we tell apart here.
import dkimTags from 'mailauth/lib/parse-dkim-headers.js';
import tools from 'mailauth/lib/tools.js';
import { replay, txtValues, type DnsSnapshot } from './dns-snapshot.ts';
import { mailauthResolver } from './mailauth-resolver.ts';

export interface DkimKeyFacts {
  name: string;
  state: 'key' | 'revoked' | 'invalid';
  keyType: string | null;
  bits: number | null;
  testing: boolean;
  error: string | null;
}

export async function parseDkimKey(input: { name: string; snapshot: DnsSnapshot }): Promise<DkimKeyFacts> {
  const get = replay(input.snapshot);
  const rr = txtValues(get(input.name, 'TXT'))[0] ?? '';
  const tags = dkimTags.parseTagList(rr.replace(/\s+/g, '')).parsed;
  const testing = String(tags.t?.value ?? '')
    .split(':')
    .map((f) => f.trim())
    .includes('y');
  if (tags.p !== undefined && String(tags.p.value) === '')
    return { name: input.name, state: 'revoked', keyType: null, bits: null, testing, error: null };
  try {
    const key = await tools.getPublicKey('DKIM', input.name, 1, mailauthResolver(get));
    const bits = key.keyType === 'ed25519' ? 256 : (key.modulusLength ?? null);
    return { name: input.name, state: 'key', keyType: key.keyType, bits, testing: key.testing, error: null };
  } catch (err) {
    return {
      name: input.name,
      state: 'invalid',
      keyType: null,
      bits: null,
      testing,
      error: (err as Error).message.slice(0, 120),
    };
  }
}
