// One client SecureContext per distinct set of context options, shared by every outbound TLS
// connection that uses the same set. Without it each tls.connect builds its own context (OpenSSL
// SSL_CTX set-up and the root store wired in again): in the web lane's profile that was about 4 %
// of its main thread, synchronous, on every handshake of a 50-lookup burst.
//
// Sharing is safe for what the lanes report: a context holds protocol bounds, ciphers and trust
// roots, not per-connection facts. Node's contexts keep no internal client session cache
// (SSL_SESS_CACHE_NO_INTERNAL), so a shared context never resumes a session behind the caller's
// back; servername, rejectUnauthorized, requestOCSP and ALPN stay per connection.
import tls from 'node:tls';

/** Options that shape the context itself (tls.createSecureContext); everything else is per socket. */
const CONTEXT_KEYS = [
  'minVersion',
  'maxVersion',
  'ciphers',
  'ecdhCurve',
  'sigalgs',
  'secureOptions',
  'honorCipherOrder',
  'secureProtocol',
] as const;
/** Material a caller might pass (client certificates, private roots): such contexts are not cached. */
const MATERIAL_KEYS = [
  'ca',
  'cert',
  'key',
  'pfx',
  'passphrase',
  'crl',
  'privateKeyEngine',
  'privateKeyIdentifier',
  'secureContext',
] as const;
const MAX_CONTEXTS = 64;

const contexts = new Map<string, tls.SecureContext>();

/** The connect options with a shared `secureContext` in place of their context options. */
export function withSharedSecureContext<T extends tls.ConnectionOptions>(
  options: T,
): T & { secureContext?: tls.SecureContext } {
  const o = options as Record<string, unknown>;
  if (MATERIAL_KEYS.some((k) => o[k] !== undefined)) return options;
  const picked: Record<string, unknown> = {};
  for (const k of CONTEXT_KEYS) if (o[k] !== undefined) picked[k] = o[k];
  const cacheKey = JSON.stringify(picked);
  let context = contexts.get(cacheKey);
  if (!context) {
    context = tls.createSecureContext(picked as tls.SecureContextOptions);
    if (contexts.size >= MAX_CONTEXTS) contexts.delete(contexts.keys().next().value!);
    contexts.set(cacheKey, context);
  }
  return { ...options, secureContext: context };
}
