// The service's log destination (src/log.ts): lines batched in front of sonic-boom must still
// reach the file whole, in order, on a flush and when the process exits; the access line written
// without pino's serializer must be the line pino itself would write.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { accessLogger, createLogger } from '../../src/log.ts';

const root = path.resolve(import.meta.dirname, '../..');
const scratch = () => mkdtempSync(path.join(os.tmpdir(), 'lss-log-'));
const records = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('the log destination', () => {
  it('writes every line, in order, once flushed (also lines of more than one batch)', async () => {
    const file = path.join(scratch(), 'out.log');
    const log = createLogger('info', { role: 'test' }, { destination: file });
    const access = accessLogger(log);
    for (let i = 0; i < 500; i++) {
      if (i % 2) log.info({ i, apiKey: 'lsk_secret' }, 'line');
      else
        access({ requestId: `req_${i}`, method: 'POST', route: '/v2/x', status: i % 10 === 0 ? 503 : 200, ms: i / 7 });
    }
    await new Promise<void>((resolve) => log.flush(() => resolve()));
    await new Promise((r) => setTimeout(r, 100));
    const lines = records(file);
    expect(lines).toHaveLength(500);
    lines.forEach((r, i) => {
      if (i % 2) expect(r).toMatchObject({ i, msg: 'line', role: 'test', apiKey: '[redacted]' });
      else expect(r).toMatchObject({ requestId: `req_${i}`, role: 'test' });
    });
  });

  it('writes what is still batched when the process exits', () => {
    const file = path.join(scratch(), 'exit.log');
    const probe = `
      const { openSync } = await import('node:fs');
      const { createLogger, accessLogger } = await import('./src/log.ts');
      // A descriptor, as stdout is: open at once (a path is opened asynchronously).
      const log = createLogger('info', {}, { destination: openSync(${JSON.stringify(file)}, 'w') });
      const access = accessLogger(log);
      for (let i = 0; i < 3; i++) access({ requestId: 'req_' + i, method: 'POST', route: '/r', status: 200, ms: 1 });
      log.info('last');
      process.exit(0);
    `;
    execFileSync(process.execPath, ['--input-type=module', '-e', probe], { cwd: root });
    expect(records(file).map((r) => r.requestId ?? r.msg)).toEqual(['req_0', 'req_1', 'req_2', 'last']);
  });

  it('writes the access line as pino would, 5xx as a warning, any request id as valid JSON', async () => {
    const dir = scratch();
    const fields = [
      { requestId: 'req_01', method: 'POST', route: '/v2/lookups/mac', status: 200, ms: 1.234 },
      { requestId: 'a"b\\c{}', method: 'GET', route: 'unmatched', status: 503, ms: 0.5 },
    ];
    const ours = path.join(dir, 'ours.log');
    const theirs = path.join(dir, 'theirs.log');
    const a = createLogger('info', { role: 'web' }, { destination: ours, sync: true });
    const b = createLogger('info', { role: 'web' }, { destination: theirs, sync: true });
    const access = accessLogger(a);
    for (const f of fields) {
      access(f);
      if (f.status >= 500) b.warn(f, 'request failed');
      else b.info(f, 'request');
    }
    const strip = (r: Record<string, unknown>) => {
      expect(r.time).toEqual(expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/));
      const { time: _time, ...rest } = r;
      return rest;
    };
    expect(records(ours).map(strip)).toEqual(records(theirs).map(strip));
    expect(records(ours).map((r) => r.level)).toEqual([pino.levels.values.info, pino.levels.values.warn]);
    // Below the logger's level: nothing.
    const quiet = path.join(dir, 'quiet.log');
    accessLogger(createLogger('error', {}, { destination: quiet, sync: true }))(fields[0]!);
    expect(readFileSync(quiet, 'utf8')).toBe('');
  });
});
