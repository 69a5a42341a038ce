// The bytes between a server's 220 to STARTTLS and its first TLS record. There should be none: after
// the 220 the client speaks first (its ClientHello) and the server's next bytes are TLS (RFC 3207
// §4-5). Plain text there is the response-injection shape of the STARTTLS class of CVE-2011-0411
// (Venema 2011; "NO STARTTLS", Poddebniak et al., USENIX Security 2021): a client that keeps
// those bytes and reads them as replies after the handshake takes an attacker's plain text for
// the server's encrypted words. They are recorded as a fact and never given to TLS.
//
// The gate sits between the TCP socket and the TLS layer for the handshake's start: it drops
// whole plain-text lines (each counted; the first bytes kept as a sample) until a line begins
// with a byte that starts a TLS record from a server (22: handshake, 21: alert); from there on it
// passes every byte through untouched. Plain text past `maxBytes` without a TLS record ends the
// session (the gate is destroyed with PlaintextOverflow).
import { Duplex } from 'node:stream';
import type net from 'node:net';

const TLS_HANDSHAKE = 0x16;
const TLS_ALERT = 0x15;
const SAMPLE_BYTES = 64;

export class PlaintextOverflow extends Error {
  constructor(maxBytes: number) {
    super(`more than ${maxBytes} bytes of plain text after the 220 to STARTTLS, and no TLS`);
    this.name = 'PlaintextOverflow';
  }
}

export interface PlaintextBeforeTls {
  /** Plain-text bytes after the 220 (none: false). */
  detected: boolean;
  bytes: number;
  /** The first bytes, escaped as a JSON string body (quotes removed); null when none. */
  sample: string | null;
}

export class TlsStartGate extends Duplex {
  readonly #socket: net.Socket;
  readonly #maxBytes: number;
  #passing = false;
  #atLineStart = true;
  #bytes = 0;
  #sample = Buffer.alloc(0);
  #overflowed = false;
  readonly #onData = (chunk: Buffer) => this.#fromServer(chunk);
  readonly #onEnd = () => this.push(null);
  readonly #onClose = () => this.destroy();
  readonly #onError = (err: Error) => this.destroy(err);

  /**
   * `early`: what the server sent after its 220 and the SMTP reader had already received (the
   * same segment as the 220): plain text by definition, counted first.
   */
  constructor(socket: net.Socket, opts: { maxBytes: number; early?: Buffer }) {
    super();
    this.#socket = socket;
    this.#maxBytes = opts.maxBytes;
    if (opts.early && opts.early.length > 0) this.#plaintext(opts.early, opts.early.at(-1) === 0x0a);
    socket.on('data', this.#onData);
    socket.on('end', this.#onEnd);
    socket.on('close', this.#onClose);
    socket.on('error', this.#onError);
  }

  /** What was dropped before the first TLS record. */
  get plaintext(): PlaintextBeforeTls {
    return {
      detected: this.#bytes > 0,
      bytes: this.#bytes,
      sample: this.#bytes > 0 ? JSON.stringify(this.#sample.toString('latin1')).slice(1, -1) : null,
    };
  }

  /** Plain text passed maxBytes and the gate ended the connection. */
  get overflowed(): boolean {
    return this.#overflowed;
  }

  #plaintext(bytes: Buffer, endsLine: boolean): void {
    this.#bytes += bytes.length;
    if (this.#sample.length < SAMPLE_BYTES)
      this.#sample = Buffer.concat([this.#sample, bytes.subarray(0, SAMPLE_BYTES - this.#sample.length)]);
    this.#atLineStart = endsLine;
  }

  #fromServer(chunk: Buffer): void {
    let at = 0;
    while (!this.#passing && at < chunk.length) {
      if (this.#atLineStart && (chunk[at] === TLS_HANDSHAKE || chunk[at] === TLS_ALERT)) {
        this.#passing = true;
        break;
      }
      const nl = chunk.indexOf(0x0a, at);
      const end = nl < 0 ? chunk.length : nl + 1;
      this.#plaintext(chunk.subarray(at, end), nl >= 0);
      at = end;
      if (this.#bytes > this.#maxBytes) {
        this.#overflowed = true;
        return void this.destroy(new PlaintextOverflow(this.#maxBytes));
      }
    }
    if (this.#passing && at < chunk.length && !this.push(at === 0 ? chunk : chunk.subarray(at))) this.#socket.pause();
  }

  override _read(): void {
    this.#socket.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.#socket.write(chunk, cb);
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.#socket.end();
    cb();
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.#socket.off('data', this.#onData);
    this.#socket.off('end', this.#onEnd);
    this.#socket.off('close', this.#onClose);
    this.#socket.off('error', this.#onError);
    this.#socket.destroy();
    cb(err);
  }
}
