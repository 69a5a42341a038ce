// web.tls_protocols (authorized requests only, after the active-work gates): which of TLS 1.0,
// 1.1, 1.2 and 1.3 each vetted address of the host accepts. One handshake per (address, version),
// the client limited to exactly that version (minVersion = maxVersion); for 1.0 and 1.1 the
// client's OpenSSL security level is lowered to 0, since at the default level OpenSSL 3 refuses
// to offer them at all and "refused" would be our client's doing, not the server's.
//
// Outcomes: accepted (handshake done), rejected (the server answered with a TLS alert or a
// version it was not offered), unknown (the connection broke without a TLS answer) or timeout.
// Only accepted and rejected are knowledge. What the bundled OpenSSL cannot probe at all (SSLv2,
// SSLv3, export and NULL suites…) is reported as a limitation, never as "not supported".
import type tls from 'node:tls';
import { OutboundFetchError, type OutboundGuard } from '../../net/outbound-guard.ts';
import type { CheckContext } from '../kit/product-contract.ts';
import type { CheckOutput, FindingOut } from '../../contract/tasks.ts';
import type { LaneStatus, Limitation } from '../../contract/lanes.ts';
import { webFinding } from './findings.ts';
import { addressObjects, resolveTlsTarget, type TlsTarget } from './tls-target.ts';

export const TLS_VERSIONS = ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'] as const;
export type TlsVersion = (typeof TLS_VERSIONS)[number];
export type VersionOutcome = 'accepted' | 'rejected' | 'unknown' | 'timeout';

export interface TlsProtocolsOptions {
  handshakeTimeoutMs: number;
  /** Addresses probed at most (the rest is a limitation). */
  maxAddresses?: number;
}

const REJECTED = /ERR_SSL_|EPROTO|alert|wrong version number|unsupported protocol/i;

export function clientOptionsFor(v: TlsVersion): tls.ConnectionOptions {
  return {
    minVersion: v,
    maxVersion: v,
    rejectUnauthorized: false,
    ...(v === 'TLSv1' || v === 'TLSv1.1' ? { ciphers: 'DEFAULT@SECLEVEL=0' } : {}),
  };
}

async function probe(
  guard: OutboundGuard,
  t: TlsTarget,
  address: string,
  v: TlsVersion,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<{ outcome: VersionOutcome; detail: string | null; cipher: string | null }> {
  try {
    const s = await guard.connectTls(
      { address, port: t.port, servername: t.host, host: t.host },
      { signal, timeoutMs, tls: clientOptionsFor(v) },
    );
    const negotiated = s.getProtocol();
    const cipher = s.getCipher()?.standardName ?? null;
    s.destroy();
    return negotiated === v
      ? { outcome: 'accepted', detail: null, cipher }
      : { outcome: 'unknown', detail: `negotiated ${negotiated}`, cipher: null };
  } catch (err) {
    if (err instanceof OutboundFetchError && err.kind === 'timeout')
      return { outcome: 'timeout', detail: 'no handshake before the deadline', cipher: null };
    const text = err instanceof Error ? err.message : String(err);
    return { outcome: REJECTED.test(text) ? 'rejected' : 'unknown', detail: text.slice(0, 200), cipher: null };
  }
}

export const NOT_PROBED =
  'SSL 2.0 and SSL 3.0 are not probed: the OpenSSL bundled with Node cannot speak them (no SSLv2/SSLv3 method). Export-grade, NULL and anonymous suites are not enumerated either; TLS 1.0/1.1 are probed at security level 0.';

export async function runTlsProtocolsCheck(
  target: string,
  ctx: CheckContext,
  opts: TlsProtocolsOptions,
): Promise<CheckOutput> {
  // Protocol enumeration is active work: the active guard, which also refuses ACTIVE_DENY_CIDRS.
  const guard = ctx.runtime.services.activeOutbound;
  const resolved = await resolveTlsTarget(target, guard, 'tls_protocols', ctx.signal);
  if (!('addresses' in resolved)) return resolved;
  const t = resolved;
  const max = opts.maxAddresses ?? 4;
  const probed = t.addresses.slice(0, max);
  const perAddress = await Promise.all(
    probed.map(async (address) => {
      const results = await Promise.all(
        TLS_VERSIONS.map((v) => probe(guard!, t, address, v, opts.handshakeTimeoutMs, ctx.signal)),
      );
      return {
        address,
        versions: Object.fromEntries(TLS_VERSIONS.map((v, i) => [v, results[i]!])) as Record<
          TlsVersion,
          Awaited<ReturnType<typeof probe>>
        >,
      };
    }),
  );
  ctx.signal.throwIfAborted();
  const { objects, relations } = addressObjects(t);
  const findings: FindingOut[] = [];
  const limitations: Limitation[] = [{ code: 'tls_versions_not_probed', message: NOT_PROBED }];
  if (t.addresses.length > max)
    limitations.push({
      code: 'tls_protocols_addresses_truncated',
      message: `${t.addresses.length} addresses; the first ${max} were probed.`,
    });
  let known = 0;
  let unknown = 0;
  let timeouts = 0;
  for (const a of perAddress) {
    const ip = { type: 'ip_address', key: a.address };
    const legacy = (['TLSv1', 'TLSv1.1'] as const).filter((v) => a.versions[v].outcome === 'accepted');
    if (legacy.length > 0)
      findings.push(
        webFinding(
          'tls_legacy_protocol_enabled',
          ip,
          `${a.address} (${t.host}) accepts ${legacy.join(' and ')}.`,
          legacy.map((v) => `${v}: handshake completed (${a.versions[v].cipher ?? 'cipher unknown'})`),
        ),
      );
    const anyAccepted = TLS_VERSIONS.some((v) => a.versions[v].outcome === 'accepted');
    if (a.versions['TLSv1.3'].outcome === 'rejected' && anyAccepted)
      findings.push(
        webFinding('tls13_not_supported', ip, `${a.address} (${t.host}) refused a TLS 1.3 handshake.`, [
          `TLSv1.3: ${a.versions['TLSv1.3'].detail}`,
        ]),
      );
    for (const v of TLS_VERSIONS) {
      const o = a.versions[v].outcome;
      if (o === 'accepted' || o === 'rejected') known++;
      else {
        if (o === 'timeout') timeouts++;
        else unknown++;
        limitations.push({
          code: 'tls_version_unknown',
          message: `${a.address} ${v}: ${o === 'timeout' ? 'no answer before the deadline' : `no TLS answer (${a.versions[v].detail})`}; whether it is accepted is unknown.`,
        });
      }
    }
  }
  let status: LaneStatus = 'completed';
  let reason: string | undefined;
  const refused = perAddress.every((a) => TLS_VERSIONS.every((v) => /ECONNREFUSED/.test(a.versions[v].detail ?? '')));
  if (known === 0)
    ({ status, reason } =
      timeouts > 0 && unknown === 0
        ? { status: 'timeout' as const, reason: 'tls_timeout' }
        : { status: 'unavailable' as const, reason: refused ? 'connection_refused' : 'tls_failed' });
  else if (unknown + timeouts > 0 || t.addresses.length > max) status = 'partial';
  return {
    status,
    ...(reason ? { reason } : {}),
    projection: {
      host: t.host,
      port: t.port,
      addresses: perAddress.map((a) => ({
        address: a.address,
        versions: Object.fromEntries(
          TLS_VERSIONS.map((v) => [v, { outcome: a.versions[v].outcome, cipher: a.versions[v].cipher }]),
        ),
      })),
      notProbed: ['SSLv2', 'SSLv3'],
    },
    objects,
    relations,
    findings,
    limitations,
    sources: [{ source: 'tls_handshake' }],
  };
}
