#!/usr/bin/env bash
# Builds the structure-aware engine plan fuzzer with clang (ASan + UBSan) in build-fuzz/ and runs it.
#   bash scripts/fuzz_engine_plan.sh [seconds]      (default 60)
# Each input is a program of edits to valid plans built from small models (tests/fuzz/
# engine_plan_fuzz_entry.h): the edited plan goes through Engine::from_plan and, when bound, one
# inference. Seeds come from tests/fuzz/engine_plan_corpus/. Findings are written to
# build-fuzz/findings-plan/; copy each one you fix into tests/fuzz/engine_plan_corpus/ so
# qdqrt_engine_tests replays it (EnginePlanFuzz.*).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/fuzz_common.sh"
fuzz_build fuzz_engine_plan
fuzz_dirs -plan
fuzz_copy_seeds "$root/tests/fuzz/engine_plan_corpus"
fuzz_run tests/fuzz/fuzz_engine_plan 512
