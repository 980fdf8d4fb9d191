#!/usr/bin/env bash
# Installs the Node clients qdqrt serve's tests and bench/serve use (@grpc/grpc-js,
# @grpc/proto-loader, autocannon) into tests/server/node_modules from its package-lock.json.
# Idempotent and quiet when the pinned versions are already there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
clients_dir="$root/tests/server"
installed="$(node -e "
  const wanted = require('$clients_dir/package.json').dependencies;
  let ok = true;
  for (const [name, version] of Object.entries(wanted)) {
    try { ok = ok && require('$clients_dir/node_modules/' + name + '/package.json').version === version; }
    catch (error) { ok = false; }
  }
  console.log(ok ? 'yes' : 'no');")"
[ "$installed" = yes ] && exit 0
echo "install_serve_clients: installing the serve test clients into $clients_dir/node_modules" >&2
cd "$clients_dir"
npm ci --no-audit --no-fund --loglevel=error >/dev/null
