// Failures of this process are not the target's facts (src/net/local-failures.ts): a connection the
// kernel would not even open (EMFILE) must not come back from a check as "the port is closed" or
// "the chain failed". The child process runs under `ulimit -n 256` and takes every descriptor it
// has left, so the EMFILE is the kernel's own; its connections go to 127.0.0.1 only.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { collectLocalFailures, localErrno, noteIfLocal } from '../../src/net/local-failures.ts';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '..', '..');
const errno = (code: string) => Object.assign(new Error(code), { code });

describe('local errno codes', () => {
  it("are found on the error or a cause up to four deep; a peer's refusal or reset is not one", () => {
    expect(localErrno(errno('EMFILE'))).toBe('EMFILE');
    const wrapped = new Error('fetch failed', { cause: new Error('connect', { cause: errno('ENFILE') }) });
    expect(localErrno(wrapped)).toBe('ENFILE');
    // EADDRNOTAVAIL too: a host without working IPv6 may give it for a target's IPv6 address.
    for (const peer of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'UND_ERR_SOCKET', 'EADDRNOTAVAIL'])
      expect(localErrno(errno(peer))).toBeNull();
    expect(localErrno('EMFILE')).toBeNull();
    expect(localErrno(null)).toBeNull();
  });

  it('are noted in the work they happened in only, whether it returns or throws', async () => {
    const [noted, clean, thrown] = await Promise.all([
      collectLocalFailures(async () => {
        await new Promise((r) => setTimeout(r, 5));
        noteIfLocal(errno('ENFILE'));
        return 1;
      }),
      collectLocalFailures(async () => {
        await new Promise((r) => setTimeout(r, 10));
        noteIfLocal(errno('ECONNREFUSED'));
        return 2;
      }),
      collectLocalFailures(async () => {
        noteIfLocal(errno('ENOBUFS'));
        throw new Error('the check gave up');
      }),
    ]);
    expect(noted).toEqual({ ok: true, value: 1, codes: ['ENFILE'] });
    expect(clean).toEqual({ ok: true, value: 2, codes: [] });
    expect(thrown.ok).toBe(false);
    expect(thrown.codes).toEqual(['ENOBUFS']);
    // Outside any collected work, noting is harmless.
    expect(noteIfLocal(errno('EMFILE'))).toBe('EMFILE');
  });
});

describe('a check that met EMFILE (a real one, in a child under ulimit -n 256)', () => {
  it('is no outcome: a port check says neither open nor closed; before and after, it says what it found', async () => {
    const { stdout } = await run(
      'sh',
      ['-c', 'ulimit -n 256 && exec "$0" "$@"', process.execPath, 'test/helpers/emfile-child.ts'],
      { cwd: root, env: { ...process.env, NODE_OPTIONS: '' }, timeout: 30_000 },
    );
    const r = JSON.parse(stdout.trim().split('\n').pop()!);
    // The port check's own verdicts, without the shortage: the open port open, the closed one closed.
    expect(r.before.open).toEqual({ kind: 'done', projection: expect.objectContaining({ state: 'open' }) });
    expect(r.before.closed).toEqual({ kind: 'done', projection: expect.objectContaining({ state: 'closed' }) });
    // With no descriptor left, the check caught the failure and said "closed"; the lane does not
    // take that as the port's fact.
    expect(r.during.descriptorsTaken).toBeGreaterThan(100);
    expect(r.during.check).toEqual({ kind: 'local_failure', codes: ['EMFILE'] });
    // The guard's HTTP path notes it the same way.
    expect(r.during.fetch).toEqual({ ok: false, codes: ['EMFILE'], error: 'OutboundFetchError' });
    expect(r.after.open).toEqual({ kind: 'done', projection: expect.objectContaining({ state: 'open' }) });
  });
});
