// .env.example documents every variable of the config schema, and nothing else (CONTRACT §12).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/config.ts';
import { queueSettingsSchema } from '../../src/queue/queue-settings.ts';

const file = path.resolve(import.meta.dirname, '../../.env.example');

/** `NAME=value` or `# NAME=value` lines, in order; prose comments never start with `NAME=`. */
function variables(text: string): Array<{ name: string; line: number }> {
  const out: Array<{ name: string; line: number }> = [];
  text.split('\n').forEach((l, i) => {
    const m = /^(?:#\s?)?([A-Z][A-Z0-9_]*)=/.exec(l);
    if (m) out.push({ name: m[1]!, line: i });
  });
  return out;
}

describe('.env.example', () => {
  const text = readFileSync(file, 'utf8');
  const lines = text.split('\n');
  const listed = variables(text);
  const names = listed.map((v) => v.name);
  // The worker roles' own settings (src/queue/queue-settings.ts) are documented in the same file.
  const schemaKeys = [...Object.keys(configSchema.shape), ...Object.keys(queueSettingsSchema.shape)];

  it('lists every variable of configSchema', () => {
    expect(schemaKeys.filter((k) => !names.includes(k))).toEqual([]);
  });

  it('lists no variable that configSchema does not read', () => {
    expect(names.filter((n) => !schemaKeys.includes(n))).toEqual([]);
  });

  it('lists each variable once', () => {
    expect(names.filter((n, i) => names.indexOf(n) !== i)).toEqual([]);
  });

  it('describes each variable in the comment just above it', () => {
    const undocumented = listed.filter(({ line }) => {
      const above = lines[line - 1] ?? '';
      return !/^#\s+\S/.test(above) || /^#\s?[A-Z][A-Z0-9_]*=/.test(above);
    });
    expect(undocumented.map((v) => v.name)).toEqual([]);
  });
});
