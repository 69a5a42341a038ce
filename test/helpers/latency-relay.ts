// A loopback TCP relay in front of a real server (the machine's shared MariaDB) that can slow its
// answers down: every chunk from the server reaches the client `delayMs` later (in order, per
// connection). A dependency that is up but slow, for this service only; nothing else is affected.
import net from 'node:net';

export interface LatencyRelay {
  port: number;
  /** Delay of the server's bytes from now on (0: none). */
  setDelay(ms: number): void;
  stop(): Promise<void>;
}

export async function startLatencyRelay(target: { host: string; port: number }): Promise<LatencyRelay> {
  let delayMs = 0;
  const sockets = new Set<net.Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    let releaseAt = 0; // never earlier than the chunk before it: the stream stays in order
    for (const x of [client, upstream]) {
      sockets.add(x);
      x.on('close', () => sockets.delete(x));
      x.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      releaseAt = Math.max(releaseAt, Date.now() + delayMs);
      const t = setTimeout(
        () => {
          timers.delete(t);
          if (!client.destroyed) client.write(chunk);
        },
        Math.max(0, releaseAt - Date.now()),
      );
      timers.add(t);
    });
    upstream.on('end', () => {
      const t = setTimeout(() => client.end(), Math.max(0, releaseAt - Date.now()));
      timers.add(t);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    setDelay(ms) {
      delayMs = ms;
    },
    async stop() {
      for (const t of timers) clearTimeout(t);
      for (const x of sockets) x.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
