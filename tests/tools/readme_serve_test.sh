#!/usr/bin/env bash
# Runs the README's "Serve a model" snippet as a new user pastes it, with two changes a test needs:
# the server binds 127.0.0.1 and free ports instead of 8000-8002. Every command must succeed, the
# first request included (the snippet waits for the server to be ready).
# Usage: readme_serve_test.sh path/to/qdqrt SOURCE_ROOT
set -euo pipefail
qdqrt="$(realpath "$1")"
root="$(realpath "$2")"
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 0; }
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
snippet="$(/usr/bin/python3 - "$root/README.md" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
section = text[text.index("## Serve a model"):]
print(re.search(r"```sh\n(.*?)```", section, re.S).group(1))
PY
)"
# Free ports for HTTP, gRPC and metrics (bound and released here; the server takes them next).
read -r http grpc metrics < <(/usr/bin/python3 -c "
import socket
sockets = [socket.socket() for _ in range(3)]
for s in sockets: s.bind(('127.0.0.1', 0))
print(*[s.getsockname()[1] for s in sockets])
for s in sockets: s.close()")
snippet="${snippet//build\/qdqrt serve /$qdqrt serve --host=127.0.0.1 --httpPort=$http --grpcPort=$grpc --metricsPort=$metrics }"
snippet="${snippet//localhost:8000/127.0.0.1:$http}"
snippet="${snippet//localhost:8002/127.0.0.1:$metrics}"
snippet="${snippet//=models\//=$root/models/}"
grep -q -- "--host=127.0.0.1" <<<"$snippet" || { echo "FAIL: the snippet has no 'build/qdqrt serve' line"; exit 1; }
cd "$work"
# Each line as the user runs it: the first failing command fails the test (connection refused included).
timeout 300 bash -e -o pipefail -c "$snippet" >"$work/out.txt" 2>"$work/err.txt" || {
  echo "FAIL: the README serve snippet failed"; cat "$work/out.txt" "$work/err.txt"; exit 1; }
grep -q '"name":"output"' "$work/out.txt" || { echo "FAIL: no inference output"; cat "$work/out.txt"; exit 1; }
grep -q 'nv_inference_count' "$work/out.txt" || { echo "FAIL: no metrics"; cat "$work/out.txt"; exit 1; }
echo "README serve snippet ok"
