// The optional oui_extended lane: IEEE IAB (36-bit, 0050C2/40D855 parents) and CID (24-bit company
// IDs in the local ELI quadrant) assignments, which oui-data does not carry. Loaded from the CSVs
// the IEEE publishes (iab.csv, cid.csv: Registry,Assignment,Organization Name,Organization Address)
// in OUI_EXTRA_CSV_DIR. Absent files mean the lane is unconfigured, reported as such.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Assignment, AssignmentBlock } from './oui-registry.ts';

export interface ExtendedRegistry {
  entries: Map<string, Assignment>;
  files: string[];
  version: string;
}

/** RFC 4180 fields: quoted with doubled quotes, commas and newlines inside quotes. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      field = '';
      if (row.some((f) => f.length > 0)) rows.push(row);
      row = [];
    } else field += c;
  }
  row.push(field);
  if (row.some((f) => f.length > 0)) rows.push(row);
  return rows;
}

const BLOCKS: Record<string, { block: AssignmentBlock; len: number }> = {
  IAB: { block: 'IAB', len: 9 },
  CID: { block: 'CID', len: 6 },
  'MA-S': { block: 'MA-S', len: 9 },
  'MA-M': { block: 'MA-M', len: 7 },
  'MA-L': { block: 'MA-L', len: 6 },
};

export function loadExtendedRegistry(dir: string): ExtendedRegistry | null {
  let files: string[];
  try {
    files = readdirSync(dir)
      .filter((f) => f.toLowerCase().endsWith('.csv'))
      .sort();
  } catch {
    return null;
  }
  const entries = new Map<string, Assignment>();
  let newest = 0;
  for (const file of files) {
    const full = path.join(dir, file);
    newest = Math.max(newest, statSync(full).mtimeMs);
    for (const [registry, assignment, org, addr] of parseCsv(readFileSync(full, 'utf8'))) {
      const spec = registry ? BLOCKS[registry.trim()] : undefined;
      const prefix = assignment?.trim().toUpperCase();
      if (!spec || !prefix || !/^[0-9A-F]+$/.test(prefix) || prefix.length !== spec.len) continue;
      const organization = (org ?? '').trim();
      const flat = (addr ?? '').replace(/\s+/g, ' ').trim();
      const address = flat ? [flat] : [];
      entries.set(prefix, {
        block: spec.block,
        prefix,
        prefixBits: spec.len * 4,
        organization,
        address,
        // The IEEE CSVs end an address with the ISO country code; anything else is not guessed at.
        country: /\b([A-Z]{2})$/.exec(flat)?.[1] ?? null,
        isPrivate: /^private$/i.test(organization),
      });
    }
  }
  if (entries.size === 0) return null;
  return { entries, files, version: new Date(newest).toISOString().slice(0, 10) };
}

export function matchExtended(reg: ExtendedRegistry, hex12: string): Assignment | null {
  for (const len of [9, 7, 6]) {
    const hit = reg.entries.get(hex12.slice(0, len));
    if (hit) return hit;
  }
  return null;
}
