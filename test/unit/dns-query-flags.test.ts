// The query asks for AD (RFC 6840 §5.7: a validating resolver sets AD in its reply only when the
// query had AD or DO), and the lab DNS, like such a resolver, sets AD only when asked.
import * as packet from 'dns-packet';
import dgram from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildQuery } from '../../src/dns/wire.ts';
import { startLabDns, type LabDns } from '../lab/dns-server.ts';
import { labNames } from '../lab/zones.ts';

let lab: LabDns;
beforeAll(async () => {
  lab = await startLabDns();
});
afterAll(async () => {
  await lab?.close();
});

function ask(query: Buffer): Promise<packet.DecodedPacket> {
  return new Promise((resolve, reject) => {
    const s = dgram.createSocket('udp4');
    const timer = setTimeout(() => {
      s.close();
      reject(new Error('no reply'));
    }, 2000);
    s.on('message', (m) => {
      clearTimeout(timer);
      s.close();
      resolve(packet.decode(m));
    });
    s.send(query, lab.port, lab.host);
  });
}

describe('query flags', () => {
  it("RD off for a question to a zone's own server (a proof of control, src/dns/authoritative.ts)", () => {
    const q = packet.decode(buildQuery(7, labNames.ad, 'TXT', { recursionDesired: false }));
    expect(q.flag_rd).toBe(false);
    expect(q.flag_ad).toBe(true);
  });

  it('RD and AD set, DO off', () => {
    const q = packet.decode(buildQuery(7, labNames.ad, 'A'));
    expect(q.flag_rd).toBe(true);
    expect(q.flag_ad).toBe(true);
    const opt = q.additionals?.find((a) => a.type === 'OPT') as packet.OptAnswer;
    expect(opt.flag_do).toBe(false);
  });

  it('the lab sets AD on a signed zone only for a query that asks for it', async () => {
    const withAd = await ask(buildQuery(8, labNames.ad, 'A'));
    expect(withAd.flag_ad).toBe(true);
    const plain = packet.encode({
      type: 'query',
      id: 9,
      flags: packet.RECURSION_DESIRED,
      questions: [{ name: labNames.ad, type: 'A', class: 'IN' }],
    });
    expect((await ask(plain)).flag_ad).toBe(false);
  });
});
