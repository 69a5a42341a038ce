// mail.bimi: the BIMI assertion record at default._bimi.<domain> (and at the organisational domain
// for a subdomain without one), a tag-list (RFC 6376 §3.2, as BIMI's draft says) read by
// bimiTags below. The logo (l=) and the mark certificate (a=) are fetched and checked by
// ./bimi-evidence.ts. The DMARC prerequisite needs the dmarc lane and is derived at assembly
// (./derive.ts).
import { presence } from '../../dns/presence.ts';
import type { CheckContext } from '../kit/product-contract.ts';
import type { CheckOutput } from '../../contract/tasks.ts';
import { outcomeText, queryStatus } from '../kit/dns-replies.ts';
import { nameParts } from '../kit/name-parts.ts';
import { evidenceLine, taggedTxt, type DnsAsker } from './dns-snapshot.ts';
import { mailFinding } from './findings.ts';
import { LaneOutput, postureObjects } from './output.ts';
import { bimiEvidence } from './bimi-evidence.ts';
import type { BimiProjection } from './schema.ts';

const VERSION = /^v[ \t]*=[ \t]*BIMI1[ \t]*(?:;|$)/i;

const isFws = (c: number) => c === 32 || c === 9 || c === 13 || c === 10;

/**
 * The tags of a tag-list (RFC 6376 §3.2): ";"-separated, the first "=" splits name from value,
 * FWS around both is dropped and runs of whitespace inside a value become one space; a repeated
 * tag keeps the last value. One pass: this runs on the lane's main thread, where mailauth's
 * parseTagList (whose /^[ \t\r\n]+|[ \t\r\n]+$/g trim backtracks over an inner run of blanks)
 * cost 7 s on a 60 KB record (issue 18).
 */
export function bimiTags(record: string): Map<string, string> {
  const tags = new Map<string, string>();
  for (const segment of record.split(';')) {
    const eq = segment.indexOf('=');
    if (eq < 0) continue;
    let a = 0;
    let b = eq;
    while (a < b && isFws(segment.charCodeAt(a))) a++;
    while (b > a && isFws(segment.charCodeAt(b - 1))) b--;
    const name = segment.slice(a, b).trim().toLowerCase();
    if (name)
      tags.set(
        name,
        segment
          .slice(eq + 1)
          .replace(/\s+/g, ' ')
          .trim(),
      );
  }
  return tags;
}

function isHttps(u: string): boolean {
  try {
    return new URL(u).protocol === 'https:';
  } catch {
    return false;
  }
}

export async function runBimiCheck(
  domain: string,
  asker: DnsAsker,
  ctx: CheckContext,
  opts: { fetchTimeoutMs?: number } = {},
): Promise<CheckOutput> {
  const out = new LaneOutput();
  const org = nameParts(domain).registrableDomain;
  const names = [`default._bimi.${domain}`, ...(org && org !== domain ? [`default._bimi.${org}`] : [])];
  let chosen: { name: string; records: string[]; reply: Awaited<ReturnType<DnsAsker['ask']>> } | null = null;
  const asked: BimiProjection['queried'] = [];
  for (const name of names) {
    const reply = await asker.ask(name, 'TXT');
    asked.push({ name, ...queryStatus(reply) });
    if (presence(reply) === 'indeterminate') {
      out.failed([reply], {
        code: 'bimi_unknown',
        message: `The TXT query for ${name} got ${outcomeText(reply)}: whether BIMI is published is unknown, not missing.`,
      });
      postureObjects(out, domain, 'bimi', null);
      return out.done({
        domain,
        queried: asked,
        state: 'unknown',
        recordName: null,
        record: null,
        location: null,
        authority: null,
        logo: null,
        certificate: null,
      } satisfies BimiProjection);
    }
    const t = taggedTxt(reply, VERSION);
    if (t.records.length > 0) {
      chosen = { name, records: t.records, reply };
      break;
    }
  }
  if (!chosen) {
    postureObjects(out, domain, 'bimi', { state: 'absent' });
    return out.done({
      domain,
      queried: asked,
      state: 'absent',
      recordName: null,
      record: null,
      location: null,
      authority: null,
      logo: null,
      certificate: null,
    } satisfies BimiProjection);
  }
  const record = chosen.records[0]!;
  const tags = bimiTags(record);
  const location = tags.get('l') ?? null;
  const authority = tags.get('a') || null;
  const problems: string[] = [];
  if (chosen.records.length > 1) problems.push(`${chosen.records.length} v=BIMI1 records at ${chosen.name}`);
  const declined = location === '' && !authority;
  if (!declined) {
    if (!location) problems.push('no l= (logo) URL');
    else if (!isHttps(location)) problems.push(`l= is not an https URL (${location.slice(0, 100)})`);
    if (authority && !isHttps(authority)) problems.push(`a= is not an https URL (${authority.slice(0, 100)})`);
  }
  const state: BimiProjection['state'] = problems.length > 0 ? 'invalid' : declined ? 'declined' : 'present';
  const posture = postureObjects(out, domain, 'bimi', { state, location, authority });
  if (problems.length > 0)
    out.finding(
      mailFinding('bimi_record_invalid', posture, `The BIMI record of ${domain} is unusable: ${problems.join('; ')}.`, [
        evidenceLine(chosen.reply),
        record,
      ]),
    );
  if (location && isHttps(location))
    out.relate(
      posture,
      'links_to',
      out.object({ type: 'url', key: location, distance: 1, projection: { url: location, purpose: 'bimi_logo' } }),
    );
  if (authority && isHttps(authority))
    out.relate(
      posture,
      'links_to',
      out.object({
        type: 'url',
        key: authority,
        distance: 1,
        projection: { url: authority, purpose: 'bimi_certificate' },
      }),
    );
  return out.done({
    domain,
    queried: asked,
    state,
    recordName: chosen.name,
    record,
    location,
    authority,
    // The logo and the mark certificate, fetched and checked (./bimi-evidence.ts).
    ...(state === 'present'
      ? await bimiEvidence(ctx, out, posture, {
          domain,
          recordDomain: chosen.name.slice('default._bimi.'.length),
          location,
          authority,
          fetchTimeoutMs: opts.fetchTimeoutMs,
        })
      : { logo: null, certificate: null }),
  } satisfies BimiProjection);
}
