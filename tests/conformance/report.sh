#!/usr/bin/env bash
# Runs the ONNX node conformance suite and writes docs/conformance.md.
# Usage: tests/conformance/report.sh [build_dir]   (default: build/)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build_dir="${1:-$root/build}"
QDQRT_CONFORMANCE_REPORT="$root/docs/conformance.md" "$build_dir/tests/conformance/qdqrt_conformance_tests" \
  --gtest_brief=1 >/dev/null || true
echo "wrote $root/docs/conformance.md"
head -n 12 "$root/docs/conformance.md" | grep -E '^\*\*' || true
