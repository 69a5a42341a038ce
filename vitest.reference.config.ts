// The Observatory reference comparison (npm run test:observatory): not part of `npm test`, because
// @mdn/mdn-http-observatory cannot be installed from the lockfile offline (see docs/products/web.md).
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/reference/**/*.ref.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
