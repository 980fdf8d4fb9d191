#!/usr/bin/env bash
# Installs every Debian package qdqrt needs to build, test and benchmark.
# Idempotent and quiet when everything is already there.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git
  libprotobuf-dev protobuf-compiler libonnx-dev python3-onnx libonnx-testdata
  libeigen3-dev libtbb-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libflatbuffers-dev flatbuffers-compiler
  python3-numpy python3-dev pybind11-dev python3-pybind11 python3-pytest python3-torch python3-torchvision dataset-fashion-mnist
  clang libclang-rt-14-dev ccache libxxhash-dev
  libcpp-httplib-dev libgrpc++-dev protobuf-compiler-grpc
)
missing=()
# Node.js (for the ONNX Runtime oracle) may come from elsewhere; only add Debian's when absent.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install_deps: installing ${missing[*]}" >&2
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# ONNX Runtime for Node.js: the oracle for whole-model tests and the performance peer.
bash "$(dirname "${BASH_SOURCE[0]}")/install_ort.sh"
# Node clients for qdqrt serve's tests and bench/serve (gRPC, HTTP load).
bash "$(dirname "${BASH_SOURCE[0]}")/install_serve_clients.sh"
