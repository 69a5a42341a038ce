// The import rules of ARCHITECTURE.md ("Layers"), checked by `npm run lint` and by `npm test`:
// no import circle, no import from a lower layer to a higher one, and the few rules about who may
// use what (products never import Express, routes never write SQL, lanes never import src/http).
const layers = [
  // resilience/ (the one circuit breaker) sits at the bottom beside the vocabulary: the protocols
  // (dns/, rdap/), the products and the platform all use it, and it imports nothing of ours.
  ['vocabulary', '^src/(contract|config|resilience)/'],
  ['protocols', '^src/(dns|net|rdap|smtp)/'],
  ['platform', '^src/(db|redis|queue|credits|idempotency|ratelimit|auth)/|^src/(log|metrics|memory-reclaim)\\.ts$'],
  ['products', '^src/products/'],
  ['jobs', '^src/jobs/'],
  ['edges', '^src/(http|routes|admin|client)/|^src/(app|server|bootstrap)\\.ts$|^workers/'],
];

const upward = layers.flatMap(([name, from], i) =>
  layers.slice(i + 1).map(([higher, to]) => ({
    name: `${name}-imports-${higher}`,
    comment: `the ${name} layer may not import the ${higher} layer (ARCHITECTURE.md, Layers)`,
    severity: 'error',
    from: { path: from },
    to: { path: to },
  })),
);

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'modules that import each other in a loop',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...upward,
    {
      name: 'every-module-in-a-layer',
      comment: 'a module under src/ or workers/ that no layer claims: add it to a layer above',
      severity: 'error',
      from: { path: '^(src|workers)/', pathNot: layers.map(([, p]) => p).join('|') },
      to: {},
    },
    {
      name: 'products-never-import-express',
      comment: 'a product module receives a validated input and a context, never a request',
      severity: 'error',
      from: { path: '^src/products/' },
      to: { path: '^node_modules/(express|@types/express)/' },
    },
    {
      name: 'routes-never-write-sql',
      comment: 'SQL lives in repositories (src/jobs, src/auth, src/idempotency, src/credits)',
      severity: 'error',
      from: { path: '^src/(routes|http)/' },
      to: { path: '^node_modules/(kysely|mysql2)/' },
    },
    {
      name: 'lanes-never-import-http',
      comment: 'the lane and orchestrator entries share no code with the API edge',
      severity: 'error',
      from: { path: '^workers/' },
      to: { path: '^src/(http|routes)/' },
    },
  ],
  options: {
    // TypeScript 7 has no compiler API yet; swc parses the sources, type-only imports included.
    parser: 'swc',
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
  },
};
