// When the web check's CORS preflight starts (src/products/web/collect-evidence.ts): as soon as the
// primary chain is known, not after both chains. The guard here is a stand-in for the outbound
// guard's one method the collector calls, with the timing of each request under the test's
// control (the lab answers on loopback at once, so it cannot show an order); what it answers is
// the shape the real guard returns.
import { describe, expect, it } from 'vitest';
import type { HopRecord } from '../../src/net/outbound-errors.ts';
import type { OutboundGuard } from '../../src/net/outbound-guard.ts';
import { collectWebEvidence } from '../../src/products/web/collect-evidence.ts';

interface Pending {
  url: string;
  method: string;
  answer(): void;
  fail(): void;
}

/** Every request waits until the test answers it; `log` records starts and answers in order. */
function heldGuard(log: string[], pending: Pending[]): OutboundGuard {
  const fetch = (url: string | URL, opts?: { method?: string }) =>
    new Promise((resolve, reject) => {
      const u = String(url);
      const method = opts?.method ?? 'GET';
      log.push(`start ${method} ${u}`);
      const hop: HopRecord = {
        url: u,
        status: 200,
        location: null,
        next: null,
        schemeChange: null,
        hostChange: false,
        hsts: null,
        headers: { 'content-type': 'text/html' },
      } as unknown as HopRecord;
      pending.push({
        url: u,
        method,
        answer: () => {
          log.push(`answer ${method} ${u}`);
          resolve({
            status: 200,
            headers: { 'content-type': 'text/html' },
            url: u,
            redirects: 0,
            body: Buffer.from('<html></html>'),
            truncated: false,
            hops: [hop],
            tlsVerified: u.startsWith('https:') ? true : null,
          });
        },
        fail: () => {
          log.push(`fail ${method} ${u}`);
          reject(new Error('connection refused'));
        },
      });
    });
  return { allow: [], resolve: async () => [], vet: () => {}, fetch } as unknown as OutboundGuard;
}

const tick = () => new Promise((r) => setImmediate(r));

/** Starts collecting the evidence of `url` with every request held: the log, the held requests, the result. */
function collect(url: string) {
  const log: string[] = [];
  const pending: Pending[] = [];
  const done = collectWebEvidence(new URL(url), heldGuard(log, pending), {
    fetchTimeoutMs: 5000,
    signal: new AbortController().signal,
  });
  return { log, pending, done };
}
const find = (pending: Pending[], method: string, scheme: string) =>
  pending.find((p) => p.method === method && p.url.startsWith(scheme));

describe('the web check collects its evidence', () => {
  it('starts the preflight when the https chain answers, while the http chain is still out', async () => {
    const { log, pending, done } = collect('https://site.test/');
    await tick();
    find(pending, 'GET', 'https:')!.answer();
    await tick();
    // The preflight is out before the http chain has answered.
    expect(find(pending, 'OPTIONS', 'https:'), log.join('\n')).toBeDefined();
    expect(log.some((l) => l.startsWith('answer GET http:'))).toBe(false);
    find(pending, 'OPTIONS', 'https:')!.answer();
    find(pending, 'GET', 'http:')!.answer();
    const ev = await done;
    expect(ev.primary).toBe('https');
    expect(ev.preflight?.url).toBe('https://site.test/');
    expect(ev.http.outcome).toBe('response');
  });

  it('waits for the http chain when https did not answer, and preflights the http URL', async () => {
    const { pending, done } = collect('http://site.test/');
    await tick();
    find(pending, 'GET', 'https:')!.fail();
    await tick();
    expect(pending.filter((p) => p.method === 'OPTIONS')).toEqual([]);
    find(pending, 'GET', 'http:')!.answer();
    await tick();
    find(pending, 'OPTIONS', 'http:')!.answer();
    const ev = await done;
    expect(ev.primary).toBe('http');
    expect(ev.https.outcome).toBe('failed');
    expect(ev.preflight?.url).toBe('http://site.test/');
  });

  it('sends no preflight when neither chain answered', async () => {
    const { log, pending, done } = collect('https://site.test/');
    await tick();
    find(pending, 'GET', 'http:')!.fail();
    find(pending, 'GET', 'https:')!.fail();
    const ev = await done;
    expect(ev.primary).toBeNull();
    expect(ev.preflight).toBeNull();
    expect(log.filter((l) => l.includes('OPTIONS'))).toEqual([]);
  });
});
