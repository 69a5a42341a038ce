// Servers of one kind (SMTP, HTTPS…) on several distinct 127.x addresses that share ONE port, so
// that a single OUTBOUND_PORT_MAP entry (25=<port>, 443=<port>) sends the service's connections to
// the right lab host by address alone. The port is chosen by the first bind (an ephemeral port);
// if another address has it taken, everything is retried on a new port.
import type net from 'node:net';

export interface Listening {
  port: number;
  close(): Promise<void>;
}

/** Any net.Server (http.Server, https.Server, tls.Server) is a net.Server. */
export async function listenOnHosts(
  servers: Array<{ host: string; server: net.Server }>,
  opts: { port?: number; tries?: number } = {},
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
    let port = opts.port ?? 0;
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
