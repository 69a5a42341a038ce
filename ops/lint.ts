// `npm run lint` = `node ops/lint.ts [--write]`: Biome over the whole tree (lint rules and the
// formatter's verdict; --write applies safe fixes and formats), then the import rules of
// .dependency-cruiser.cjs (no circle, no import against the layers of ARCHITECTURE.md). npm test
// runs the import rules too (importRulesHold), right after the type-check.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');

/** The JS entry of a package's bin, run on this very node binary (the project's Node 24). */
function binEntry(pkg: string, bin: string): string {
  const dir = path.join(root, 'node_modules', pkg);
  const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
    bin?: string | Record<string, string>;
  };
  const rel = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin?.[bin];
  if (!rel) throw new Error(`${pkg}/package.json has no bin "${bin}" (run npm install?)`);
  return path.join(dir, rel);
}

function run(args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, args, { cwd: root, stdio: 'inherit' });
    c.on('error', reject);
    c.on('close', (code) => resolve(code ?? 1));
  });
}

/** The import rules: exit code 0 when they hold. */
export function importRulesHold(): Promise<number> {
  return run([binEntry('dependency-cruiser', 'depcruise'), '--config', '.dependency-cruiser.cjs', 'src', 'workers']);
}

export function biome(write: boolean): Promise<number> {
  return run([binEntry('@biomejs/biome', 'biome'), 'check', ...(write ? ['--write'] : []), '.']);
}

if (import.meta.main) {
  const write = process.argv.includes('--write');
  const codes = [await biome(write), await importRulesHold()];
  process.exit(codes.some((c) => c !== 0) ? 1 : 0);
}
