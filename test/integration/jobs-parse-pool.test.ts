// The lane's CPU-bound parsers, through a real piscina pool (worker threads running the .ts
// worker with Node's type stripping) and inline (0 threads): same results either way.
import { afterAll, describe, expect, it } from 'vitest';
import { createParsePool } from '../../workers/pool/parse-pool.ts';
import { parseSpf, type CertificateInfo, type SpfInfo } from '../../workers/pool/parse-tasks.ts';

// Self-signed lab certificate (openssl, P-256), fixed so the expectations are exact.
const PEM = `-----BEGIN CERTIFICATE-----
MIIB6DCCAY2gAwIBAgIUJVgmhArHcpzbW8ITVBDa6/NKfwowCgYIKoZIzj0EAwIw
LTEZMBcGA1UEAwwQbGFiLmV4YW1wbGUudGVzdDEQMA4GA1UECgwHTFNTIExhYjAe
Fw0yNjExMjIwNDE1NDJaFw0zNjExMTkwNDE1NDJaMC0xGTAXBgNVBAMMEGxhYi5l
eGFtcGxlLnRlc3QxEDAOBgNVBAoMB0xTUyBMYWIwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAARTUdhErku2Dan/5SBItplKtzpeVfinEI406suqUApA/u00Go9jjMmX
woVM91LgCuDr3jvI5Ot1Z1Bm4MK3hK8ko4GKMIGHMB0GA1UdDgQWBBQzx84rFQ24
qlkq8BZqm/AgTfRLLDAfBgNVHSMEGDAWgBQzx84rFQ24qlkq8BZqm/AgTfRLLDA3
BgNVHREEMDAughBsYWIuZXhhbXBsZS50ZXN0ghR3d3cubGFiLmV4YW1wbGUudGVz
dIcEfwAACTAMBgNVHRMBAf8EAjAAMAoGCCqGSM49BAMCA0kAMEYCIQDB9KsKKazc
a7ZNS1mACBxkP35osKQ1cW1RkZ2t0V508QIhAPfP50uBJvuLZYk9PACecCRyYgiJ
6hn3BOTNbG8+nG7e
-----END CERTIFICATE-----`;

describe('parse pool', () => {
  const pooled = createParsePool(2);
  const inline = createParsePool(0);
  afterAll(async () => {
    await pooled.destroy();
    await pooled.destroy(); // idempotent
  });

  it.each([['piscina', pooled], ['inline', inline]])('parses a certificate (%s)', async (_name, pool) => {
    const info = await pool.run<CertificateInfo>('parseCertificate', PEM);
    expect(info).toEqual({
      subject: 'CN=lab.example.test\nO=LSS Lab',
      issuer: 'CN=lab.example.test\nO=LSS Lab',
      sans: ['lab.example.test', 'www.lab.example.test'],
      ipAddresses: ['127.0.0.9'],
      validFrom: '2026-11-22T04:15:42.000Z',
      validTo: '2036-11-19T04:15:42.000Z',
      fingerprint256: '5C:D3:28:81:E2:C1:6D:4C:CE:6F:14:EF:EA:8C:B3:00:9D:B9:43:FD:1D:AE:E6:F9:8B:00:32:AF:47:1A:16:F9',
      serialNumber: expect.stringMatching(/^[0-9A-F]+$/),
      isCA: false,
      selfIssued: true,
      keyType: expect.stringMatching(/^(rsa|ec)$/),
      keyBits: expect.any(Number),
      curve: info.keyType === 'ec' ? expect.any(String) : null,
      signatureAlgorithm: expect.stringMatching(/with|SHA/i),
      digests: {
        certSha256: expect.stringMatching(/^[0-9a-f]{64}$/), certSha512: expect.stringMatching(/^[0-9a-f]{128}$/),
        spkiSha256: expect.stringMatching(/^[0-9a-f]{64}$/), spkiSha512: expect.stringMatching(/^[0-9a-f]{128}$/),
      },
    });
    // The full-certificate digest is the fingerprint the certificate is known by.
    expect(info.digests.certSha256).toBe(info.fingerprint256.replaceAll(':', '').toLowerCase());
    const der = Buffer.from(PEM.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64').toString('base64');
    expect((await pool.run<CertificateInfo>('parseCertificate', { der })).fingerprint256).toBe(info.fingerprint256);
  });

  it('rejects an unknown task and a malformed certificate', async () => {
    await expect(pooled.run('eval', 'x')).rejects.toThrow(/unknown pool task/);
    await expect(pooled.run('parseCertificate', 'not a certificate')).rejects.toThrow();
  });

  it('parses SPF: terms, modifiers, DNS lookup count, errors', async () => {
    const spf = await pooled.run<SpfInfo>('parseSpf', 'v=spf1 ip4:192.0.2.0/24 a/24 mx include:_spf.example.net ~all redirect=spf.example.org');
    expect(spf.valid).toBe(true);
    expect(spf.terms).toEqual([
      { qualifier: '+', mechanism: 'ip4', value: '192.0.2.0/24' },
      { qualifier: '+', mechanism: 'a', value: '/24' },
      { qualifier: '+', mechanism: 'mx', value: null },
      { qualifier: '+', mechanism: 'include', value: '_spf.example.net' },
      { qualifier: '~', mechanism: 'all', value: null },
    ]);
    expect(spf.modifiers).toEqual({ redirect: 'spf.example.org' });
    expect(spf.lookupCount).toBe(4);
    expect(spf.includes).toEqual(['_spf.example.net']);
    expect(parseSpf('v=spf2.0/pra -all')).toMatchObject({ valid: false, errors: ['not an SPF record (no v=spf1)'] });
    expect(parseSpf('v=spf1 foo:bar include: -all').errors).toEqual(['unknown term foo:bar', 'include needs a value']);
    const many = parseSpf(`v=spf1 ${Array.from({ length: 11 }, (_, i) => `include:i${i}.example`).join(' ')} -all`);
    expect([many.valid, many.lookupCount, many.errors]).toEqual([false, 11, ['too many DNS lookups (11 > 10)']]);
  });
});
