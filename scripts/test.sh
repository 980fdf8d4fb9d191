#!/usr/bin/env bash
# README command (2): install, build, and run the whole test suite with ctest.
# With no arguments, runs everything but the `slow` label; arguments replace that filter and go to
# ctest, e.g. `bash scripts/test.sh -L slow` or `bash scripts/test.sh -L conformance`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${QDQRT_BUILD_DIR:-$root/build}"
bash "$root/scripts/build.sh"
cd "$build_dir"
if (($#)); then filter=("$@"); else filter=(-LE slow); fi
ctest --output-on-failure -j"$(nproc)" "${filter[@]}"
