// The Procfile, read the way `npm run up` and the benchmarks start its roles: a `node …` command
// runs on this very Node (the project's Node 24, whatever `node` is on PATH) with the Procfile's
// own Node options (the heap sizing of docs/operations.md); any other command runs under /bin/sh.
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface ProcfileRole {
  name: string;
  command: string;
  file: string;
  args: string[];
  /** The entry file a `node <script>` command runs; null for other commands. */
  script: string | null;
}

export function parseProcfile(text: string, nodeBinary: string = process.execPath): ProcfileRole[] {
  const roles: ProcfileRole[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^([A-Za-z0-9_-]+):\s*(\S.*)$/.exec(line);
    if (!m) throw new Error(`Procfile: cannot parse line ${JSON.stringify(raw)}`);
    const command = m[2]!;
    const [bin, ...rest] = command.split(/\s+/);
    if (bin === 'node') {
      const script = rest.find((a) => !a.startsWith('-')) ?? null;
      roles.push({ name: m[1]!, command, file: nodeBinary, args: rest, script });
    } else {
      roles.push({ name: m[1]!, command, file: '/bin/sh', args: ['-c', command], script: null });
    }
  }
  return roles;
}

export function readProcfile(root: string): ProcfileRole[] {
  return parseProcfile(readFileSync(path.join(root, 'Procfile'), 'utf8'));
}
