import tls from 'node:tls';
import { describe, expect, it } from 'vitest';
import { withSharedSecureContext } from '../../src/net/secure-contexts.ts';

describe('withSharedSecureContext', () => {
  it('shares one context per set of context options and keeps per-socket options as given', () => {
    const a = withSharedSecureContext({ minVersion: 'TLSv1.2', rejectUnauthorized: false, servername: 'a.test' });
    const b = withSharedSecureContext({
      minVersion: 'TLSv1.2',
      rejectUnauthorized: true,
      servername: 'b.test',
      requestOCSP: true,
    });
    expect(a.secureContext?.context).toBeDefined();
    expect(b.secureContext).toBe(a.secureContext);
    expect(a).toMatchObject({ rejectUnauthorized: false, servername: 'a.test' });
    expect(b).toMatchObject({ rejectUnauthorized: true, servername: 'b.test', requestOCSP: true });
  });

  it('builds a distinct context when protocol bounds or ciphers differ', () => {
    const base = withSharedSecureContext({}).secureContext;
    const tls13 = withSharedSecureContext({ minVersion: 'TLSv1.3', maxVersion: 'TLSv1.3' }).secureContext;
    const legacy = withSharedSecureContext({ minVersion: 'TLSv1', ciphers: 'DEFAULT:@SECLEVEL=0' }).secureContext;
    expect(new Set([base, tls13, legacy]).size).toBe(3);
    // The key follows a fixed option order, not the caller's.
    expect(withSharedSecureContext({ maxVersion: 'TLSv1.3', minVersion: 'TLSv1.3' }).secureContext).toBe(tls13);
  });

  it('never caches a context that carries key material or a caller-made context', () => {
    const own = tls.createSecureContext({});
    expect(withSharedSecureContext({ secureContext: own }).secureContext).toBe(own);
    const withCa = withSharedSecureContext({ ca: ['-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n'] });
    expect(withCa.secureContext).toBeUndefined();
  });
});
