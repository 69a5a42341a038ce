// What a finished TLS handshake says, as facts (the web tls lane, the mail smtp_starttls and dane
// lanes, scans): protocol and cipher, whether the chain is trusted (Node's root store plus
// NODE_EXTRA_CA_CERTS), whether the leaf is valid for the host name — each on its own, since a
// certificate can be trusted and wrong for the host, or right for the host and untrusted — and the
// certificate chain (DER, leaf first) for parsing in the lane's pool. Handshakes are made
// with rejectUnauthorized: false so that an untrusted certificate is a fact to report, not an
// error that hides everything else.
import tls from 'node:tls';

export interface HandshakeFacts {
  protocol: string | null;
  cipher: { name: string; standardName: string; version: string } | null;
  /** The chain verifies to a trusted root. */
  chainTrusted: boolean;
  /** OpenSSL's reason when it does not (CERT_HAS_EXPIRED, SELF_SIGNED_CERT_IN_CHAIN…). */
  trustError: string | null;
  /** The leaf is valid for the expected name; null when no name was expected. */
  hostnameMatch: boolean | null;
  /**
   * Base64 DER of the chain as OpenSSL built it, leaf first: for a trusted chain this ends with
   * the trust anchor from the store (Node exposes no list of exactly what the server sent).
   */
  chain: string[];
  /** The server stapled an OCSP response (only known when requestOCSP was set). */
  ocspStapled: boolean | null;
}

const ALTNAME = 'ERR_TLS_CERT_ALTNAME_INVALID';

/** The peer's certificate path, leaf first, following issuerCertificate links (bounded, loop-safe). */
function presentedChain(leaf: tls.DetailedPeerCertificate | undefined): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  let cert = leaf;
  while (cert?.raw && out.length < 10) {
    const der = cert.raw.toString('base64');
    if (seen.has(der)) break; // a self-signed root points at itself
    seen.add(der);
    out.push(der);
    cert = cert.issuerCertificate;
  }
  return out;
}

export function handshakeFacts(
  socket: tls.TLSSocket,
  expectedName?: string,
  ocspStapled: boolean | null = null,
): HandshakeFacts {
  const cipher = socket.getCipher();
  const error = socket.authorizationError
    ? String((socket.authorizationError as unknown as { code?: string }).code ?? socket.authorizationError)
    : null;
  const chainTrusted = socket.authorized || error === ALTNAME;
  // Once, with the chain: each call converts every certificate to JS objects (a visible share of
  // the web lane's main thread during a burst of handshakes). On a socket from connectTls or
  // upgradeTls this is the conversion Node already made for its own host-name check
  // (peer-certificate.ts keepPeerChain).
  const leaf = socket.getPeerCertificate(true);
  const hostnameMatch =
    expectedName && leaf && Object.keys(leaf).length > 0
      ? tls.checkServerIdentity(expectedName, leaf) === undefined
      : expectedName
        ? false
        : null;
  return {
    protocol: socket.getProtocol() ?? null,
    cipher: cipher ? { name: cipher.name, standardName: cipher.standardName, version: cipher.version } : null,
    chainTrusted,
    trustError: chainTrusted ? null : error,
    hostnameMatch,
    chain: presentedChain(leaf),
    ocspStapled,
  };
}
