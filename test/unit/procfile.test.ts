// The Procfile as `npm run up` and bench:scan read it: node roles run on this Node with their own
// options, other commands under /bin/sh, and every long-running role carries the heap sizing that
// docs/operations.md gives (the 256 MB per process bench:scan measures, the RSS at rest
// bench:rss measures) and Node's compile cache.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseProcfile, readProcfile } from '../../ops/procfile.ts';

const root = path.resolve(import.meta.dirname, '../..');

describe('Procfile', () => {
  it('parses node roles with their options and script, and other commands as shell', () => {
    const roles = parseProcfile(
      '# c\nweb: node --max-old-space-size=64 src/server.ts\n\nx: echo hi there\nlane-a: node workers/lane.ts a\n',
      '/n',
    );
    expect(roles).toEqual([
      {
        name: 'web',
        command: 'node --max-old-space-size=64 src/server.ts',
        file: '/n',
        args: ['--max-old-space-size=64', 'src/server.ts'],
        script: 'src/server.ts',
      },
      { name: 'x', command: 'echo hi there', file: '/bin/sh', args: ['-c', 'echo hi there'], script: null },
      {
        name: 'lane-a',
        command: 'node workers/lane.ts a',
        file: '/n',
        args: ['workers/lane.ts', 'a'],
        script: 'workers/lane.ts',
      },
    ]);
    expect(() => parseProcfile('not a role line')).toThrow(/cannot parse/);
  });

  it('gives every long-running role the documented heap sizing and an existing entry file', () => {
    const roles = readProcfile(root);
    const longRunning = roles.filter((r) => r.name !== 'release');
    expect(longRunning.map((r) => r.name)).toEqual(
      expect.arrayContaining([
        'web',
        'orchestrator',
        'lane-dns',
        'lane-mail',
        'lane-web',
        'lane-domain',
        'lane-active',
      ]),
    );
    for (const r of longRunning) {
      // The web role's young generation is larger: admission allocates per request (operations.md).
      const semi = r.name === 'web' ? '--max-semi-space-size=16' : '--max-semi-space-size=4';
      expect(r.args, r.name).toEqual(expect.arrayContaining([semi, '--max-old-space-size=128']));
      // ...and fixed at that size: the web workers' reclaim (src/memory-reclaim.ts) would otherwise
      // shrink it to its minimum each time, and its regrowth over the next minute or two is a swing
      // of about 28 MB a worker that no burst left behind (docs/operations.md, "Memory after a burst").
      if (r.name === 'web') expect(r.args).toContain('--min-semi-space-size=16');
      expect(existsSync(path.join(root, r.script!)), r.name).toBe(true);
      // One V8 background thread per process: the web workers take a core each, and it keeps the
      // other roles within their RSS goal at rest (docs/operations.md).
      expect(r.args, r.name).toContain('--v8-pool-size=1');
      // Node's compile cache, before the first module: no type stripper in a warm start.
      expect(r.args[0], r.name).toBe('--import=./workers/compile-cache.mjs');
    }
    expect(existsSync(path.join(root, 'workers/compile-cache.mjs'))).toBe(true);
  });
});
