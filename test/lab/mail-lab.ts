// The mail lab part (registered in ./serve.ts): SMTP servers on distinct 127.0.1.x addresses,
// good and broken, HTTPS hosts serving MTA-STS policies (and one that never finishes its body),
// certificates from the lab CA issued at start, DKIM keys generated at start, and the zones of
// ./mail-zones.ts that point at all of them (TLSA records carry the digest of the certificate
// the good SMTP server presents).
import { generateKeyPairSync } from 'node:crypto';
import https from 'node:https';
import type net from 'node:net';
import type { LabPartFactory } from './serve.ts';
import { MAIL_HOSTS, mailDnsMirrors, mailLab, mailZones } from './mail-zones.ts';
import type { LabCa } from './ca.ts';
import { createSmtpServer, createSmtpsServer } from './smtp-server.ts';
import { issueMarkCertificate, tinyPsLogo } from './vmc.ts';

const DAY = 24 * 60 * 60 * 1000;

/** What the smtp-inject.test servers send after their 220 to STARTTLS: a forged reply to EHLO. */
export const SMTP_INJECTED = '250-inject.lab forged\r\n250 AUTH PLAIN\r\n';

function dkimKey(bits: number): string {
  const { publicKey } = generateKeyPairSync('rsa', { modulusLength: bits });
  return publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
}

function policy(mode: string, mx: string[], maxAge: number): string {
  return `version: STSv1\r\nmode: ${mode}\r\n${mx.map((m) => `mx: ${m}\r\n`).join('')}max_age: ${maxAge}\r\n`;
}

type Handler = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void;

const servePolicy =
  (body: string): Handler =>
  (req, res) => {
    if (req.url !== '/.well-known/mta-sts.txt') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' }).end(body);
  };

/** A policy whose body never ends: a line every 50 ms, for as long as the client listens. */
const endlessPolicy: Handler = (_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.write(policy('enforce', ['*.sts-endless.test'], 86400));
  const timer = setInterval(() => res.write(`x-padding: ${'x'.repeat(200)}\r\n`), 50);
  res.on('close', () => clearInterval(timer));
};

/** A bad logo: script, an external image, an event handler, not square, no title, SVG 1.1. */
export const BAD_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" version="1.1" viewBox="0 0 200 100" onload="go()"><script>go()</script><image xlink:href="https://tracker.bimi-svgbad.test/p.png" width="10" height="10"/><rect width="200" height="100"/></svg>';

/**
 * The BIMI host (127.0.1.27): for each BIMI fixture domain, GET /logo.svg and /vmc.pem, routed on
 * the Host header, one certificate naming them all. bimi-404.test answers 404; bimi-slow.test's
 * logo never ends.
 */
async function bimiHost(ca: LabCa): Promise<https.Server> {
  const L = mailLab;
  const logos: Record<string, string> = {
    [L.good]: tinyPsLogo('Good Mail'),
    [L.dmarcNone]: tinyPsLogo('DMARC None'),
    [L.bimiSvgBad]: BAD_SVG,
    [L.bimiVmcOther]: tinyPsLogo('Other Brand'),
    [L.bimiVmcUntrusted]: tinyPsLogo('Untrusted'),
    [L.bimiVmcNoEku]: tinyPsLogo('No EKU'),
    [L.bimiLogoMismatch]: tinyPsLogo('Mismatch', '#a22'),
    [L.bimiNoVmc]: tinyPsLogo('No VMC'),
  };
  const [good, other, untrusted, noEku, mismatch, server] = await Promise.all([
    issueMarkCertificate(ca, { names: [L.good], svg: logos[L.good]! }),
    issueMarkCertificate(ca, { names: ['other-brand.test'], svg: logos[L.bimiVmcOther]! }),
    issueMarkCertificate(ca, { names: [L.bimiVmcUntrusted], svg: logos[L.bimiVmcUntrusted]!, selfSigned: true }),
    issueMarkCertificate(ca, { names: [L.bimiVmcNoEku], svg: logos[L.bimiVmcNoEku]!, noBimiEku: true }),
    // The certificate carries another logo than the one at l=.
    issueMarkCertificate(ca, { names: [L.bimiLogoMismatch], svg: tinyPsLogo('Mismatch', '#22a') }),
    ca.issue({ names: [L.good, L.dmarcNone, ...Object.values(L).filter((d) => d.startsWith('bimi-'))] }),
  ]);
  const vmcs: Record<string, string> = {
    [L.good]: good.chainPem,
    [L.bimiVmcOther]: other.chainPem,
    [L.bimiVmcUntrusted]: untrusted.chainPem,
    [L.bimiVmcNoEku]: noEku.chainPem,
    [L.bimiLogoMismatch]: mismatch.chainPem,
  };
  return https.createServer({ key: server.keyPem, cert: server.chainPem }, (req, res) => {
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
    if (host === L.bimi404) return void res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>no</h1>');
    if (host === L.bimiSlow) {
      res.writeHead(200, { 'content-type': 'image/svg+xml' });
      res.write('<svg xmlns="http://www.w3.org/2000/svg">');
      const timer = setInterval(() => res.write('<g/>'), 50);
      res.on('close', () => clearInterval(timer));
      return;
    }
    if (req.url === '/logo.svg' && logos[host])
      return void res.writeHead(200, { 'content-type': 'image/svg+xml' }).end(logos[host]);
    if (req.url === '/vmc.pem' && vmcs[host])
      return void res.writeHead(200, { 'content-type': 'application/pem-certificate-chain' }).end(vmcs[host]);
    res.writeHead(404).end();
  });
}

export const mailLabPart: LabPartFactory = async (ctx) => {
  const { ca } = ctx;
  const now = Date.now();
  const [good, wrongHost, expired, giant, oldTls, selfSigned, submissions] = await Promise.all([
    ca.issue({
      names: [
        'mx1.good-mail.test',
        'mx.dane-bad.test',
        'mx2.dane-bad.test',
        'mx1.sts-testing.test',
        'mx.smtp-refuse.test',
        'mx.dane-unsigned.test',
        'mx.dane-signed.test',
        'mx.ptr-none.test',
        'mx.ptr-mismatch.test',
        'mx.ptr-servfail.test',
        'mx1.smtp-inject.test',
        'mx2.smtp-inject.test',
      ],
    }),
    ca.issue({ names: ['not-this-host.test'] }),
    ca.issue({
      names: ['expired.smtp-bad.test'],
      notBefore: new Date(now - 400 * DAY),
      notAfter: new Date(now - 10 * DAY),
    }),
    // Far over OpenSSL's 100 KiB certificate list limit: the client must refuse it, not choke.
    ca.issue({
      names: ['mx.smtp-giant.test', ...Array.from({ length: 4000 }, (_, i) => `padding-name-${i}.smtp-giant.test`)],
    }),
    ca.issue({ names: ['old.smtp-bad.test'] }),
    ca.issue({ names: ['self.smtp-bad.test'], selfSigned: true }),
    ca.issue({ names: [mailLab.nothing, `plain.${mailLab.smtpBad}`] }),
  ]);
  const H = MAIL_HOSTS;
  const smtp: Array<{ host: string; server: net.Server }> = [
    { host: H.good, server: createSmtpServer('mx1.good-mail.test', { kind: 'starttls', cert: good }) },
    { host: H.noStarttls, server: createSmtpServer('plain.lab', { kind: 'no_starttls' }) },
    { host: H.wrongHost, server: createSmtpServer('wrong.lab', { kind: 'starttls', cert: wrongHost }) },
    { host: H.expired, server: createSmtpServer('expired.lab', { kind: 'starttls', cert: expired }) },
    { host: H.silent, server: createSmtpServer('silent.lab', { kind: 'silent' }) },
    { host: H.endless, server: createSmtpServer('endless.lab', { kind: 'endless_banner' }) },
    { host: H.giant, server: createSmtpServer('giant.lab', { kind: 'starttls', cert: giant }) },
    {
      host: H.oldTls,
      server: createSmtpServer('old.lab', {
        kind: 'starttls',
        cert: oldTls,
        tls: { minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT:@SECLEVEL=0' },
      }),
    },
    { host: H.selfSigned, server: createSmtpServer('self.lab', { kind: 'starttls', cert: selfSigned }) },
    { host: H.refuseStarttls, server: createSmtpServer('refuse.lab', { kind: 'refuse_starttls' }) },
    // No STARTTLS, and nothing on 465 either (the implicit-TLS probe is refused).
    { host: H.plainOnly, server: createSmtpServer('plain-only.lab', { kind: 'no_starttls' }) },
    { host: H.silent465, server: createSmtpServer('silent465.lab', { kind: 'no_starttls' }) },
    // Plain text after the 220 to STARTTLS, then a good handshake (issue 30 item 9).
    {
      host: H.injectWith220,
      server: createSmtpServer('inject1.lab', {
        kind: 'starttls',
        cert: good,
        afterStarttls: { text: SMTP_INJECTED, when: 'with_220' },
      }),
    },
    {
      host: H.injectLater,
      server: createSmtpServer('inject2.lab', {
        kind: 'starttls',
        cert: good,
        afterStarttls: { text: SMTP_INJECTED, when: 'after_client_hello' },
      }),
    },
    ...[H.ptrNone, H.ptrMismatch, H.ptrServfail].map((host) => ({
      host,
      server: createSmtpServer('ptr.lab', { kind: 'starttls', cert: good }),
    })),
  ];
  await ctx.listen(25, smtp);
  // Implicit TLS (465) on the host without STARTTLS: nothing-mail.test and plain.smtp-bad.test.
  // On another host, 465 accepts the connection and never answers the handshake.
  await ctx.listen(465, [
    { host: H.noStarttls, server: createSmtpsServer('plain.lab', submissions) },
    { host: H.silent465, server: createSmtpServer('silent465.lab', { kind: 'silent' }) },
  ]);

  const cert = async (name: string) => ca.issue({ names: [name] });
  const httpsHost = async (address: string, certName: string, handler: Handler) => {
    const c = await cert(certName);
    return { host: address, server: https.createServer({ key: c.keyPem, cert: c.chainPem }, handler) };
  };
  const L = mailLab;
  await ctx.listen(
    443,
    await Promise.all([
      httpsHost(H.stsGood, `mta-sts.${L.good}`, servePolicy(policy('enforce', [`mx1.${L.good}`], 604800))),
      httpsHost(
        H.stsTesting,
        `mta-sts.${L.stsTesting}`,
        servePolicy(policy('testing', [`*.elsewhere.${L.stsTesting}`], 3600)),
      ),
      httpsHost(H.stsEndless, `mta-sts.${L.stsEndless}`, endlessPolicy),
      httpsHost(H.stsRedirect, `mta-sts.${L.stsRedirect}`, (_req, res) =>
        res.writeHead(302, { location: `https://mta-sts.${L.good}/.well-known/mta-sts.txt` }).end(),
      ),
      httpsHost(H.stsBadCert, 'someone-else.test', servePolicy(policy('enforce', ['*.good-mail.test'], 604800))),
      httpsHost(
        H.stsEnforceBad,
        `mta-sts.${L.stsEnforceBad}`,
        servePolicy(policy('enforce', [`mx.${L.stsEnforceBad}`], 604800)),
      ),
      httpsHost(H.sts404, `mta-sts.${L.sts404}`, (_req, res) =>
        res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>no</h1>'),
      ),
    ]),
  );

  await ctx.listen(443, [{ host: H.bimi, server: await bimiHost(ca) }]);

  return {
    name: 'mail',
    // Mark certificates chain to the lab CA: the service trusts it as a BIMI root too.
    env: { BIMI_TRUST_ANCHORS: ca.caFile },
    zones: mailZones({ goodSpki: good.spkiDer, dkim2048: dkimKey(2048), dkim1024: dkimKey(1024) }),
    dnsMirrors: mailDnsMirrors(),
    // Servers are closed by the lab's listeners (ctx.listen): nothing else to release.
    close: async () => {},
  };
};
