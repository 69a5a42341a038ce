// web.tls: one handshake with the host's first vetted address, as a modern client makes it (TLS
// 1.2–1.3, SNI = the host), with trust read as a fact (rejectUnauthorized: false): chain trust
// against Node's root store plus NODE_EXTRA_CA_CERTS, host name match, validity window, key,
// signature, negotiated protocol and cipher, stapled OCSP. When that handshake is refused for its
// protocol versions, a second one offering only TLS 1.0–1.1 (security level 0) tells whether the
// server speaks nothing newer. A chain Node refuses with UNSPECIFIED (an OpenSSL security-level
// rule: a 1024-bit RSA key, a SHA-1 signature) is asked again with those rules off: when it then
// reaches a trusted root it is trusted, and `trustError` names the rule a modern client still
// applies (EE_KEY_TOO_SMALL, CA_MD_TOO_WEAK) instead of an untrusted chain. SSL Labs-style caps are
// listed as facts, not turned into a grade. The chain is parsed in the pool, in one task
// (parseCertificateChain).
import type tls from 'node:tls';
import { OutboundFetchError, OutboundRefusedError, ocspStapled, type OutboundGuard } from '../../net/outbound-guard.ts';
import { handshakeFacts, type HandshakeFacts } from '../../net/tls-facts.ts';
import { parseCertificateChain, type CertificateInfo } from '../../net/certificate.ts';
import type { CheckContext } from '../kit/product-contract.ts';
import type { CheckOutput, FindingOut, ObjectRef, RelationOut } from '../../contract/tasks.ts';
import { webFinding } from './findings.ts';
import { addressObjects, notRun, resolveTlsTarget, type TlsTarget } from './tls-target.ts';

export interface TlsCheckOptions {
  handshakeTimeoutMs: number;
  /** An authorized lookup: active work, so the active guard (ACTIVE_DENY_CIDRS refused). */
  active?: boolean;
  now?: () => Date;
}

const DAY = 86_400_000;
export const EXPIRING_SOON_DAYS = 30;
const SELF_SIGNED = new Set(['DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN']);
/** A handshake the server refused for the versions offered (as opposed to no connection at all). */
const VERSION_REFUSED =
  /ERR_SSL_(TLSV1_ALERT_PROTOCOL_VERSION|UNSUPPORTED_PROTOCOL|WRONG_VERSION_NUMBER|NO_PROTOCOLS_AVAILABLE|TLSV1_ALERT_INSUFFICIENT_SECURITY|SSLV3_ALERT_HANDSHAKE_FAILURE)|EPROTO/;
export const LEGACY_CLIENT: tls.ConnectionOptions = {
  minVersion: 'TLSv1',
  maxVersion: 'TLSv1.1',
  ciphers: 'DEFAULT@SECLEVEL=0',
};

export type TlsCap =
  | 'untrusted'
  | 'hostname_mismatch'
  | 'expired'
  | 'not_yet_valid'
  | 'weak_key'
  | 'weak_signature'
  | 'legacy_protocol';

/**
 * Names for what Node reports as UNSPECIFIED: OpenSSL security level 2 (Node's default, current
 * distributions) refuses an RSA/DSA key under 2048 bits (X509_V_ERR_EE_KEY_TOO_SMALL) and a SHA-1
 * or MD5 signature (X509_V_ERR_CA_MD_TOO_WEAK) even when the chain reaches a trusted root.
 */
export const KEY_TOO_SMALL = 'EE_KEY_TOO_SMALL';
export const DIGEST_TOO_WEAK = 'CA_MD_TOO_WEAK';
/** The same handshake with the security-level rules off: does the chain reach a trusted root otherwise? */
const LEVEL_RULES_OFF: tls.ConnectionOptions = { ciphers: 'DEFAULT@SECLEVEL=0' };

type Handshake = { ok: true; facts: HandshakeFacts } | { ok: false; error: unknown };

function isWeakKey(leaf: CertificateInfo | null): boolean {
  if (leaf === null || leaf.keyBits === null) return false;
  if (leaf.keyType === 'rsa' || leaf.keyType === 'dsa' || leaf.keyType === 'rsa-pss') return leaf.keyBits < 2048;
  return leaf.keyType === 'ec' ? leaf.keyBits < 224 : false;
}

function isWeakSignature(leaf: CertificateInfo | null): boolean {
  return leaf !== null && /sha1|md5/i.test(leaf.signatureAlgorithm ?? '');
}

async function handshake(
  guard: OutboundGuard,
  t: TlsTarget,
  address: string,
  timeoutMs: number,
  signal: AbortSignal,
  extra: tls.ConnectionOptions = {},
): Promise<Handshake> {
  let socket: tls.TLSSocket | undefined;
  try {
    socket = await guard.connectTls(
      { address, port: t.port, servername: t.host, host: t.host },
      { signal, timeoutMs, tls: { rejectUnauthorized: false, requestOCSP: true, ...extra } },
    );
    return { ok: true, facts: handshakeFacts(socket, t.host, ocspStapled(socket)) };
  } catch (error) {
    return { ok: false, error };
  } finally {
    socket?.destroy();
  }
}

/** The target's own answer: it refused or reset the connection, or failed the handshake with an alert. */
const TARGET_ANSWERED = /ECONNREFUSED|ECONNRESET|EPIPE|EPROTO|ERR_SSL_|ERR_TLS_|alert/i;

function failureOf(err: unknown): { status: CheckOutput['status']; reason: string; text: string; measured: boolean } {
  if (err instanceof OutboundRefusedError)
    return {
      status: 'unavailable',
      reason: err.reason,
      text: `refused by the outbound guard (${err.reason})`,
      measured: false,
    };
  // A handshake that did not finish in time may be a silent peer or a lost route: not a fact.
  if (err instanceof OutboundFetchError && err.kind === 'timeout')
    return {
      status: 'timeout',
      reason: 'tls_timeout',
      text: 'no completed handshake before the deadline',
      measured: false,
    };
  const text = err instanceof Error ? err.message : String(err);
  return {
    status: 'unavailable',
    reason: /ECONNREFUSED/.test(text) ? 'connection_refused' : 'tls_failed',
    text,
    measured: TARGET_ANSWERED.test(text),
  };
}

export async function runTlsCheck(target: string, ctx: CheckContext, opts: TlsCheckOptions): Promise<CheckOutput> {
  const guard = opts.active ? ctx.runtime.services.activeOutbound : ctx.runtime.services.outbound;
  const resolved = await resolveTlsTarget(target, guard, 'tls', ctx.signal);
  if (!('addresses' in resolved)) return resolved;
  const t = resolved;
  const address = t.addresses[0]!;
  let legacyOnly = false;
  let hs = await handshake(guard!, t, address, opts.handshakeTimeoutMs, ctx.signal);
  if (!hs.ok && VERSION_REFUSED.test(String((hs.error as Error).message))) {
    const legacy = await handshake(guard!, t, address, opts.handshakeTimeoutMs, ctx.signal, LEGACY_CLIENT);
    if (legacy.ok) {
      hs = legacy;
      legacyOnly = true;
    }
  }
  // Node names no security-level failure (UNSPECIFIED): ask again with those rules off, to tell a
  // weak key or digest on a chain that reaches a trusted root from a chain that does not.
  let relaxed: HandshakeFacts | null = null;
  if (hs.ok && !hs.facts.chainTrusted && hs.facts.trustError === 'UNSPECIFIED') {
    const again = await handshake(guard!, t, address, opts.handshakeTimeoutMs, ctx.signal, {
      ...(legacyOnly ? LEGACY_CLIENT : {}),
      ...LEVEL_RULES_OFF,
    });
    if (again.ok) relaxed = again.facts;
  }
  const { objects, relations } = addressObjects(t);
  if (!hs.ok) {
    ctx.signal.throwIfAborted();
    const f = failureOf(hs.error);
    return {
      ...notRun(f.status, f.reason, {
        code: f.status === 'timeout' ? 'tls_timeout' : 'tls_unavailable',
        message: `No TLS handshake with ${t.host} (${address}) on port ${t.port}: ${f.text}. The certificate and protocol are unknown.`,
      }),
      objects,
      relations,
      projection: { host: t.host, port: t.port, address, failure: f.text.slice(0, 300) },
      ...(f.measured ? { measured: true } : {}),
    };
  }
  const facts = hs.facts;
  // The whole chain in one pool task (certificate.ts parseCertificateChain).
  const chain = ctx.runInPool
    ? await ctx.runInPool<CertificateInfo[]>('parseCertificateChain', { chain: facts.chain })
    : parseCertificateChain({ chain: facts.chain });
  const leaf = chain[0] ?? null;
  const trust: Pick<HandshakeFacts, 'chainTrusted' | 'trustError'> = !relaxed
    ? facts
    : relaxed.chainTrusted
      ? {
          chainTrusted: true,
          trustError: isWeakKey(leaf) ? KEY_TOO_SMALL : isWeakSignature(leaf) ? DIGEST_TOO_WEAK : facts.trustError,
        }
      : { chainTrusted: false, trustError: relaxed.trustError };
  return buildTlsOutput(
    t,
    address,
    { ...facts, ...trust },
    chain,
    legacyOnly,
    (opts.now ?? (() => new Date()))(),
    objects,
    relations,
  );
}

/** Pure: the facts of one handshake → the lane's output. */
export function buildTlsOutput(
  t: TlsTarget,
  address: string,
  facts: HandshakeFacts,
  chain: CertificateInfo[],
  legacyOnly: boolean,
  now: Date,
  objects: CheckOutput['objects'],
  relations: RelationOut[],
): CheckOutput {
  const leaf = chain[0] ?? null;
  const findings: FindingOut[] = [];
  const caps: TlsCap[] = [];
  const hostRef: ObjectRef = { type: 'host', key: t.host };
  const validFrom = leaf ? Date.parse(leaf.validFrom) : NaN;
  const validTo = leaf ? Date.parse(leaf.validTo) : NaN;
  const daysToExpiry = leaf ? Math.floor((validTo - now.getTime()) / DAY) : null;
  const expired = leaf !== null && validTo < now.getTime();
  const notYetValid = leaf !== null && validFrom > now.getTime();
  const selfSigned = !facts.chainTrusted && SELF_SIGNED.has(facts.trustError ?? '');
  const weakKey = isWeakKey(leaf);
  const weakSignature = isWeakSignature(leaf);
  const certRef: ObjectRef = leaf ? { type: 'certificate', key: leaf.digests.certSha256 } : hostRef;
  const ev = leaf
    ? [
        `subject: ${leaf.subject.replace(/\n/g, ', ')}`,
        `issuer: ${leaf.issuer.replace(/\n/g, ', ')}`,
        `valid ${leaf.validFrom} → ${leaf.validTo}`,
      ]
    : [];

  if (expired) {
    caps.push('expired');
    findings.push(
      webFinding(
        'tls_certificate_expired',
        certRef,
        `The certificate of ${t.host} expired on ${leaf!.validTo.slice(0, 10)}.`,
        ev,
      ),
    );
  } else if (notYetValid) {
    caps.push('not_yet_valid');
    findings.push(
      webFinding(
        'tls_certificate_not_yet_valid',
        certRef,
        `The certificate of ${t.host} is valid only from ${leaf!.validFrom.slice(0, 10)}.`,
        ev,
      ),
    );
  } else if (daysToExpiry !== null && daysToExpiry < EXPIRING_SOON_DAYS) {
    findings.push(
      webFinding(
        'tls_certificate_expiring_soon',
        certRef,
        `The certificate of ${t.host} expires on ${leaf!.validTo.slice(0, 10)} (in ${daysToExpiry} days).`,
        ev,
      ),
    );
  }
  if (!facts.chainTrusted) {
    caps.push('untrusted');
    if (selfSigned)
      findings.push(
        webFinding(
          'tls_certificate_self_signed',
          certRef,
          `${t.host} presents a self-signed certificate (${facts.trustError}).`,
          ev,
        ),
      );
    else if (!expired && !notYetValid)
      findings.push(
        webFinding(
          'tls_certificate_untrusted',
          certRef,
          `The certificate of ${t.host} does not verify to a trusted root (${facts.trustError}).`,
          ev,
        ),
      );
  }
  if (facts.hostnameMatch === false) {
    caps.push('hostname_mismatch');
    findings.push(
      webFinding(
        'tls_hostname_mismatch',
        certRef,
        `The certificate presented by ${t.host} is not valid for that name (SANs: ${leaf?.sans.slice(0, 10).join(', ') || 'none'}).`,
        ev,
      ),
    );
  }
  if (weakKey) {
    caps.push('weak_key');
    findings.push(
      webFinding(
        'tls_weak_key',
        certRef,
        `The certificate key of ${t.host} is ${leaf!.keyType} ${leaf!.keyBits} bits${facts.trustError === KEY_TOO_SMALL ? ': clients at OpenSSL security level 2 (Node, current distributions) refuse it although its chain reaches a trusted root' : ''}.`,
        ev,
      ),
    );
  }
  if (weakSignature) {
    caps.push('weak_signature');
    findings.push(
      webFinding(
        'tls_weak_signature',
        certRef,
        `The certificate of ${t.host} is signed with ${leaf!.signatureAlgorithm}${facts.trustError === DIGEST_TOO_WEAK ? ': clients at OpenSSL security level 2 (Node, current distributions) refuse it although its chain reaches a trusted root' : ''}.`,
        ev,
      ),
    );
  }
  if (legacyOnly) {
    caps.push('legacy_protocol');
    findings.push(
      webFinding(
        'tls_legacy_protocol_negotiated',
        hostRef,
        `${t.host} refused TLS 1.2 and 1.3 and negotiated ${facts.protocol}.`,
        [`negotiated ${facts.protocol} ${facts.cipher?.standardName ?? ''}`],
      ),
    );
  }

  const certificate = leaf && {
    subject: leaf.subject,
    issuer: leaf.issuer,
    sans: leaf.sans,
    ipAddresses: leaf.ipAddresses,
    serialNumber: leaf.serialNumber,
    validFrom: leaf.validFrom,
    validTo: leaf.validTo,
    daysToExpiry,
    keyType: leaf.keyType,
    keyBits: leaf.keyBits,
    curve: leaf.curve,
    signatureAlgorithm: leaf.signatureAlgorithm,
    fingerprintSha256: leaf.digests.certSha256,
    selfIssued: leaf.selfIssued,
  };
  const projection = {
    host: t.host,
    port: t.port,
    address,
    protocol: facts.protocol,
    cipher: facts.cipher,
    negotiatedWith: legacyOnly ? 'legacy_client_tls1.0_1.1' : 'modern_client_tls1.2_1.3',
    chainTrusted: facts.chainTrusted,
    trustError: facts.trustError,
    hostnameMatch: facts.hostnameMatch,
    validNow: leaf ? !expired && !notYetValid : null,
    ocspStapled: facts.ocspStapled,
    certificate,
    chain: chain.map((c) => ({
      subject: c.subject,
      issuer: c.issuer,
      fingerprintSha256: c.digests.certSha256,
      isCA: c.isCA,
    })),
    caps,
  };
  if (leaf) {
    objects.push({
      type: 'certificate',
      key: leaf.digests.certSha256,
      distance: 1,
      projection: { ...certificate!, chainTrusted: facts.chainTrusted, hostnameMatch: facts.hostnameMatch },
    });
    if (facts.hostnameMatch) relations.push({ from: hostRef, relation: 'san_of', to: certRef });
    for (const san of leaf.sans.slice(0, 50)) {
      const name = san.replace(/^\*\./, '');
      if (name === t.host || san.startsWith('*.')) continue; // wildcards name no host
      objects.push({ type: 'host', key: name, distance: 1, projection: { name } });
      relations.push({ from: { type: 'host', key: name }, relation: 'san_of', to: certRef });
    }
  }
  return {
    status: 'completed',
    projection,
    objects,
    relations,
    findings,
    limitations:
      t.addresses.length > 1
        ? [
            {
              code: 'tls_first_address_only',
              message: `${t.host} has ${t.addresses.length} addresses; the certificate was read from ${address} only.`,
            },
          ]
        : [],
    sources: [{ source: 'tls_handshake' }],
  };
}
