// A loopback TCP relay in front of a server the test may not stop (the machine's shared MariaDB):
// the service connects to the gate, the gate to the server. close() is the server going away for
// this service only — the listener stops (new connections are refused) and every relayed
// connection is reset — and open() brings it back on the same port. Nothing else is affected.
import net from 'node:net';

export interface TcpGate {
  port: number;
  /** host:port of the gate, for the service's URL. */
  address: string;
  /** Connections relayed so far. */
  connections(): number;
  close(): Promise<void>;
  open(): Promise<void>;
  isOpen(): boolean;
  stop(): Promise<void>;
}

export async function startTcpGate(target: { host: string; port: number }, port = 0): Promise<TcpGate> {
  const sockets = new Set<net.Socket>();
  let relayed = 0;
  let server: net.Server | null = null;
  let bound = port;

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = net.createServer((client) => {
        relayed++;
        const upstream = net.connect(target.port, target.host);
        for (const x of [client, upstream]) {
          sockets.add(x);
          x.on('close', () => sockets.delete(x));
          x.on('error', () => {
            client.destroy();
            upstream.destroy();
          });
        }
        client.pipe(upstream);
        upstream.pipe(client);
      });
      s.once('error', reject);
      s.listen(bound, '127.0.0.1', () => {
        bound = (s.address() as net.AddressInfo).port;
        server = s;
        resolve();
      });
    });

  await listen();
  const close = async () => {
    const s = server;
    server = null;
    for (const x of sockets) x.resetAndDestroy();
    if (s) await new Promise<void>((r) => s.close(() => r()));
  };
  return {
    port: bound,
    address: `127.0.0.1:${bound}`,
    connections: () => relayed,
    isOpen: () => server !== null,
    close,
    async open() {
      if (server) return;
      // The port was ours a moment ago; retry briefly if the kernel has not released it yet.
      for (let i = 0; ; i++) {
        try {
          await listen();
          return;
        } catch (err) {
          if (i >= 50) throw err;
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    },
    stop: close,
  };
}
