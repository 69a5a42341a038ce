// One exchange with one server over UDP or TCP. Exchanges never reject: they settle with a reply,
// a failure (the server cannot be used for this question) or "aborted" (the caller stopped
// waiting), and they always release their socket.
import dgram from 'node:dgram';
import net from 'node:net';
import type { DnsServer } from '../config/dns-servers.ts';
import { DnsFrameReader, frameMessage } from './tcp-frames.ts';
import type { Reply } from './wire.ts';

export type Exchange = { kind: 'reply'; reply: Reply } | { kind: 'failed'; reason: string } | { kind: 'aborted' };

/** Returns the reply when the bytes answer our query, null when they must be ignored. */
export type Acceptor = (buf: Buffer) => Reply | null;

function errorReason(err: unknown): string {
  const e = err as NodeJS.ErrnoException | undefined;
  return e?.code ?? e?.message ?? 'socket_error';
}

/**
 * A fresh socket per exchange: the OS picks a random ephemeral source port, and connect() makes
 * the kernel drop datagrams from any other address, so only the server itself can answer.
 * Datagrams that do not answer the query are ignored and we keep listening until aborted.
 */
export function udpExchange(
  server: DnsServer,
  query: Buffer,
  accept: Acceptor,
  signal: AbortSignal,
): Promise<Exchange> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve({ kind: 'aborted' });
    const socket = dgram.createSocket({ type: net.isIPv6(server.host) ? 'udp6' : 'udp4' });
    let settled = false;
    const settle = (x: Exchange) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      try {
        socket.close();
      } catch {
        // already closed
      }
      resolve(x);
    };
    const onAbort = () => settle({ kind: 'aborted' });
    signal.addEventListener('abort', onAbort, { once: true });
    // An ICMP port-unreachable surfaces here (ECONNREFUSED): the server is not there, fail fast.
    socket.on('error', (err) => settle({ kind: 'failed', reason: errorReason(err) }));
    socket.on('message', (msg) => {
      const reply = accept(msg);
      if (reply) settle({ kind: 'reply', reply });
    });
    try {
      socket.connect(server.port, server.host, () => {
        if (settled) return;
        socket.send(query, (err) => {
          if (err) settle({ kind: 'failed', reason: errorReason(err) });
        });
      });
    } catch (err) {
      settle({ kind: 'failed', reason: errorReason(err) }); // e.g. a port out of range
    }
  });
}

/**
 * The same question over TCP with RFC 1035 §4.2.2 framing (2-byte length). Unlike UDP a stream
 * cannot carry someone else's datagram, so a reply that does not decode or does not match is the
 * server's failure, not noise to skip.
 */
export function tcpExchange(
  server: DnsServer,
  query: Buffer,
  accept: Acceptor,
  signal: AbortSignal,
): Promise<Exchange> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve({ kind: 'aborted' });
    let socket: net.Socket;
    try {
      socket = net.connect({ host: server.host, port: server.port });
    } catch (err) {
      return resolve({ kind: 'failed', reason: errorReason(err) });
    }
    let settled = false;
    const frames = new DnsFrameReader();
    const settle = (x: Exchange) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(x);
    };
    const onAbort = () => settle({ kind: 'aborted' });
    signal.addEventListener('abort', onAbort, { once: true });
    socket.setNoDelay(true);
    socket.on('error', (err) => settle({ kind: 'failed', reason: errorReason(err) }));
    socket.on('close', () => settle({ kind: 'failed', reason: 'tcp_closed_before_reply' }));
    socket.on('connect', () => {
      socket.write(frameMessage(query));
    });
    socket.on('data', (chunk: Buffer) => {
      // Each byte copied once however the server cuts its reply (./tcp-frames.ts); the length
      // prefix caps a message at 65535 bytes.
      const [message] = frames.push(chunk);
      // A header is 12 bytes: a shorter length fails as soon as it is announced.
      const length = message ? message.length : frames.pendingLength;
      if (length !== null && length < 12) return settle({ kind: 'failed', reason: 'tcp_reply_too_short' });
      if (!message) return;
      const reply = accept(message);
      settle(reply ? { kind: 'reply', reply } : { kind: 'failed', reason: 'tcp_reply_invalid' });
    });
  });
}
