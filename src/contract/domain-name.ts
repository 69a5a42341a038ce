// Domain names as inputs: trailing dot and case folded, IDN converted to punycode (A-labels),
// RFC 1035 lengths enforced (label ≤ 63, name ≤ 253), letters-digits-hyphen labels (plus "_" so
// service names like _dmarc.example.com pass).
import { domainToASCII } from 'node:url';
import { z } from 'zod';

const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

export type DomainCheck = { ok: true; name: string } | { ok: false; message: string };

export function normalizeDomainName(input: string): DomainCheck {
  const trimmed = input.trim();
  if (trimmed.length === 0) return { ok: false, message: 'must not be empty' };
  if (trimmed.length > 254) return { ok: false, message: 'must be at most 253 characters' };
  const noDot = trimmed.endsWith('.') ? trimmed.slice(0, -1) : trimmed;
  if (noDot.length === 0) return { ok: false, message: 'the root zone is not a valid target' };
  const rawLabels = noDot.split('.');
  if (rawLabels.some((l) => l.length === 0)) return { ok: false, message: 'must not contain empty labels' };
  if (rawLabels.some((l) => l.length > 63)) return { ok: false, message: 'each label must be at most 63 characters' };
  // domainToASCII lowercases and converts IDN; it returns '' for names it cannot convert.
  const ascii = /^[\x21-\x7e]*$/.test(noDot) ? noDot.toLowerCase() : domainToASCII(noDot);
  if (!ascii) return { ok: false, message: 'is not a valid internationalised domain name' };
  if (ascii.length > 253) return { ok: false, message: 'must be at most 253 characters' };
  const labels = ascii.split('.');
  for (const label of labels) {
    if (label.length > 63) return { ok: false, message: 'each label must be at most 63 characters' };
    if (!LABEL.test(label))
      return { ok: false, message: `label "${label}" has characters other than letters, digits and hyphens` };
  }
  if (/^\d+$/.test(labels[labels.length - 1]!))
    return { ok: false, message: 'must not end in a numeric label (an IP address is not a domain name)' };
  return { ok: true, name: ascii };
}

/** zod field: accepts a domain name, outputs its normalised A-label form. */
export const domainName = z
  .string()
  .max(254, 'must be at most 253 characters')
  .transform((value, ctx) => {
    const r = normalizeDomainName(value);
    if (!r.ok) {
      ctx.addIssue({ code: 'custom', message: r.message });
      return z.NEVER;
    }
    return r.name;
  });
