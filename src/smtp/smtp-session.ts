// One SMTP session with an MX address, as far as STARTTLS: connect (through the outbound guard),
// banner, EHLO, STARTTLS, the TLS handshake, QUIT. No mail is ever sent (no MAIL FROM). Each
// phase has its own deadline, and what the server sends is capped (line length, lines per reply,
// bytes per session), so a server that never speaks, or speaks forever, ends the session in a
// state of its own instead of holding the lane.
//
// "Port 25 unreachable" (connect failed or timed out) is a different state from "no STARTTLS"
// (EHLO answered without it): only the second is a fact about the server's TLS. implicitTlsProbe
// (at the end) looks at port 465 of a host without STARTTLS, as a fact beside that verdict.
// Bytes the server sends between its 220 to STARTTLS and its TLS are recorded, never read as TLS
// or as replies (./tls-start-gate.ts).
import type net from 'node:net';
import type tls from 'node:tls';
import { OutboundFetchError, OutboundRefusedError } from '../net/outbound-errors.ts';
import { upgradeTls, type OutboundGuard } from '../net/outbound-guard.ts';
import { handshakeFacts, type HandshakeFacts } from '../net/tls-facts.ts';
import { PlaintextOverflow, TlsStartGate, type PlaintextBeforeTls } from './tls-start-gate.ts';

export interface SmtpLimits {
  connectMs: number;
  bannerMs: number;
  /** EHLO and STARTTLS replies. */
  commandMs: number;
  tlsMs: number;
  quitMs: number;
  maxLineBytes: number;
  maxReplyLines: number;
  maxSessionBytes: number;
}

export const DEFAULT_SMTP_LIMITS: SmtpLimits = {
  connectMs: 5_000,
  bannerMs: 10_000,
  commandMs: 5_000,
  tlsMs: 8_000,
  quitMs: 1_000,
  maxLineBytes: 2_048,
  maxReplyLines: 64,
  maxSessionBytes: 32 * 1024,
};

export type SessionState =
  | 'tls'
  | 'no_starttls'
  | 'starttls_refused'
  | 'tls_failed'
  | 'unreachable'
  | 'connect_timeout'
  | 'not_allowed'
  | 'banner_timeout'
  | 'greeting_rejected'
  | 'ehlo_failed'
  | 'command_timeout'
  | 'protocol_violation'
  | 'aborted';

/** States that say nothing about the server's TLS (the check could not get that far). */
export const GAP_STATES: ReadonlySet<SessionState> = new Set([
  'unreachable',
  'connect_timeout',
  'not_allowed',
  'banner_timeout',
  'command_timeout',
  'aborted',
  'protocol_violation',
  'greeting_rejected',
  'ehlo_failed',
]);
export const TIMEOUT_STATES: ReadonlySet<SessionState> = new Set([
  'connect_timeout',
  'banner_timeout',
  'command_timeout',
]);

export interface SessionResult {
  address: string;
  state: SessionState;
  /** First banner line, cut to 200 characters. */
  banner: string | null;
  ehloExtensions: string[];
  starttlsAdvertised: boolean | null;
  tls: HandshakeFacts | null;
  /**
   * What the server sent after its 220 to STARTTLS and before TLS (./tls-start-gate.ts); null
   * when STARTTLS was not answered 220 (the question does not arise).
   */
  pipeliningBeforeTls: PlaintextBeforeTls | null;
  phases: Array<{ phase: string; ms: number }>;
  detail: string | null;
}

interface Reply {
  code: number;
  lines: string[];
  /** Bytes of the reply on the wire (its lines with their line ends). */
  raw: number;
}

class ReplyError extends Error {
  readonly kind: 'timeout' | 'closed' | 'too_large' | 'malformed';
  constructor(kind: ReplyError['kind'], message: string) {
    super(message);
    this.kind = kind;
  }
}

/** Reads SMTP replies from a socket within the session's caps. */
class ReplyReader {
  #buf = '';
  #bytes = 0;
  #waiter: { resolve: (r: Reply) => void; reject: (e: Error) => void } | null = null;
  #lines: string[] = [];
  #replyRaw = 0;
  /** What arrived after the last reply handed out (latin1: one character per byte). */
  #unread = '';
  /** Complete replies that arrived before anyone asked (pipelining servers). */
  #pending: Reply[] = [];
  #failure: ReplyError | null = null;
  readonly #socket: net.Socket;
  readonly #limits: SmtpLimits;
  readonly #onData = (chunk: Buffer) => this.#take(chunk);
  readonly #onEnd = () => this.#fail(new ReplyError('closed', 'the server closed the connection'));

  constructor(socket: net.Socket, limits: SmtpLimits, bytesSoFar = 0) {
    this.#socket = socket;
    this.#limits = limits;
    this.#bytes = bytesSoFar;
    socket.on('data', this.#onData);
    socket.on('end', this.#onEnd);
    socket.on('close', this.#onEnd);
  }

  get bytes(): number {
    return this.#bytes;
  }

  detach(): void {
    this.#socket.off('data', this.#onData);
    this.#socket.off('end', this.#onEnd);
    this.#socket.off('close', this.#onEnd);
  }

  #fail(e: ReplyError): void {
    this.#failure ??= e;
    const w = this.#waiter;
    this.#waiter = null;
    w?.reject(this.#failure);
  }

  #take(chunk: Buffer): void {
    this.#bytes += chunk.length;
    if (this.#bytes > this.#limits.maxSessionBytes)
      return this.#fail(new ReplyError('too_large', `more than ${this.#limits.maxSessionBytes} bytes from the server`));
    const text = chunk.toString('latin1');
    this.#buf += text;
    this.#unread += text;
    for (;;) {
      const nl = this.#buf.indexOf('\n');
      if (nl < 0) break;
      const line = this.#buf.slice(0, nl).replace(/\r$/, '');
      this.#buf = this.#buf.slice(nl + 1);
      this.#replyRaw += nl + 1;
      if (line.length > this.#limits.maxLineBytes)
        return this.#fail(new ReplyError('too_large', `a reply line longer than ${this.#limits.maxLineBytes} bytes`));
      this.#lines.push(line);
      if (this.#lines.length > this.#limits.maxReplyLines)
        return this.#fail(new ReplyError('too_large', `a reply of more than ${this.#limits.maxReplyLines} lines`));
      const m = /^(\d{3})([ -]|$)/.exec(line);
      if (!m) return this.#fail(new ReplyError('malformed', `not an SMTP reply line: ${line.slice(0, 80)}`));
      if (m[2] !== '-') {
        const reply = { code: Number(m[1]), lines: this.#lines.map((l) => l.slice(4)), raw: this.#replyRaw };
        this.#lines = [];
        this.#replyRaw = 0;
        const w = this.#waiter;
        this.#waiter = null;
        if (w) w.resolve(this.#handOut(reply));
        else this.#pending.push(reply);
      }
    }
    if (this.#buf.length > this.#limits.maxLineBytes)
      this.#fail(new ReplyError('too_large', `a reply line longer than ${this.#limits.maxLineBytes} bytes`));
  }

  #handOut(reply: Reply): Reply {
    this.#unread = this.#unread.slice(reply.raw);
    return reply;
  }

  /** The bytes received after the last reply handed out: replies nobody asked for, a partial line. */
  unread(): Buffer {
    return Buffer.from(this.#unread, 'latin1');
  }

  read(timeoutMs: number, signal: AbortSignal): Promise<Reply> {
    if (this.#failure) return Promise.reject(this.#failure);
    const ready = this.#pending.shift();
    if (ready) return Promise.resolve(this.#handOut(ready));
    return new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiter = null;
        reject(new ReplyError('timeout', `no reply within ${timeoutMs} ms`));
      }, timeoutMs);
      const onAbort = () => {
        clearTimeout(timer);
        this.#waiter = null;
        reject(new ReplyError('closed', 'aborted'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiter = {
        resolve: (r) => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          resolve(r);
        },
        reject: (e) => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          reject(e);
        },
      };
    });
  }
}

const EHLO_NAME = /^[A-Za-z0-9.-]{1,253}$/;

export interface SessionTarget {
  host: string;
  address: string;
}

export async function smtpSession(
  guard: OutboundGuard,
  target: SessionTarget,
  opts: { ehloName: string; limits: SmtpLimits; signal: AbortSignal },
): Promise<SessionResult> {
  // The EHLO argument goes on the wire as is: only a plain host name (no CR/LF, no space).
  if (!EHLO_NAME.test(opts.ehloName)) throw new Error('the EHLO name must be a host name (LDH labels)');
  const { limits, signal } = opts;
  const result: SessionResult = {
    address: target.address,
    state: 'aborted',
    banner: null,
    ehloExtensions: [],
    starttlsAdvertised: null,
    tls: null,
    pipeliningBeforeTls: null,
    phases: [],
    detail: null,
  };
  let started = performance.now();
  const phase = (name: string) => {
    const now = performance.now();
    result.phases.push({ phase: name, ms: Math.round((now - started) * 10) / 10 });
    started = now;
  };
  const end = (state: SessionState, detail: string | null = null) => {
    result.state = state;
    result.detail = detail;
    return result;
  };
  const replyFailure = (e: unknown, timeoutState: SessionState): SessionResult => {
    if (signal.aborted) return end('aborted');
    if (e instanceof ReplyError) {
      if (e.kind === 'timeout') return end(timeoutState, e.message);
      if (e.kind === 'too_large' || e.kind === 'malformed') return end('protocol_violation', e.message);
      return end(timeoutState === 'banner_timeout' ? 'unreachable' : 'protocol_violation', e.message);
    }
    return end('protocol_violation', e instanceof Error ? e.message : String(e));
  };

  let socket: net.Socket;
  try {
    socket = await guard.connectTcp(
      { address: target.address, port: 25, host: target.host },
      { timeoutMs: limits.connectMs, signal },
    );
  } catch (err) {
    if (err instanceof OutboundRefusedError) return end('not_allowed', err.message);
    if (err instanceof OutboundFetchError && err.kind === 'timeout') return end('connect_timeout', err.message);
    if (err instanceof OutboundFetchError && err.kind === 'aborted') return end('aborted');
    return end('unreachable', err instanceof Error ? err.message : String(err));
  }
  phase('connect');
  socket.on('error', () => {}); // errors surface through the reader's close
  let secure: tls.TLSSocket | null = null;
  const reader = new ReplyReader(socket, limits);
  try {
    let reply: Reply;
    try {
      reply = await reader.read(limits.bannerMs, signal);
    } catch (e) {
      return replyFailure(e, 'banner_timeout');
    }
    phase('banner');
    result.banner = (reply.lines[0] ?? '').slice(0, 200);
    if (reply.code !== 220) return end('greeting_rejected', `greeting ${reply.code}`);

    socket.write(`EHLO ${opts.ehloName}\r\n`);
    try {
      reply = await reader.read(limits.commandMs, signal);
    } catch (e) {
      return replyFailure(e, 'command_timeout');
    }
    phase('ehlo');
    if (reply.code !== 250) return end('ehlo_failed', `EHLO answered ${reply.code}`);
    result.ehloExtensions = reply.lines
      .slice(1)
      .map((l) => l.trim().slice(0, 80))
      .slice(0, 32);
    result.starttlsAdvertised = result.ehloExtensions.some((e) => /^STARTTLS\b/i.test(e));
    if (!result.starttlsAdvertised) {
      socket.write('QUIT\r\n');
      return end('no_starttls');
    }

    socket.write('STARTTLS\r\n');
    try {
      reply = await reader.read(limits.commandMs, signal);
    } catch (e) {
      return replyFailure(e, 'command_timeout');
    }
    phase('starttls');
    if (reply.code !== 220) {
      socket.write('QUIT\r\n');
      return end('starttls_refused', `STARTTLS answered ${reply.code}`);
    }
    // What came after the 220 is not TLS: the gate counts it and keeps it out of the handshake.
    const early = reader.unread();
    reader.detach();
    const gate = new TlsStartGate(socket, { maxBytes: limits.maxSessionBytes, early });
    try {
      // The widest protocol range, so an outdated server is reported rather than unreachable.
      secure = await upgradeTls(gate, target.host, {
        signal,
        timeoutMs: limits.tlsMs,
        tls: { rejectUnauthorized: false, minVersion: 'TLSv1', ciphers: 'DEFAULT:@SECLEVEL=0' },
      });
    } catch (err) {
      result.pipeliningBeforeTls = gate.plaintext;
      if (signal.aborted) return end('aborted');
      if (gate.overflowed) return end('protocol_violation', new PlaintextOverflow(limits.maxSessionBytes).message);
      return end('tls_failed', err instanceof Error ? err.message : String(err));
    }
    result.pipeliningBeforeTls = gate.plaintext;
    phase('tls');
    result.tls = handshakeFacts(secure, target.host);
    secure.on('error', () => {});
    // QUIT over TLS, wait briefly for 221; a server that ignores it is simply closed.
    const quitReader = new ReplyReader(secure, limits);
    secure.write('QUIT\r\n');
    await quitReader.read(limits.quitMs, signal).catch(() => null);
    quitReader.detach();
    return end('tls');
  } finally {
    reader.detach();
    secure?.destroy();
    socket.destroy();
  }
}

// ---- Implicit TLS on 465 ------------------------------------------------------------------------

export type ImplicitTlsState =
  | 'tls'
  | 'refused'
  | 'timeout'
  | 'tls_failed'
  | 'not_smtp'
  | 'unreachable'
  | 'not_allowed'
  | 'aborted';

export interface ImplicitTlsResult {
  address: string;
  /**
   * tls: handshake and a 220 banner over it; refused: nothing listens on 465; timeout: connect,
   * handshake or banner ran out of time; tls_failed: the handshake failed; not_smtp: TLS, then no
   * SMTP greeting; unreachable: another connection failure.
   */
  state: ImplicitTlsState;
  banner: string | null;
  tls: HandshakeFacts | null;
  detail: string | null;
}

const causeCode = (err: unknown): string | undefined => {
  for (let e: unknown = err, i = 0; e && typeof e === 'object' && i < 4; e = (e as { cause?: unknown }).cause, i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
};

/**
 * Implicit TLS on port 465 (RFC 8314 §3.3: the submissions port): a TLS handshake through the guard
 * (the widest protocol range, certificate reported, not rejected), the 220 banner over it, QUIT.
 * A fact beside the STARTTLS session, for a host that offers no STARTTLS: MTAs relaying mail use
 * port 25 only, so what 465 offers never changes the STARTTLS verdict. No EHLO, no mail.
 */
export async function implicitTlsProbe(
  guard: OutboundGuard,
  target: SessionTarget,
  opts: { limits: SmtpLimits; signal: AbortSignal },
): Promise<ImplicitTlsResult> {
  const { limits, signal } = opts;
  const result: ImplicitTlsResult = {
    address: target.address,
    state: 'aborted',
    banner: null,
    tls: null,
    detail: null,
  };
  const end = (state: ImplicitTlsState, detail: string | null = null) => {
    result.state = signal.aborted ? 'aborted' : state;
    result.detail = detail;
    return result;
  };
  let secure: tls.TLSSocket;
  try {
    secure = await guard.connectTls(
      { address: target.address, port: 465, host: target.host, servername: target.host },
      {
        timeoutMs: limits.connectMs + limits.tlsMs,
        signal,
        tls: { rejectUnauthorized: false, minVersion: 'TLSv1', ciphers: 'DEFAULT:@SECLEVEL=0' },
      },
    );
  } catch (err) {
    if (err instanceof OutboundRefusedError) return end('not_allowed', err.message);
    const message = err instanceof Error ? err.message : String(err);
    if (err instanceof OutboundFetchError && err.kind === 'timeout') return end('timeout', message);
    if (err instanceof OutboundFetchError && err.kind === 'aborted') return end('aborted');
    const code = causeCode(err) ?? '';
    if (code === 'ECONNREFUSED') return end('refused', message);
    if (/^ERR_SSL_|^ERR_TLS_|SSL|TLS/i.test(code) || /ssl|tls|handshake/i.test(message))
      return end('tls_failed', message);
    return end('unreachable', message);
  }
  secure.on('error', () => {});
  const reader = new ReplyReader(secure, limits);
  try {
    result.tls = handshakeFacts(secure, target.host);
    let reply: Reply;
    try {
      reply = await reader.read(limits.bannerMs, signal);
    } catch (e) {
      if (e instanceof ReplyError && e.kind === 'timeout') return end('timeout', `no banner: ${e.message}`);
      return end('not_smtp', e instanceof Error ? e.message : String(e));
    }
    result.banner = (reply.lines[0] ?? '').slice(0, 200);
    if (reply.code !== 220) return end('not_smtp', `greeting ${reply.code}`);
    secure.write('QUIT\r\n');
    await reader.read(limits.quitMs, signal).catch(() => null);
    return end('tls');
  } finally {
    reader.detach();
    secure.destroy();
  }
}
