// A lab web server that limits its clients as real ones do (issue 48): it serves at most `limit`
// connections at once and, beyond that, either resets the connection at once (`mode: 'reset'`, a
// server or load balancer with a connection cap) or answers 503 (`mode: '503'`, an overloaded
// origin); `mode: 'dead'` resets every connection (an address that answers none). A connection
// counts from its accept until its response is sent (the response closes it), so a client cannot
// exceed the limit by letting a socket linger after it got its answer. Counts what it did.
import http from 'node:http';
import type net from 'node:net';

export interface LimitedHttpStats {
  accepted: number;
  served: number;
  reset: number;
  throttled: number;
  /** Most requests served at once. */
  most: number;
}

export function limitedHttpServer(o: { limit: number; mode: 'reset' | '503' | 'dead'; delayMs: number }): {
  server: http.Server;
  stats: LimitedHttpStats;
} {
  const stats: LimitedHttpStats = { accepted: 0, served: 0, reset: 0, throttled: 0, most: 0 };
  let serving = 0;
  /** Per connection: what gives its place back (once), called when its response is sent. */
  const ends = new WeakMap<net.Socket, () => void>();
  const server = http.createServer((req, res) => {
    // The response sent is the end of the connection's place: the client has its answer.
    res.once('finish', () => ends.get(req.socket)?.());
    if (o.mode === '503' && serving >= o.limit) {
      stats.throttled++;
      res.writeHead(503, { 'retry-after': '1', connection: 'close', 'content-length': '0' });
      res.end();
      return;
    }
    serving++;
    stats.most = Math.max(stats.most, serving);
    setTimeout(() => {
      const body = `ok ${req.url}`;
      res.writeHead(200, {
        'content-type': 'text/plain',
        'content-length': Buffer.byteLength(body),
        connection: 'close',
      });
      res.end(body, () => {
        serving--;
        stats.served++;
      });
    }, o.delayMs);
  });
  server.keepAliveTimeout = 1;
  let open = 0;
  server.on('connection', (s: net.Socket) => {
    stats.accepted++;
    if (o.mode === 'dead' || (o.mode === 'reset' && open >= o.limit)) {
      stats.reset++;
      s.resetAndDestroy();
      return;
    }
    open++;
    let counted = true;
    const done = () => {
      if (!counted) return;
      counted = false;
      open--;
    };
    s.once('close', done);
    ends.set(s, done);
  });
  return { server, stats };
}
