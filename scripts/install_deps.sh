#!/usr/bin/env bash
# Installs every Debian package qdqrt needs to build, test and benchmark.
# Idempotent and quiet when everything is already there.
# --cli: only what building the `qdqrt` CLI and running scripts/main_job.sh need (no test, bench,
# Python-module or model-export packages, no ONNX Runtime or Node clients): the first run's part.
set -euo pipefail
cli_only=false
if [[ "${1:-}" == "--cli" ]]; then cli_only=true; fi
# The CLI's libraries (every target `qdqrt` links: server and tools included), the main job's data
# set and /usr/bin/python3 (the main job reads its JSON with it).
packages=(
  build-essential cmake ninja-build pkg-config ccache
  libprotobuf-dev protobuf-compiler libonnx-dev
  libeigen3-dev libtbb-dev libfmt-dev libcli11-dev nlohmann-json3-dev libflatbuffers-dev flatbuffers-compiler
  libxxhash-dev zlib1g-dev libcpp-httplib-dev libgrpc++-dev protobuf-compiler-grpc
  python3 dataset-fashion-mnist
)
if ! $cli_only; then
  # Tests, benchmarks, the Python module, model export (torch), sanitizer and fuzz builds.
  packages+=(
    git python3-onnx libonnx-testdata libgtest-dev libgmock-dev libbenchmark-dev
    python3-numpy python3-dev pybind11-dev python3-pybind11 python3-pytest python3-torch python3-torchvision
    clang libclang-rt-14-dev
  )
  # Node.js (for the ONNX Runtime oracle) may come from elsewhere; only add Debian's when absent.
  command -v node >/dev/null 2>&1 || packages+=(nodejs)
  command -v npm >/dev/null 2>&1 || packages+=(npm)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install_deps: installing ${missing[*]}" >&2
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if $cli_only; then exit 0; fi
# ONNX Runtime for Node.js: the oracle for whole-model tests and the performance peer.
bash "$(dirname "${BASH_SOURCE[0]}")/install_ort.sh"
# Node clients for qdqrt serve's tests and bench/serve (gRPC, HTTP load).
bash "$(dirname "${BASH_SOURCE[0]}")/install_serve_clients.sh"
