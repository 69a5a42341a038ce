// The peer certificate chain of an outbound TLS socket, converted to JS objects once at most.
//
// Node's handshake path (onConnectSecure, whenever the chain verified) calls
// socket.getPeerCertificate(true) for its host-name check: every certificate of the chain becomes
// an object (names, fingerprints, public key), about 0.3 ms of the lane's main thread against
// 0.05 ms for the leaf alone, while tls.checkServerIdentity reads only the leaf's subject and
// subjectaltname. A web lookup makes four verified handshakes (both request chains, the preflight,
// the tls check), and the tls check then converted the same chain again for its facts: the
// largest share of the web lane's main thread that was neither I/O nor MySQL (docs/products/web.md,
// Benchmark). Two per-socket answers, installed right after tls.connect (the handshake always
// finishes in a later turn, so Node's own call already sees them):
// - keepPeerChain: the first detailed conversion (Node's) is kept, and handshakeFacts, which needs
//   the chain's DER, reuses it. Same object, so the same facts.
// - leafForIdentityCheck: for sockets whose chain nobody reads (undici's, in guarded-fetch.ts),
//   Node's call gets the leaf alone, which is everything its host-name check reads; the check's
//   verdict, and so `authorized` and every TLS error, is unchanged.
// Both shadow the method on the socket itself, never on TLSSocket.prototype.
import tls from 'node:tls';

type GetPeerCertificate = (detailed?: boolean) => tls.PeerCertificate | tls.DetailedPeerCertificate;
/** Node's own method, looked up at each call (a test's spy on the prototype sees these calls). */
const original = (socket: tls.TLSSocket, detailed: boolean) =>
  (tls.TLSSocket.prototype.getPeerCertificate as GetPeerCertificate).call(socket, detailed);

function shadow(socket: tls.TLSSocket, fn: GetPeerCertificate): void {
  Object.defineProperty(socket, 'getPeerCertificate', { value: fn, configurable: true, writable: true });
}

/** The socket's first detailed conversion of the peer chain answers its later detailed calls. */
export function keepPeerChain(socket: tls.TLSSocket): void {
  let kept: tls.DetailedPeerCertificate | undefined;
  shadow(socket, function (this: tls.TLSSocket, detailed?: boolean) {
    if (!detailed) return original(this, false);
    if (kept !== undefined) return kept;
    const chain = original(this, true) as tls.DetailedPeerCertificate | null;
    // null (no handle any more) or {} (no peer certificate) is not kept: a later call asks again.
    if (chain && Object.keys(chain).length > 0) kept = chain;
    return chain as tls.DetailedPeerCertificate;
  });
}

/** Detailed calls on this socket get the leaf alone (for sockets whose chain nobody reads). */
export function leafForIdentityCheck(socket: tls.TLSSocket): void {
  shadow(socket, function (this: tls.TLSSocket) {
    return original(this, false);
  });
}
