// The size of a DNS response, computed from the records it carries. The resolver keeps no message
// size: a reply that arrived over UDP with EDNS (1232 bytes) says nothing about whether it would
// fit the 512 bytes a client without EDNS accepts (RFC 1035 §2.3.4, §4.2.1), and after a
// truncated UDP reply the accepted one is the TCP reply. So the answer is rebuilt here, at its
// smallest: header, the question, and each answer record with its owner name compressed to a
// pointer, no authority or additional section. Any real server's response is at least this big,
// so "over 512" computed here is a fact about every server of the zone.
import type { DnsRecord } from './types.ts';

const HEADER = 12;
/** QTYPE + QCLASS. */
const QUESTION_FIXED = 4;
/** A compression pointer (2) + TYPE, CLASS, TTL, RDLENGTH (10). */
const RR_FIXED = 2 + 10;

/** Bytes of a name in wire form, uncompressed: one length byte per label, the label, the root. */
export function wireNameBytes(name: string): number {
  const n = name.replace(/\.$/, '');
  if (n === '') return 1;
  let bytes = 1;
  for (const label of n.split('.')) bytes += 1 + Buffer.byteLength(label);
  return bytes;
}

/** RDATA bytes of a TXT record: each character-string is a length byte and its bytes. */
export function txtRdataBytes(strings: readonly string[]): number {
  let bytes = 0;
  for (const s of strings) bytes += 1 + Buffer.byteLength(s);
  return bytes;
}

/**
 * The smallest response carrying `records` as the answer to (qname, TXT): every TXT record at the
 * name counts (RFC 7208 §3.4), and each CNAME on the way costs its uncompressed target.
 */
export function minimalTxtAnswerBytes(qname: string, records: readonly DnsRecord[]): number {
  let bytes = HEADER + wireNameBytes(qname) + QUESTION_FIXED;
  for (const r of records) {
    if (r.type === 'TXT') {
      const strings = Array.isArray(r.data) ? (r.data as unknown[]).map(String) : [String(r.data)];
      bytes += RR_FIXED + txtRdataBytes(strings);
    } else if (r.type === 'CNAME') bytes += RR_FIXED + wireNameBytes(String(r.data));
  }
  return bytes;
}

/** The largest response a client without EDNS accepts over UDP (RFC 1035 §4.2.1). */
export const CLASSIC_UDP_LIMIT = 512;
