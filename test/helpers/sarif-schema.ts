// SARIF checks for the tests: the OASIS 2.1.0 schema (test/schemas/, source noted there) in Ajv,
// and Microsoft's SARIF validator (@microsoft/sarif-multitool, a devDependency: a self-contained
// .NET binary per platform) with the schema rules and GitHub code scanning's ingestion rules.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';

const schemaFile = new URL('../schemas/sarif-schema-2.1.0.json', import.meta.url);

let validator: ReturnType<Ajv['compile']> | undefined;

/** Errors against the OASIS schema, [] when the log is valid. */
export function sarifSchemaErrors(log: unknown): string[] {
  if (!validator) {
    // Draft-04 names its root identifier `id`; Ajv (draft-07 by default) reads `$id`. The schema
    // uses nothing else draft-04 has and draft-07 changed (no boolean exclusiveMinimum).
    const { $schema: _draft, id, ...rest } = JSON.parse(readFileSync(schemaFile, 'utf8')) as Record<string, unknown>;
    const ajv = new Ajv({ allErrors: true, strict: false });
    (addFormats as unknown as (a: Ajv) => void)(ajv);
    validator = ajv.compile({ $id: id as string, ...rest });
  }
  if (validator(log)) return [];
  return (validator.errors ?? []).map((e) => `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`);
}

/** The platform binary the npm package installed (its bin.js runs it through a shell, which splits "Sarif;Gh"). */
export function multitoolBinary(): string {
  const require = createRequire(import.meta.url);
  return require.resolve(
    `@microsoft/sarif-multitool-${process.platform === 'win32' ? 'win32' : process.platform}/Sarif.Multitool`,
  );
}

export interface MultitoolResult {
  exitCode: number;
  /** Results the validator reported at error level (rule id and message). */
  errors: string[];
  warnings: string[];
  output: string;
}

/** `Sarif.Multitool validate --rule-kind "Sarif;Gh"` on this log. */
export async function multitoolValidate(log: string): Promise<MultitoolResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lss-sarif-'));
  const input = path.join(dir, 'export.sarif');
  const output = path.join(dir, 'validation.sarif');
  writeFileSync(input, log);
  const { code, text } = await new Promise<{ code: number; text: string }>((resolve) => {
    execFile(
      multitoolBinary(),
      ['validate', '--rule-kind', 'Sarif;Gh', '--output', output, input],
      // The .NET runtime needs no ICU for this; invariant mode keeps it off the system's libicu.
      { timeout: 120_000, env: { ...process.env, DOTNET_SYSTEM_GLOBALIZATION_INVARIANT: '1' }, maxBuffer: 16 << 20 },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, text: `${stdout}${stderr}` }),
    );
  });
  const errors: string[] = [];
  const warnings: string[] = [];
  try {
    const report = JSON.parse(readFileSync(output, 'utf8')) as {
      runs: Array<{
        results?: Array<{
          ruleId: string;
          level?: string;
          message: { text?: string; id?: string; arguments?: string[] };
        }>;
      }>;
    };
    for (const r of report.runs[0]?.results ?? []) {
      const line = `${r.ruleId}: ${r.message.text ?? `${r.message.id} ${JSON.stringify(r.message.arguments ?? [])}`}`;
      (r.level === 'error' ? errors : warnings).push(line);
    }
  } catch {
    errors.push(`no validation log: ${text.slice(-2000)}`);
  }
  return { exitCode: code, errors, warnings, output: text };
}
