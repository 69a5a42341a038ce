// One DNS question over a TCP connection the caller opened (RFC 1035 §4.2.2 framing, RFC 7766):
// how a check asks an authoritative server directly. The caller connects through the outbound
// guard (the server's address vetted like any other target), so this module never opens a socket
// and only ever talks to what the guard allowed. The reply is read within a deadline and the
// 65,535 bytes the length prefix allows (./tcp-frames.ts: each byte copied once, however it is cut), and judged like the stub resolver's (same question, same
// presentation), so the present / absent / indeterminate rule applies to it unchanged.
import type net from 'node:net';
import { randomInt } from 'node:crypto';
import type { QueryResult, RecordType } from './types.ts';
import { DnsFrameReader, frameMessage } from './tcp-frames.ts';
import { acceptReply, answerRecords, buildQuery, outcomeOf, rcodeName, replyRcode } from './wire.ts';

/** Asks (name, type) on `socket`, which it does not close. Never rejects: failures are outcomes. */
export function queryOverStream(
  socket: net.Socket,
  name: string,
  type: RecordType,
  opts: { timeoutMs: number; signal?: AbortSignal; recursionDesired?: boolean },
): Promise<QueryResult> {
  const started = performance.now();
  const id = randomInt(0, 0x10000);
  const query = buildQuery(id, name, type, opts.recursionDesired === false ? { recursionDesired: false } : {});
  const result = (outcome: QueryResult['outcome'], extra: Partial<QueryResult> = {}): QueryResult => ({
    name,
    type,
    outcome,
    rcode: null,
    answers: [],
    flags: { aa: false, ad: false, tc: false, ra: false },
    transport: 'tcp',
    durationMs: Math.round((performance.now() - started) * 1000) / 1000,
    ...extra,
  });
  return new Promise((resolve) => {
    const frames = new DnsFrameReader();
    let settled = false;
    const settle = (r: QueryResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
      resolve(r);
    };
    const timer = setTimeout(() => settle(result('timeout')), opts.timeoutMs);
    const onAbort = () => settle(result('error'));
    const onError = () => settle(result('error'));
    const onClose = () => settle(result('error'));
    const onData = (chunk: Buffer) => {
      const [message] = frames.push(chunk);
      // A header is 12 bytes: a shorter length fails as soon as it is announced.
      const length = message ? message.length : frames.pendingLength;
      if (length !== null && length < 12) return settle(result('error'));
      if (!message) return;
      const reply = acceptReply(message, id, name, type);
      if (!reply) return settle(result('error'));
      const rcode = replyRcode(reply);
      const answers = answerRecords(reply, name, type);
      settle(
        result(outcomeOf(rcode, answers), {
          rcode: rcodeName(rcode),
          answers,
          flags: { aa: reply.flag_aa, ad: reply.flag_ad, tc: reply.flag_tc, ra: reply.flag_ra },
        }),
      );
    };
    if (opts.signal?.aborted) return onAbort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    socket.on('data', onData);
    socket.on('error', onError);
    socket.on('close', onClose);
    socket.write(frameMessage(query));
  });
}
