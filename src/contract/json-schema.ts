// A zod schema as a JSON Schema component of the OpenAPI document (2020-12, the dialect OpenAPI
// 3.1 uses), without its own `$schema`: the one conversion every contract module and the OpenAPI
// generator use, so a setting changed here changes the whole document.
import { z } from 'zod';

export type Json = Record<string, unknown>;

export function jsonSchema(schema: z.ZodType, io: 'input' | 'output' = 'output'): Json {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Json;
  delete out.$schema;
  return out;
}
