#!/usr/bin/env bash
# Builds the engine file reader's libFuzzer target with clang (ASan + UBSan) in build-fuzz/ and runs it.
#   bash scripts/fuzz_engine_file.sh [seconds]      (default 60)
# Seeds come from tests/fuzz/engine_file_corpus/ (valid engine files written by the engine_file
# gtest). The target reads each input as it is and with its checksum recomputed, so mutations
# get past the checksum to the FlatBuffers verifier and the plan checks. Findings are written to
# build-fuzz/findings-engine/; copy each one you fix into tests/fuzz/engine_file_corpus/ so the
# gtest replays it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fuzz_common.sh"
fuzz_build fuzz_engine_file
fuzz_dirs -engine
fuzz_copy_seeds "$root/tests/fuzz/engine_file_corpus"
fuzz_run tests/fuzz/fuzz_engine_file 262144
