#!/usr/bin/env bash
# Builds the libFuzzer target of qdqrt serve's request parsers (HTTP JSON, binary extension, gRPC)
# with clang (ASan + UBSan) in build-fuzz/ and runs it.
#   bash scripts/fuzz_serve_request.sh [seconds]      (default 60)
# Seeds come from tests/server/fuzz/corpus/ (the first byte of each picks the parser; see
# tests/server/fuzz/request_fuzz_entry.h). Findings are written to build-fuzz/findings-serve/;
# copy each one you fix into tests/server/fuzz/corpus/ so qdqrt_server_tests replays it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fuzz_common.sh"
fuzz_build fuzz_serve_request
fuzz_dirs -serve
fuzz_copy_seeds "$root/tests/server/fuzz/corpus"
fuzz_run tests/server/fuzz_serve_request 65536
