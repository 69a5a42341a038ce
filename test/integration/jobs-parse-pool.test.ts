// The lane's CPU-bound parsers, through a real piscina pool (worker threads running the .ts
// worker with Node's type stripping) and inline (0 threads): same results either way.
import { afterAll, describe, expect, it } from 'vitest';
import { createParsePool } from '../../workers/pool/parse-pool.ts';
import type { CertificateInfo } from '../../src/net/certificate.ts';
import { FIXED_CERTIFICATE_PEM } from '../helpers/fixed-certificate.ts';

const PEM = FIXED_CERTIFICATE_PEM;

describe('parse pool', () => {
  const pooled = createParsePool(2);
  const inline = createParsePool(0);
  afterAll(async () => {
    await pooled.destroy();
    await pooled.destroy(); // idempotent
  });

  it.each([
    ['piscina', pooled],
    ['inline', inline],
  ])('parses a certificate (%s)', async (_name, pool) => {
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
        certSha256: expect.stringMatching(/^[0-9a-f]{64}$/),
        certSha512: expect.stringMatching(/^[0-9a-f]{128}$/),
        spkiSha256: expect.stringMatching(/^[0-9a-f]{64}$/),
        spkiSha512: expect.stringMatching(/^[0-9a-f]{128}$/),
      },
    });
    // The full-certificate digest is the fingerprint the certificate is known by.
    expect(info.digests.certSha256).toBe(info.fingerprint256.replaceAll(':', '').toLowerCase());
    const der = Buffer.from(PEM.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64').toString('base64');
    expect((await pool.run<CertificateInfo>('parseCertificate', { der })).fingerprint256).toBe(info.fingerprint256);
  });

  it.each([
    ['piscina', pooled],
    ['inline', inline],
  ])('parses a chain in one task as each of its certificates alone (%s)', async (_name, pool) => {
    const der = Buffer.from(PEM.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64').toString('base64');
    const one = await pool.run<CertificateInfo>('parseCertificate', { der });
    const chain = await pool.run<CertificateInfo[]>('parseCertificateChain', { chain: [der, der] });
    expect(chain).toEqual([one, one]);
    await expect(pool.run('parseCertificateChain', { chain: [der, 'bm90IGEgY2VydA=='] })).rejects.toThrow();
  });

  it('rejects an unknown task and a malformed certificate', async () => {
    await expect(pooled.run('eval', 'x')).rejects.toThrow(/unknown pool task/);
    await expect(pooled.run('parseCertificate', 'not a certificate')).rejects.toThrow();
  });
});
