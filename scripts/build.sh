#!/usr/bin/env bash
# Installs dependencies (quietly, if missing) and builds qdqrt into build/ (Release by default).
# Extra arguments go to cmake's configure step, e.g. -DQDQRT_SANITIZE=ON.
# --cli (first argument): the first run's build, for scripts/main_job.sh: only the CLI's packages
# (install_deps.sh --cli) and only the `qdqrt` target, configured without tests, benchmarks and
# the Python module. A later plain build.sh turns them back on and reuses what was compiled.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${QDQRT_BUILD_DIR:-$root/build}"
if [[ "${1:-}" == "--cli" ]]; then
  shift
  bash "$root/scripts/install_deps.sh" --cli
  cmake -S "$root" -B "$build_dir" -G Ninja -DQDQRT_BUILD_TESTS=OFF -DQDQRT_BUILD_BENCH=OFF -DQDQRT_BUILD_PYTHON=OFF \
    "$@" >/dev/null
  cmake --build "$build_dir" --target qdqrt -- -j"$(nproc)"
  exit 0
fi
bash "$root/scripts/install_deps.sh"
cmake -S "$root" -B "$build_dir" -G Ninja -DQDQRT_BUILD_TESTS=ON -DQDQRT_BUILD_BENCH=ON -DQDQRT_BUILD_PYTHON=ON \
  "$@" >/dev/null
cmake --build "$build_dir" -- -j"$(nproc)"
