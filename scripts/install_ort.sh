#!/usr/bin/env bash
# Installs ONNX Runtime for Node.js (the oracle and performance peer) into tools/ort/node_modules.
# Idempotent and quiet when the pinned version is already there.
# ONNXRUNTIME_NODE_INSTALL=skip: the package's install script would otherwise try to download GPU
# binaries from a host this machine cannot reach; the CPU library ships inside the package.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ort_dir="$root/tools/ort"
wanted_version="$(node -p "require('$ort_dir/package.json').dependencies['onnxruntime-node']")"
installed_manifest="$ort_dir/node_modules/onnxruntime-node/package.json"
if [ -f "$installed_manifest" ] &&
   [ "$(node -p "require('$installed_manifest').version")" = "$wanted_version" ]; then
  exit 0
fi
echo "install_ort: installing onnxruntime-node $wanted_version into $ort_dir/node_modules" >&2
cd "$ort_dir"
ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error >/dev/null
