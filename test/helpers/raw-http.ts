// A raw HTTP/1.1 exchange over a fresh TCP connection: the bytes go out exactly as given (so
// malformed requests reach the server's parser), and one response is read back, or the close.
import net from 'node:net';

export interface RawReply {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The server closed the connection without sending a byte. */
  silent: boolean;
}

export function rawRequest(
  port: number,
  bytes: string | Buffer,
  timeoutMs = 5000,
  host = '127.0.0.1',
): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    let data = Buffer.alloc(0);
    let done = false;
    const timer = setTimeout(() => {
      if (done) return;
      done = true;
      socket.destroy();
      reject(new Error(`no reply within ${timeoutMs} ms`));
    }, timeoutMs);
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(parseReply(data));
    };
    socket.on('data', (d) => {
      data = Buffer.concat([data, d]);
      if (complete(data)) {
        socket.destroy();
        finish();
      }
    });
    socket.on('close', finish);
    socket.on('error', () => {}); // a reset after the reply is fine; 'close' follows
    socket.write(bytes);
  });
}

/** Interim 1xx responses (100 Continue) come before the real one: skip them. */
function withoutInterim(data: Buffer): Buffer {
  let rest = data;
  for (;;) {
    const text = rest.toString('latin1');
    if (!/^HTTP\/1\.[01] 1\d\d/.test(text)) return rest;
    const end = text.indexOf('\r\n\r\n');
    if (end < 0) return rest;
    rest = rest.subarray(end + 4);
  }
}

/** True once the buffer holds a whole response (headers plus Content-Length or the last chunk). */
function complete(raw: Buffer): boolean {
  const data = withoutInterim(raw);
  const text = data.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return false;
  const head = text.slice(0, end);
  if (/^HTTP\/1\.[01] (204|304)/.test(head)) return true;
  const len = /\r\ncontent-length: *(\d+)/i.exec(head)?.[1];
  if (len !== undefined) return data.length >= end + 4 + Number(len);
  if (/\r\ntransfer-encoding: *chunked/i.test(head)) return text.endsWith('0\r\n\r\n');
  return false;
}

export function parseReply(raw: Buffer): RawReply {
  const data = withoutInterim(raw);
  const text = data.toString('latin1');
  if (text.length === 0) return { status: 0, headers: {}, body: '', silent: true };
  const end = text.indexOf('\r\n\r\n');
  const head = end < 0 ? text : text.slice(0, end);
  const lines = head.split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0]!)?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const rawBody = end < 0 ? Buffer.alloc(0) : data.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1'));
  let body = rawBody.toString('utf8');
  if (headers['transfer-encoding'] === 'chunked') body = dechunk(rawBody).toString('utf8');
  return { status, headers, body, silent: false };
}

function dechunk(b: Buffer): Buffer {
  const out: Buffer[] = [];
  let rest = b;
  for (;;) {
    const nl = rest.indexOf('\r\n');
    if (nl < 0) break;
    const n = parseInt(rest.subarray(0, nl).toString('latin1'), 16);
    if (!n) break;
    out.push(rest.subarray(nl + 2, nl + 2 + n));
    rest = rest.subarray(nl + 2 + n + 2);
  }
  return Buffer.concat(out);
}
