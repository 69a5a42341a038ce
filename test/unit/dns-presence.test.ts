// The one DNS rule (src/dns/presence.ts): present / absent / indeterminate, on replies as the stub
// resolver reports them, including the cases that are easy to get wrong (a CNAME chain that ends
// without records of the type; an answer with only unrelated records; AA=0 from a recursive).
import { describe, expect, it } from 'vitest';
import { indeterminateLimitation, isDeterminate, presence, recordsOf } from '../../src/dns/presence.ts';
import type { QueryOutcome, QueryResult, RecordType } from '../../src/dns/types.ts';

function reply(
  type: RecordType,
  outcome: QueryOutcome,
  answers: Array<{ type: string; data: unknown }> = [],
  rcode: string | null = null,
): QueryResult {
  return {
    name: 'x.lab.test',
    type,
    outcome,
    rcode: rcode ?? (outcome === 'timeout' || outcome === 'error' ? null : outcome.toUpperCase()),
    answers: answers.map((a) => ({ name: 'x.lab.test', ttl: 60, ...a })),
    flags: { aa: false, ad: false, tc: false, ra: true },
    transport: 'udp',
    durationMs: 1,
  };
}

describe('presence', () => {
  it('present: records of the asked type, at the name or at the end of its CNAME chain', () => {
    expect(presence(reply('A', 'answer', [{ type: 'A', data: '127.0.0.1' }]))).toBe('present');
    expect(
      presence(
        reply('A', 'answer', [
          { type: 'CNAME', data: 'y.lab.test' },
          { type: 'A', data: '127.0.0.1' },
        ]),
      ),
    ).toBe('present');
    expect(presence(reply('CNAME', 'answer', [{ type: 'CNAME', data: 'y.lab.test' }]))).toBe('present');
  });

  it('absent: NXDOMAIN, NODATA, or a chain that ends without records of the type (AA is not required)', () => {
    expect(presence(reply('TXT', 'nxdomain'))).toBe('absent');
    expect(presence(reply('TXT', 'nodata', [], 'NOERROR'))).toBe('absent');
    expect(presence(reply('TXT', 'answer', [{ type: 'CNAME', data: 'y.lab.test' }], 'NOERROR'))).toBe('absent');
    expect(recordsOf(reply('TXT', 'answer', [{ type: 'CNAME', data: 'y.lab.test' }]))).toEqual([]);
  });

  it('indeterminate: every other rcode, a timeout, no usable reply', () => {
    for (const o of ['servfail', 'refused', 'formerr', 'notimp', 'timeout', 'error'] as const) {
      expect(presence(reply('MX', o)), o).toBe('indeterminate');
      expect(isDeterminate(reply('MX', o)), o).toBe(false);
    }
  });

  it('the limitation names the type, the name and what came back', () => {
    expect(indeterminateLimitation(reply('MX', 'servfail'), 'mail exchangers')).toEqual({
      code: 'dns_indeterminate',
      message: 'MX x.lab.test (mail exchangers): SERVFAIL; whether it has MX records is unknown.',
    });
    expect(indeterminateLimitation(reply('TXT', 'timeout')).message).toBe(
      'TXT x.lab.test: no reply before the deadline; whether it has TXT records is unknown.',
    );
  });
});
