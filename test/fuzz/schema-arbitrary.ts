// fast-check arbitraries from the request schemas of the service's own OpenAPI document (which
// is generated from the zod schemas), so the fuzzer's well-formed traffic follows the contract
// as it is, and its near-misses (a field dropped, a type swapped, an unknown field) sit right at
// the edges validation must hold.
import fc from 'fast-check';

type Schema = Record<string, unknown>;

export interface SchemaContext {
  /** components.schemas of the document, for $ref. */
  components: Record<string, Schema>;
}

const MAX_DEPTH = 6;

function resolve(schema: Schema, ctx: SchemaContext): Schema {
  const ref = schema.$ref;
  if (typeof ref === 'string' && ref.startsWith('#/components/schemas/')) {
    return ctx.components[ref.slice('#/components/schemas/'.length)] ?? {};
  }
  return schema;
}

/** Strings the products care about: domain names, URLs, MACs, phone numbers, IPs, and junk. */
export const interestingString = fc.oneof(
  fc.constantFrom(
    'lab.test',
    'www.lab.test',
    'example.com',
    'xn--bcher-kva.lab.test',
    'Bücher.lab.test',
    'a..b',
    '-a.test',
    `${'a'.repeat(64)}.test`,
    `${`${'a'.repeat(63)}.`.repeat(5)}test`,
    'http://lab.test/',
    'https://127.0.0.1/',
    'https://[::1]:8443/x',
    'ftp://lab.test/',
    'https://user:pw@lab.test/',
    'http://2130706433/',
    'http://0x7f.1/',
    '127.1',
    '::ffff:127.0.0.1',
    '10.0.0.0/8',
    'F4:F5:E8:12:34:56',
    'f4f5.e812.3456',
    '00-00-5E-00-53-01',
    '+1 202 555 0100',
    '0044 20 7946 0000',
    'DE',
    'us',
    'ZZ',
    '',
    ' ',
    '\u0000',
    '\u202e',
    '%00',
    '../../etc/passwd',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: hostile input on purpose (a log4j-style lookup string)
    '${jndi:ldap://127.0.0.1/a}',
    "'; DROP TABLE jobs;--",
    '<script>',
  ),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
);

export function arbitraryFor(schema: Schema, ctx: SchemaContext, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(schema, ctx);
  if (depth > MAX_DEPTH) return fc.constant(null);
  if ('const' in s) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  for (const key of ['anyOf', 'oneOf'] as const) {
    if (Array.isArray(s[key])) return fc.oneof(...(s[key] as Schema[]).map((x) => arbitraryFor(x, ctx, depth + 1)));
  }
  if (Array.isArray(s.allOf) && s.allOf.length > 0) return arbitraryFor(s.allOf[0] as Schema, ctx, depth + 1);
  const type = Array.isArray(s.type) ? (s.type as string[])[0] : (s.type as string | undefined);
  switch (type) {
    case 'string': {
      const max = typeof s.maxLength === 'number' ? Math.min(s.maxLength, 300) : 80;
      return fc.oneof(interestingString, fc.string({ maxLength: max }));
    }
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({
        min: typeof s.minimum === 'number' ? s.minimum - 2 : -10,
        max: typeof s.maximum === 'number' ? s.maximum + 2 : 20_000,
      });
    case 'number':
      return fc.oneof(fc.integer({ min: -10, max: 20_000 }), fc.double({ noNaN: true }));
    case 'array':
      return fc.array(arbitraryFor((s.items as Schema) ?? {}, ctx, depth + 1), { maxLength: 4 });
    case 'object': {
      const props = (s.properties ?? {}) as Record<string, Schema>;
      const required = new Set((s.required as string[] | undefined) ?? []);
      const entries = Object.entries(props).map(([k, v]) => [k, arbitraryFor(v, ctx, depth + 1)] as const);
      return fc.record(Object.fromEntries(entries), {
        requiredKeys: [...required].filter((k) => k in props) as never[],
      });
    }
    default:
      return anyJson;
  }
}

export const anyJson: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 3 });

/** A valid-shaped body, then (often) one near-miss: a field dropped, retyped, or an extra one. */
export function bodyFor(schema: Schema, ctx: SchemaContext): fc.Arbitrary<unknown> {
  const base = arbitraryFor(schema, ctx);
  return fc.tuple(base, fc.nat(4), fc.string({ maxLength: 12 }), anyJson).map(([body, mutation, key, value]) => {
    if (!body || typeof body !== 'object' || Array.isArray(body)) return body;
    const copy = { ...(body as Record<string, unknown>) };
    const keys = Object.keys(copy);
    switch (mutation) {
      case 1:
        if (keys.length) delete copy[keys[0]!];
        return copy;
      case 2:
        if (keys.length) copy[keys[0]!] = value;
        return copy;
      case 3:
        copy[key || 'extra'] = value;
        return copy;
      default:
        return copy;
    }
  });
}
