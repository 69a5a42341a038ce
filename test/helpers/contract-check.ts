// Checks a response against the generated OpenAPI document: the documented status for that
// route, the schema of its body, and for errors that the code is one the route documents.
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { Response } from 'supertest';
import { buildOpenApi } from '../../src/routes/openapi/openapi.ts';
import { products } from '../../src/products/registry.ts';

type Json = Record<string, any>;

const doc = buildOpenApi(products) as Json;
const ajv = new Ajv2020({ strict: false, allErrors: true });
for (const [name, schema] of Object.entries(doc.components.schemas as Json)) {
  ajv.addSchema(schema as object, `#/components/schemas/${name}`);
}

/** Routes outside the document (health) and unknown routes are checked as error envelopes only. */
const templates = Object.keys(doc.paths).map((t) => ({
  template: t,
  re: new RegExp(`^${t.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')}$`),
}));

function docPath(path: string): string | undefined {
  const bare = path.split('?')[0]!;
  if (doc.paths[bare]) return bare;
  return templates.find((t) => t.re.test(bare))?.template;
}

export function assertMatchesContract(method: string, path: string, res: Response): void {
  const template = docPath(path);
  const op = template ? doc.paths[template]?.[method] : undefined;
  const status = String(res.status);
  if (!op) {
    if (res.status >= 400) validate('#/components/schemas/ErrorEnvelope', res.body, `${method} ${path} ${status}`);
    return;
  }
  const spec = op.responses[status];
  if (!spec)
    throw new Error(
      `${method.toUpperCase()} ${path} answered ${status}, which the OpenAPI document does not list (body: ${JSON.stringify(res.body)})`,
    );
  const ref = spec.content?.['application/json']?.schema?.$ref as string | undefined;
  if (ref) validate(ref, res.body, `${method} ${path} ${status}`);
  if (res.status >= 400) {
    const codes: string[] = spec['x-error-codes'] ?? [];
    if (!codes.includes(res.body?.error?.code)) {
      throw new Error(
        `${method.toUpperCase()} ${path} answered ${status} ${res.body?.error?.code}, not documented for this route (${codes.join(', ')})`,
      );
    }
  }
}

function validate(ref: string, body: unknown, where: string): void {
  const v = ajv.getSchema(ref);
  if (!v) throw new Error(`no schema ${ref}`);
  if (!v(body))
    throw new Error(`${where}: body does not match ${ref}: ${ajv.errorsText(v.errors)}\n${JSON.stringify(body)}`);
}

/** Checks a body against one named component schema of the OpenAPI document. */
export function assertMatchesSchema(component: string, body: unknown): void {
  validate(`#/components/schemas/${component}`, body, component);
}
