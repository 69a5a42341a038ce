// The computed size of a TXT answer against dns-packet's encoding of the same response. dns-packet
// writes every owner name in full (no compression), so its length is ours plus, per answer
// record, the owner's wire bytes less the 2-byte pointer we count.
import * as packet from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { minimalTxtAnswerBytes, wireNameBytes } from '../../src/dns/message-size.ts';
import type { DnsRecord } from '../../src/dns/types.ts';

const encoded = (qname: string, records: DnsRecord[]) =>
  packet.encode({
    type: 'response',
    id: 1,
    flags: packet.RECURSION_DESIRED,
    questions: [{ name: qname, type: 'TXT', class: 'IN' }],
    answers: records.map((r) =>
      r.type === 'TXT'
        ? { name: r.name, type: 'TXT' as const, class: 'IN' as const, ttl: r.ttl, data: (r.data as string[]).slice() }
        : { name: r.name, type: 'CNAME' as const, class: 'IN' as const, ttl: r.ttl, data: String(r.data) },
    ),
  }).length;

describe('minimalTxtAnswerBytes', () => {
  it('is the encoded response with owner names compressed to pointers', () => {
    const name = 'spf-big.test';
    const records: DnsRecord[] = [
      { name, type: 'TXT', ttl: 300, data: ['v=spf1 -all'] },
      { name, type: 'TXT', ttl: 300, data: ['x'.repeat(255), 'y'.repeat(100)] },
      { name, type: 'TXT', ttl: 300, data: ['bücher'] },
    ];
    const full = encoded(name, records);
    expect(minimalTxtAnswerBytes(name, records)).toBe(full - records.length * (wireNameBytes(name) - 2));
  });

  it('counts each CNAME of the chain with its target in full', () => {
    const records: DnsRecord[] = [
      { name: 'a.test', type: 'CNAME', ttl: 300, data: 'target.example.test' },
      { name: 'target.example.test', type: 'TXT', ttl: 300, data: ['v=spf1 -all'] },
    ];
    const full = encoded('a.test', records);
    expect(minimalTxtAnswerBytes('a.test', records)).toBe(
      full - (wireNameBytes('a.test') - 2) - (wireNameBytes('target.example.test') - 2),
    );
  });

  it('the name in wire form: a length byte per label and the root', () => {
    expect(wireNameBytes('.')).toBe(1);
    expect(wireNameBytes('good-mail.test')).toBe(16);
    expect(wireNameBytes('good-mail.test.')).toBe(16);
  });
});
