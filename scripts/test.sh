#!/usr/bin/env bash
# README command (2): install, build, and run the whole test suite with ctest.
# ctest arguments may be appended, e.g. `bash scripts/test.sh -L conformance`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${QDQRT_BUILD_DIR:-$root/build}"
bash "$root/scripts/build.sh"
cd "$build_dir"
ctest --output-on-failure -j"$(nproc)" -LE slow "$@"
