// The BIMI evidence checks on their own (pure, as the parse pool runs them): SVG Tiny PS, the mark
// certificate (a forged signature, a self-signed root, EKU, SAN, logotype hash, a gzip bomb), the
// lab's logotype encoding read back by @peculiar/asn1-x509-logotype, and the time bound of both
// parsers on hostile input up to their caps.
import { createHash, webcrypto } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkMarkCertificate, pemBlocks } from '../../src/products/mail/mark-certificate.ts';
import { checkSvgProfile, SVG_MAX_BYTES } from '../../src/products/mail/svg-profile.ts';
import { loadLabCa, type LabCa } from '../lab/ca.ts';
import { issueMarkCertificate, logotypeExtension, tinyPsLogo } from '../lab/vmc.ts';

const svg = (s: string) => checkSvgProfile({ base64: Buffer.from(s).toString('base64') });
const sha256 = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const ROOT = (attrs: string) => `<svg xmlns="http://www.w3.org/2000/svg" ${attrs}>`;
const PS = 'version="1.2" baseProfile="tiny-ps" viewBox="0 0 10 10"';

describe('SVG Tiny PS', () => {
  it('a conforming logo is valid, with its title, square viewBox and hash', () => {
    const text = tinyPsLogo('Brand');
    expect(svg(text)).toMatchObject({
      valid: true,
      violations: [],
      title: 'Brand',
      square: true,
      sha256: sha256(text),
    });
  });

  it('each rule on its own', () => {
    const cases: Array<[string, string]> = [
      [`${ROOT('version="1.2" viewBox="0 0 10 10"')}<title>t</title></svg>`, 'baseProfile is null'],
      [`${ROOT(`${PS} x="1"`)}<title>t</title></svg>`, 'has an x or y attribute'],
      [`${ROOT(PS)}<rect/></svg>`, 'no <title> child'],
      [`${ROOT(PS)}<title> </title></svg>`, 'the <title> is empty'],
      [`${ROOT(PS)}<title>t</title><foreignObject/></svg>`, '<foreignObject> is not allowed'],
      [`${ROOT(PS)}<title>t</title><a/></svg>`, '<a> is not allowed'],
      [`${ROOT(PS)}<title>t</title><filter/></svg>`, '<filter> is not an SVG Tiny 1.2 element'],
      [`${ROOT(PS)}<title>t</title><rect onclick="x"/></svg>`, 'an event handler attribute (onclick on <rect>)'],
      [`${ROOT(PS)}<title>t</title><use href="https://x.test/a#b"/></svg>`, 'an external reference (href='],
      [`${ROOT(PS)}<title>t</title><use q:href="//x.test/a" xmlns:q="urn:q"/></svg>`, 'an external reference (q:href='],
      [`${ROOT(PS)}<title>t</title><rect fill="url( 'https://x.test/p')"/></svg>`, 'an external url() in fill'],
      [`<svg ${PS}><title>t</title></svg>`, 'not <svg> in the SVG namespace'],
      [`<!DOCTYPE svg [<!ENTITY a "b">]>${ROOT(PS)}<title>&a;</title></svg>`, 'internal subset'],
      [`${ROOT(PS)}<title>t</title></svg><svg/>`, 'not well-formed'],
      [`<?xml-stylesheet href="https://x.test/s.css"?>${ROOT(PS)}<title>t</title></svg>`, 'xml-stylesheet'],
    ];
    for (const [text, violation] of cases)
      expect(
        svg(text).violations.some((v) => v.includes(violation)),
        `${text} → ${svg(text).violations}`,
      ).toBe(true);
    // Fragment references and url(#…) are internal: allowed.
    expect(
      svg(
        `${ROOT(PS)}<title>t</title><use xlink:href="#a" xmlns:xlink="http://www.w3.org/1999/xlink"/><rect fill="url(#g)"/></svg>`,
      ).valid,
    ).toBe(true);
  });

  it('gzip (SVGZ) is inflated within 64 KiB; a bomb is a violation, not a crash', () => {
    const text = tinyPsLogo('Zipped');
    expect(checkSvgProfile({ base64: gzipSync(text).toString('base64') })).toMatchObject({
      valid: true,
      compressed: true,
      sha256: sha256(text),
    });
    const bomb = gzipSync(Buffer.alloc(8 * 1024 * 1024, 0x20));
    expect(bomb.length).toBeLessThan(SVG_MAX_BYTES);
    expect(checkSvgProfile({ base64: bomb.toString('base64') }).violations).toEqual([
      `the gzip body inflates past ${SVG_MAX_BYTES} bytes`,
    ]);
  });
});

describe('mark certificates', () => {
  let ca: LabCa;
  const now = () => new Date().toISOString();
  beforeAll(async () => {
    ca = await loadLabCa();
  });
  const check = (pem: string, extra: Partial<Parameters<typeof checkMarkCertificate>[0]> = {}) =>
    checkMarkCertificate({
      pem,
      domain: 'brand.test',
      recordDomain: 'brand.test',
      anchors: ca.rootPem,
      now: now(),
      logoSha256: null,
      ...extra,
    });

  it('a VMC for the domain, chained to the anchor, with its logo', async () => {
    const logo = tinyPsLogo('Brand');
    const vmc = await issueMarkCertificate(ca, { names: ['brand.test'], svg: logo });
    expect(check(vmc.chainPem, { logoSha256: sha256(logo) })).toMatchObject({
      certificates: 2,
      kind: 'VMC',
      chainTrusted: true,
      bimiEku: true,
      domainMatch: true,
      logoMatch: true,
      problems: [],
    });
    // Without the lab root among the anchors (the built-in BIMI roots only): not trusted.
    expect(check(vmc.chainPem, { anchors: '' })).toMatchObject({ chainTrusted: false });
    // A CMC by its mark type.
    const cmc = await issueMarkCertificate(ca, { names: ['brand.test'], svg: logo, markType: 'Prior Use Mark' });
    expect(check(cmc.chainPem).kind).toBe('CMC');
  });

  it("a leaf with the issuer's name and key id but another signer is refused (signatures are verified)", async () => {
    const keys = (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
      'sign',
      'verify',
    ])) as webcrypto.CryptoKeyPair;
    const inter = new x509.X509Certificate(ca.intermediatePem);
    const forged = await x509.X509CertificateGenerator.create({
      serialNumber: '01',
      subject: 'CN=brand.test, O=Forger',
      issuer: inter.subject,
      notBefore: new Date(Date.now() - 86_400_000),
      notAfter: new Date(Date.now() + 86_400_000),
      signingKey: keys.privateKey,
      publicKey: keys.publicKey,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
      extensions: [
        new x509.ExtendedKeyUsageExtension(['1.3.6.1.5.5.7.3.31']),
        new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: 'brand.test' }]),
        await x509.AuthorityKeyIdentifierExtension.create(inter),
        new x509.Extension('1.3.6.1.5.5.7.1.12', false, logotypeExtension(tinyPsLogo('Brand'))),
      ],
    });
    const facts = check(`${forged.toString('pem')}\n${ca.intermediatePem}`);
    expect(facts).toMatchObject({ chainTrusted: false, trustError: 'certificate 1 is not signed by certificate 2' });
    expect(facts.problems).toContain('certificate 1 is not signed by certificate 2');
  });

  it('EKU, SAN, self-signed, logotype hash, logotype bomb', async () => {
    const logo = tinyPsLogo('Brand');
    const noEku = await issueMarkCertificate(ca, { names: ['brand.test'], svg: logo, noBimiEku: true });
    expect(check(noEku.chainPem).problems).toEqual(['no BIMI extended key usage (1.3.6.1.5.5.7.3.31)']);
    const other = await issueMarkCertificate(ca, { names: ['elsewhere.test'], svg: logo });
    expect(check(other.chainPem)).toMatchObject({ chainTrusted: true, domainMatch: false, problems: [] });
    // default._bimi.<domain> in the SAN counts.
    const bimiName = await issueMarkCertificate(ca, { names: ['default._bimi.brand.test'], svg: logo });
    expect(check(bimiName.chainPem).domainMatch).toBe(true);
    const selfSigned = await issueMarkCertificate(ca, { names: ['brand.test'], svg: logo, selfSigned: true });
    expect(check(selfSigned.chainPem).trustError).toBe('the chain does not lead to a BIMI trust anchor');
    const wrongHash = await issueMarkCertificate(ca, { names: ['brand.test'], svg: logo, hashOf: 'something else' });
    expect(check(wrongHash.chainPem).problems).toEqual([
      'the embedded logo does not have the hash the certificate declares',
    ]);
    const badLogo = await issueMarkCertificate(ca, { names: ['brand.test'], svg: '<svg/>' });
    expect(check(badLogo.chainPem).problems).toEqual(['the embedded logo breaks SVG Tiny PS']);
    const expired = check(other.chainPem, { now: '2099-01-01T00:00:00.000Z' });
    expect(expired.trustError).toBe('certificate 1 is expired');
  });

  it("the lab's logotype encoding is what @peculiar/asn1-x509-logotype reads", async () => {
    const { AsnParser } = await import('@peculiar/asn1-schema');
    const { LogotypeExtn } = await import('@peculiar/asn1-x509-logotype');
    const logo = tinyPsLogo('Brand');
    const ext = AsnParser.parse(logotypeExtension(logo), LogotypeExtn);
    const details = ext.subjectLogo!.direct!.image![0]!.imageDetails;
    expect(details.mediaType).toBe('image/svg+xml');
    expect(Buffer.from(details.logotypeHash[0]!.hashValue.buffer).toString('hex')).toBe(sha256(logo));
    expect(details.logotypeURI[0]).toMatch(/^data:image\/svg\+xml;base64,H4sI/);
  });

  it('PEM splitting is line by line: a pile of BEGIN lines is linear and capped', () => {
    const pile = '-----BEGIN CERTIFICATE-----\n'.repeat(4000);
    const t = performance.now();
    expect(pemBlocks(pile)).toEqual([]);
    expect(check(pile).problems).toEqual(['no PEM certificate']);
    expect(performance.now() - t).toBeLessThan(200);
    const many = '-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n'.repeat(50);
    expect(check(many).problems).toEqual(['more than 8 certificates']);
  });
});

/** Fastest of three runs, ms. */
function fastest(fn: () => void): number {
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    fn();
    best = Math.min(best, performance.now() - t);
  }
  return best;
}

describe('time bound on hostile input (linear: at most 25 ms + 3 ms per KiB)', () => {
  const piece = fc.constantFrom(
    '<a>',
    '</a>',
    '<',
    '<!--',
    '--',
    '-->',
    ' ',
    '\n',
    'x="1" ',
    'xmlns:p="u" ',
    'href="https://x/" ',
    'url(',
    '<![CDATA[',
    ']]>',
    '&',
    '&#x41;',
    '<svg xmlns="http://www.w3.org/2000/svg">',
    '<g>',
    '</g>',
    '"',
    "'",
    '=',
  );
  it('SVG Tiny PS check, up to 64 KiB', () => {
    fc.assert(
      fc.property(fc.array(piece, { minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 64 }), (parts, kib) => {
        const unit = parts.join('');
        const text = unit.repeat(Math.ceil((kib * 1024) / unit.length)).slice(0, kib * 1024);
        const base64 = Buffer.from(text).toString('base64');
        const ms = fastest(() => checkSvgProfile({ base64 }));
        expect(ms, `${kib} KiB of ${JSON.stringify(unit).slice(0, 80)}`).toBeLessThan(25 + 3 * kib);
      }),
      { numRuns: 40, seed: 22 },
    );
  });

  it('mark certificate check, up to 128 KiB of PEM-like text', () => {
    const line = fc.constantFrom(
      '-----BEGIN CERTIFICATE-----\n',
      '-----END CERTIFICATE-----\n',
      'MIIB',
      '----',
      '\n',
      '=',
      'AAAA',
    );
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 20 }), fc.integer({ min: 1, max: 128 }), (parts, kib) => {
        const unit = parts.join('');
        const pem = unit.repeat(Math.ceil((kib * 1024) / unit.length)).slice(0, kib * 1024);
        const ms = fastest(() =>
          checkMarkCertificate({
            pem,
            domain: 'a.test',
            recordDomain: 'a.test',
            anchors: '',
            now: new Date().toISOString(),
            logoSha256: null,
          }),
        );
        expect(ms, `${kib} KiB`).toBeLessThan(25 + 3 * kib);
      }),
      { numRuns: 30, seed: 22 },
    );
  });
});
