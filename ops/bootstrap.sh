#!/bin/sh
# Entry of `npm run up` / `npm test` on any machine: install the locked dependencies when they are
# missing or stale (this also brings the Node 24 binary of the `node` devDependency), then run the
# given script on that Node, whatever Node the machine carries.
set -e
cd "$(dirname "$0")/.."
if [ ! -x node_modules/.bin/node ] || [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "[bootstrap] installing dependencies (npm ci)" >&2
  npm ci --no-audit --no-fund >&2
fi
exec node_modules/.bin/node "$@"
