// How big the SPF answers are: the record's character-strings and the smallest DNS response that
// carries the TXT answer at the domain and at each include/redirect target. Every TXT record at a
// name travels in that answer (RFC 7208 §3.4), not only the SPF one, so verification records
// published beside it count. Over 512 bytes, a receiver that asks without EDNS gets a truncated
// reply and must retry over TCP; some then give up with temperror (RFC 7208 §3.4 asks to stay
// under 512, RFC 1035 §4.2.1). The resolver's own transport is reported as a hint only: it asks
// with EDNS (1232 bytes), so it falls back to TCP only past that.
import { CLASSIC_UDP_LIMIT, minimalTxtAnswerBytes, txtRdataBytes } from '../../dns/message-size.ts';
import { presence, recordsOf } from '../../dns/presence.ts';
import type { QueryResult } from '../../dns/types.ts';
import { replay, type DnsSnapshot } from './dns-snapshot.ts';
import type { SpfNode } from './spf-evaluate.ts';

const SPF = /^v=spf1(?: |$)/i;

export interface SpfTargetSize {
  domain: string;
  via: SpfNode['via'];
  txtRecords: number;
  answerBytes: number;
}

export interface SpfSize {
  /** Bytes of each character-string of the SPF record at the domain (each at most 255). */
  strings: number[];
  /** The record's bytes once its strings are joined (RFC 7208 §3.3). */
  recordBytes: number;
  /** TXT records at the domain, SPF or not: all of them are in the answer. */
  txtRecords: number;
  /** The smallest response carrying the domain's TXT answer (a lower bound for every server). */
  answerBytes: number;
  over512: boolean;
  /** How the resolver got the answer: tcp only past its EDNS size of 1232 bytes. */
  transport: 'udp' | 'tcp' | null;
  /** Include and redirect targets whose TXT answer is over 512 bytes. */
  targetsOver512: SpfTargetSize[];
}

const strings = (data: unknown): string[] => (Array.isArray(data) ? data.map(String) : [String(data)]);

function answerSize(r: QueryResult): number {
  return minimalTxtAnswerBytes(r.name, r.answers);
}

/** The sizes for a domain whose TXT reply is present; null when it is not. */
export function spfSize(root: QueryResult, tree: SpfNode | null, snapshot: DnsSnapshot): SpfSize | null {
  if (presence(root) !== 'present') return null;
  const txt = recordsOf(root);
  const spf = txt.find((r) => SPF.test(strings(r.data).join('')));
  const parts = spf ? strings(spf.data) : [];
  const answerBytes = answerSize(root);
  const get = replay(snapshot);
  const targetsOver512: SpfTargetSize[] = [];
  // The tree has at most 40 nodes (spf-evaluate.ts); walked once, iteratively.
  const stack = [...(tree?.children ?? [])];
  while (stack.length > 0) {
    const node = stack.pop()!;
    stack.push(...node.children);
    if (node.query === null) continue;
    const r = get(node.domain, 'TXT');
    if (presence(r) !== 'present') continue;
    const bytes = answerSize(r);
    if (bytes > CLASSIC_UDP_LIMIT)
      targetsOver512.push({ domain: node.domain, via: node.via, txtRecords: recordsOf(r).length, answerBytes: bytes });
  }
  return {
    strings: parts.map((s) => Buffer.byteLength(s)),
    recordBytes: txtRdataBytes(parts) - parts.length,
    txtRecords: txt.length,
    answerBytes,
    over512: answerBytes > CLASSIC_UDP_LIMIT,
    transport: root.transport,
    targetsOver512,
  };
}
