// Servers of one kind (SMTP, HTTPS…) on several distinct 127.x addresses that share ONE port, so
// that a single OUTBOUND_PORT_MAP entry (25=<port>, 443=<port>) sends the service's connections to
// the right lab host by address alone. The port is chosen by the first bind (an ephemeral port);
// if another address has it taken, everything is retried on a new port.
//
// The kernel may hand out a port number another logical port of the lab already uses on other
// addresses (a bind on 127.0.3.99 does not conflict with one on 127.0.1.5). The map must stay
// one-to-one: were 25 and 22 both mapped to one real port, a connection to a host on 25 would reach
// that host's listener for 22 (the scan lab counts such connections as out-of-scope probes). So a
// new port is first picked outside `avoid`, the real ports of the other logical ports.
import net from 'node:net';

export interface Listening {
  port: number;
  close(): Promise<void>;
}

/** Any net.Server (http.Server, https.Server, tls.Server) is a net.Server. */
export async function listenOnHosts(
  servers: Array<{ host: string; server: net.Server }>,
  opts: { port?: number; tries?: number; avoid?: ReadonlySet<number> } = {},
): Promise<Listening> {
  const tries = opts.tries ?? 20;
  // Track every socket so close() ends hostile or idle peers instead of waiting on them.
  const sockets = new Set<net.Socket>();
  for (const { server } of servers) {
    server.on('connection', (s: net.Socket) => {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
    });
  }
  const closeAll = async (list: net.Server[]) => {
    for (const s of sockets) s.destroy();
    await Promise.all(list.map((s) => new Promise<void>((r) => s.close(() => r()))));
  };
  for (let attempt = 0; ; attempt++) {
    const bound: net.Server[] = [];
    let port = opts.port ?? (opts.avoid?.size && servers[0] ? await portOutside(servers[0].host, opts.avoid) : 0);
    try {
      for (const { host, server } of servers) {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(port, host, () => {
            server.off('error', reject);
            resolve();
          });
        });
        bound.push(server);
        port = (server.address() as net.AddressInfo).port;
      }
      return { port, close: () => closeAll(bound) };
    } catch (err) {
      await closeAll(bound);
      if (opts.port || attempt >= tries) throw err;
    }
  }
}

/**
 * An ephemeral port of `host` that is none of `avoid`. The placeholders stay bound until one fits,
 * so the kernel cannot offer a rejected port again; the caller binds the chosen port right after
 * (and retries on a new one should something take it in between).
 */
async function portOutside(host: string, avoid: ReadonlySet<number>, tries = 50): Promise<number> {
  const held: net.Server[] = [];
  try {
    for (let i = 0; i < tries; i++) {
      const probe = net.createServer();
      await new Promise<void>((resolve, reject) => {
        probe.once('error', reject);
        probe.listen(0, host, () => resolve());
      });
      held.push(probe);
      const port = (probe.address() as net.AddressInfo).port;
      if (!avoid.has(port)) return port;
    }
    throw new Error(`no port on ${host} outside the ${avoid.size} the lab already maps`);
  } finally {
    await Promise.all(held.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }
}
