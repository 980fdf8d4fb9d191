#!/usr/bin/env bash
# Installs dependencies (quietly, if missing) and builds qdqrt into build/ (Release by default).
# Extra arguments go to cmake's configure step, e.g. -DQDQRT_SANITIZE=ON.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${QDQRT_BUILD_DIR:-$root/build}"
bash "$root/scripts/install_deps.sh"
cmake -S "$root" -B "$build_dir" -G Ninja "$@" >/dev/null
cmake --build "$build_dir" -- -j"$(nproc)"
