// MTA-STS record and policy parsing (parse pool), RFC 8461 §3.1 and §3.2, our own: each walks its
// input once with indexOf and character loops. mailauth 7.1's parsers trim with /[ \t]+$/ and
// /^[ \t]+|[ \t]+$/g, which backtrack quadratically over an inner run of blanks (a 60 KB TXT
// record cost 16 s, a 64 KiB policy 17 s; docs/products/mail.md). We keep their rules, strict and
// lax as mailauth has them (this project's tests were written against them), and mailauth's pure
// validateMx() for matching MX hosts against the policy's patterns. mailauth's getPolicy() and
// fetchPolicy(), which fetch with their own https.request, are never called: the check fetches
// through the outbound guard.
import mtaSts from 'mailauth/lib/mta-sts.js';
import { presence } from '../../dns/presence.ts';
import { replay, txtValues, type DnsSnapshot } from './dns-snapshot.ts';
import { mailauthErrorCode } from './mailauth-resolver.ts';

export interface MtaStsTxt {
  state: 'present' | 'absent' | 'multiple' | 'invalid' | 'unknown';
  id: string | null;
  /** The record follows RFC 8461 §3.1 exactly. */
  strict: boolean;
  error: string | null;
}

const isWsp = (c: number) => c === 32 || c === 9;

/** Strips SP and HTAB (RFC 5234 WSP) at both ends, or only at the start. */
function trimWsp(s: string, end = true): string {
  let a = 0;
  let b = s.length;
  while (a < b && isWsp(s.charCodeAt(a))) a++;
  if (end) while (b > a && isWsp(s.charCodeAt(b - 1))) b--;
  return s.slice(a, b);
}

// RFC 8461 §3.1 sts-ext-name and §3.2 sts-policy-ext-name share one grammar:
// (ALPHA / DIGIT) 0*31(ALPHA / DIGIT / "_" / "-" / "."). Bounded patterns: no backtracking.
const EXT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$/;
const TXT_ID = /^[A-Za-z0-9]{1,32}$/;
const TXT_EXT_VALUE = /^[\x21-\x3a\x3c\x3e-\x7e]+$/;
const STRICT_PREFIX = /^v=STSv1[ \t]*;/;
const LAX_PREFIX = /^v=STSv1[ \t]*;/i;

/** The id of a record that follows RFC 8461 §3.1 exactly (WSP only around ";"), else null. */
function strictTxtId(record: string): string | null {
  const parts = record.split(';');
  // The version exactly, then only blanks before the first ";".
  const head = parts[0]!;
  if (parts.length < 2 || !head.startsWith('v=STSv1') || trimWsp(head.slice(7)) !== '') return null;
  let id: string | null = null;
  for (let i = 1; i < parts.length; i++) {
    const last = i === parts.length - 1;
    // WSP around a delimiter belongs to the delimiter.
    const field = trimWsp(parts[i]!, !last);
    if (!field) {
      if (last) continue; // an optional trailing delimiter
      return null; // an empty field between two delimiters
    }
    const eq = field.indexOf('=');
    if (eq < 1) return null;
    const name = field.slice(0, eq);
    const value = field.slice(eq + 1);
    // A repeated field: the first wins, the others need only be valid.
    if (name === 'id' && id === null) {
      if (!TXT_ID.test(value)) return null;
      id = value;
    } else if (!EXT_NAME.test(name) || !TXT_EXT_VALUE.test(value)) return null;
  }
  return id;
}

/** The id of a record read leniently (any case, blanks anywhere, any non-empty id), else null. */
function laxTxtId(record: string): string | null {
  const parts = record.trim().split(';');
  if (parts.length < 2 || parts[0]!.trim().toLowerCase() !== 'v=stsv1') return null;
  for (let i = 1; i < parts.length; i++) {
    const field = parts[i]!.trim();
    const eq = field.indexOf('=');
    if (eq < 1) continue;
    const value = field.slice(eq + 1).trim();
    if (field.slice(0, eq).trim().toLowerCase() === 'id' && value) return value; // the first id wins
  }
  return null;
}

/** The `_mta-sts` TXT record of a domain, from the answers the check gathered. */
export function parseMtaStsTxt(input: { domain: string; snapshot: DnsSnapshot }): MtaStsTxt {
  const reply = replay(input.snapshot)(`_mta-sts.${input.domain}`, 'TXT');
  const p = presence(reply);
  if (p === 'indeterminate') return { state: 'unknown', id: null, strict: false, error: mailauthErrorCode(reply) };
  const values = p === 'present' ? txtValues(reply) : [];
  // Records that do not begin with "v=STSv1;" are discarded before counting (RFC 8461 §3.1).
  const lax = values.filter((v) => LAX_PREFIX.test(v.trim()));
  if (lax.length > 1) return { state: 'multiple', id: null, strict: false, error: 'multi_sts_records' };
  const id = lax.length === 1 ? laxTxtId(lax[0]!) : null;
  if (id === null) {
    const tagged = values.some((v) => /^v=STSv1/i.test(v.trim()));
    return { state: tagged ? 'invalid' : 'absent', id: null, strict: false, error: tagged ? 'no valid id' : null };
  }
  const strict = values.filter((v) => STRICT_PREFIX.test(v));
  return { state: 'present', id, strict: strict.length === 1 && strictTxtId(strict[0]!) === id, error: null };
}

export interface MtaStsPolicy {
  policy: { version: string; mode: 'enforce' | 'testing' | 'none'; maxAge: number; mx: string[] } | null;
  /** Why the policy is unusable (mailauth's error codes); null when it parsed. */
  error: string | null;
  /** Parsed only leniently: case or whitespace outside RFC 8461 §3.2. */
  lax: boolean;
  coverage: Array<{ host: string; covered: boolean; match: string | null }>;
}

const MAX_AGE_LIMIT = 31_557_600;
const isDigit = (c: number) => c >= 48 && c <= 57;
const isLdh = (c: number) => isDigit(c) || (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 45;

/** ["*."] Domain (RFC 8461 §3.2, RFC 5321 §4.1.2): LDH labels, no hyphen at either end of one. */
function isMxPattern(v: string): boolean {
  const labels = (v.startsWith('*.') ? v.slice(2) : v).split('.');
  for (const label of labels) {
    if (label.length === 0 || label.charCodeAt(0) === 45 || label.charCodeAt(label.length - 1) === 45) return false;
    for (let i = 0; i < label.length; i++) if (!isLdh(label.charCodeAt(i))) return false;
  }
  return true;
}

class PolicyError extends Error {
  readonly code: string;
  constructor(code: string) {
    super(code);
    this.code = code;
  }
}

/** One reading of a policy file, strict (RFC 8461 §3.2 exactly) or lax (case, blanks, numbers). */
function readPolicy(body: string, strict: boolean): NonNullable<MtaStsPolicy['policy']> {
  const fields = new Map<string, string>();
  const mx = new Set<string>();
  let invalidMx = false;
  let maxAge: number | null = null;
  for (const line of body.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    let key: string;
    let value: string;
    if (strict) {
      key = line.slice(0, colon);
      if (!EXT_NAME.test(key)) continue;
      value = trimWsp(line.slice(colon + 1));
    } else {
      key = line.slice(0, colon).toLowerCase().trim();
      value = line.slice(colon + 1).trim();
    }
    if (key === 'mx') {
      if (!isMxPattern(value) && strict) invalidMx = true;
      mx.add(value.toLowerCase());
      continue;
    }
    // A repeated field other than mx: the first one counts.
    if (fields.has(key)) continue;
    fields.set(key, value);
    if (key === 'max_age') {
      const digits = value.length >= 1 && value.length <= 10 && [...value].every((c) => isDigit(c.charCodeAt(0)));
      maxAge = digits || !strict ? Number(value) : Number.NaN;
    }
  }
  const version = fields.get('version');
  if (version !== 'STSv1') throw new PolicyError('invalid_sts_version');
  const rawMode = fields.get('mode');
  const mode = strict ? rawMode : rawMode?.toLowerCase();
  if (mode !== 'testing' && mode !== 'enforce' && mode !== 'none') throw new PolicyError('invalid_sts_mode');
  if (maxAge === null || Number.isNaN(maxAge) || maxAge < 0 || maxAge > MAX_AGE_LIMIT)
    throw new PolicyError('invalid_sts_max_age');
  if (invalidMx) throw new PolicyError('invalid_sts_mx');
  if (mode !== 'none' && mx.size === 0) throw new PolicyError('invalid_sts_mx');
  return { version, mode, maxAge, mx: [...mx] };
}

export function parseMtaStsPolicy(input: { body: string; hosts: string[] }): MtaStsPolicy {
  let policy: NonNullable<MtaStsPolicy['policy']>;
  let lax = false;
  try {
    policy = readPolicy(input.body, true);
  } catch {
    try {
      policy = readPolicy(input.body, false);
      lax = true;
    } catch (err) {
      return { policy: null, error: (err as PolicyError).code ?? 'invalid_policy', lax: false, coverage: [] };
    }
  }
  const coverage = input.hosts.map((host) => {
    const v = mtaSts.validateMx(host, policy as never) as { valid: boolean; match?: string };
    return { host, covered: v.valid, match: v.match ?? null };
  });
  return { policy, error: null, lax, coverage };
}
