#!/usr/bin/env bash
# ctest bench_device.smoke: bench/device/pack.sh and run.sh end to end on the Fashion-MNIST ResNet
# (models/fmnist_resnet_{fp32,qdq}.onnx), here, in seconds, without the device machine:
#   1. pack.sh into a scratch folder (and once more with --limit-mib=1, which must fail);
#   2. the skeletons' regenerated weights keep each tensor's shape, dtype and magnitude;
#   3. run.sh at 1 thread, tiny durations, one kernel row, with a stand-in onnxruntime
#      (bench/device/test/fake_onnxruntime: it checks the session options ort_bench.py sets) and,
#      where the CPU has AVX-512 VNNI, qdqrt's emulated AMX tiles, so that both QDQ engines run: the
#      summary must hold every expected row and at most the 8 files the device tool brings back;
#   4. run.sh with an onnxruntime that fails to import: exit 1, the ERROR in the summary, qdqrt rows
#      still there; with --ort=skip: exit 0;
#   5. run.sh with a budget too short for any model: every cell is listed as not run.
#
#   bench/device/selftest.sh [--qdqrt=PATH] [--kernel-bench=PATH] [--python=PATH]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${QDQRT_BUILD_DIR:-$root/build}"
qdqrt="$build/qdqrt"
kernel_bench="$build/bench/kernels/qdqrt_bench_kernels"
python=/usr/bin/python3
for arg in "$@"; do
  case "$arg" in
    --qdqrt=*) qdqrt="${arg#*=}" ;;
    --kernel-bench=*) kernel_bench="${arg#*=}" ;;
    --python=*) python="${arg#*=}" ;;
    *) echo "selftest.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAILED: $*" >&2; exit 1; }

echo "== pack.sh"
PYTHON="$python" "$root/bench/device/pack.sh" "$tmp/carry" --models=fmnist_resnet --models-dir="$root/models" \
    --qdqrt="$qdqrt" --kernel-bench="$kernel_bench"
if PYTHON="$python" "$root/bench/device/pack.sh" "$tmp/small" --models=fmnist_resnet --models-dir="$root/models" \
    --qdqrt="$qdqrt" --kernel-bench="$kernel_bench" --limit-mib=1 > "$tmp/small.log" 2>&1; then
  fail "pack.sh --limit-mib=1 succeeded"
fi
grep -q "is over 1 MiB" "$tmp/small.log" || fail "pack.sh --limit-mib=1 did not say why: $(tail -2 "$tmp/small.log")"

echo "== regenerated weights"
"$python" "$root/bench/device/regen_weights.py" --carry "$tmp/carry/models" --out "$tmp/regen"
"$python" - "$root/models" "$tmp/regen" <<'PYTHON'
import sys
import numpy as np
import onnx
from onnx import numpy_helper
original_dir, regen_dir = sys.argv[1:]
for variant in ("fp32", "qdq"):
    name = f"fmnist_resnet_{variant}.onnx"
    original = {i.name: numpy_helper.to_array(i) for i in onnx.load(f"{original_dir}/{name}").graph.initializer}
    regen = {i.name: numpy_helper.to_array(i) for i in onnx.load(f"{regen_dir}/{name}").graph.initializer}
    assert original.keys() == regen.keys(), f"{name}: initializer names differ"
    external = 0
    for key, a in original.items():
        b = regen[key]
        assert a.shape == b.shape and a.dtype == b.dtype, f"{name} {key}: {a.shape} {a.dtype} vs {b.shape} {b.dtype}"
        if a.nbytes <= 1024:
            assert np.array_equal(a, b), f"{name} {key}: a small initializer changed"
            continue
        external += 1
        assert b.min() >= a.min() and b.max() <= a.max(), f"{name} {key}: outside the original range"
        if a.dtype.kind == "f":
            assert abs(b.std() - a.std()) <= 0.2 * a.std() + 1e-12, f"{name} {key}: std {b.std()} vs {a.std()}"
            assert abs(b.mean() - a.mean()) <= 0.2 * a.std() + 1e-12, f"{name} {key}: mean {b.mean()} vs {a.mean()}"
    assert external > 0, f"{name}: no external initializer"
    print(f"{name}: {external} regenerated tensors keep shape, dtype, range and magnitude")
PYTHON

# The emulated AMX tiles need AVX-512 VNNI (kernels/cpu_features.h).
emulation=()
grep -qw avx512_vnni /proc/cpuinfo && emulation=(--amx-emulation)
quick=(--threads=1 --duration=0.05 --warmup=20 --iterations=3 --kernels=quick --kernel-min-time=0.01)

echo "== run.sh with a stand-in onnxruntime"
status=0
OUT="$tmp/out" PYTHON="$python" PYTHONPATH="$root/bench/device/test/fake_onnxruntime" FAKE_ORT_LOG="$tmp/ort.jsonl" \
    bash "$root/bench/device/run.sh" "$tmp/carry" "${quick[@]}" --ort-version=0.0.0 "${emulation[@]}" > "$tmp/run.log" 2>&1 ||
    status=$?
[[ $status == 0 ]] || { cat "$tmp/run.log"; fail "run.sh exited $status"; }
"$python" - "$tmp/out" "$tmp/ort.jsonl" "${#emulation[@]}" <<'PYTHON' || { cat "$tmp/run.log"; fail "the summary"; }
import json, os, re, sys
out, ort_log, emulated = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
files = sorted(os.listdir(out))
assert files == ["cpu.txt", "kernels.json", "layers.json", "log.txt", "summary.json", "summary.md"], files
assert all(re.fullmatch(r"[A-Za-z0-9._-]+", f) for f in files)
summary = json.load(open(os.path.join(out, "summary.json")))
assert not summary["not_run"], summary["not_run"]
# Without AVX-512 VNNI the kernel bench's VNNI rows report errors; nothing else may.
assert all(e.startswith("kernel bench") for e in summary["errors"]) and (not emulated or not summary["errors"]), summary["errors"]
if emulated:  # the kernel bench's VNNI rows need AVX-512 VNNI, as the emulated AMX tiles do
    assert summary["peaks"]["vpdpbusd"]["gops"] > 0 and summary["peaks"]["vfmadd"]["gops"] > 0, summary["peaks"]
    assert summary["kernel_rows"] and summary["kernel_rows"][0]["layer"] == "l1_3x3_64", summary["kernel_rows"]
    assert summary["kernel_rows"][0]["vnni"]["gops"] > 0
rows = {(r["variant"], r["cap"]): r for r in summary["rows"]}
expected = {("fp32", None), ("qdq", None)} | ({("qdq", "avx512vnni")} if emulated else set())
assert set(rows) == expected, sorted(rows, key=str)
for key, row in rows.items():
    assert row["model"] == "fmnist_resnet" and row["threads"] == 1, row
    assert row["qdqrt_ms"] > 0 and row["qdqrt_runs"] >= 3 and row["ort_ms"] > 0 and row["ort_runs"] >= 3, row
    assert row["gops"] > 0, row
    if key[0] == "qdq":
        assert row["ort_fp32_ms"] > 0 and row["ort_fp32_over_qdqrt"] > 0, row
if emulated:
    assert rows[("qdq", None)]["isa"] == "amxint8" and rows[("qdq", "avx512vnni")]["isa"] == "avx512vnni", rows
    assert len(summary["amx_vs_vnni"]) == 1 and summary["amx_vs_vnni"][0]["vnni_over_amx"] > 0, summary["amx_vs_vnni"]
    layers = json.load(open(os.path.join(out, "layers.json")))
    assert any(layer[2].endswith("amxint8") for layer in layers["fmnist_resnet/qdq/default"]["Layers"]), layers
sessions = [json.loads(line) for line in open(ort_log)]
assert len(sessions) == 2, sessions
for session in sessions:
    assert session["intra_op_num_threads"] == 1 and session["inter_op_num_threads"] == 1, session
    assert session["execution_mode"] == "ORT_SEQUENTIAL" and session["graph_optimization_level"] == "ORT_ENABLE_ALL"
    assert session["providers"] == ["CPUExecutionProvider"], session
assert sorted(os.path.basename(s["model"]) for s in sessions) == ["fmnist_resnet_fp32.onnx", "fmnist_resnet_qdq.onnx"]
text = open(os.path.join(out, "summary.md")).read()
for heading in ("## ResNet-50 convolutions", "## Whole models, batch 1", "## Engines: the kernels that ran"):
    assert heading in text, heading
assert "| fmnist_resnet | FP32 |" in text and "| fmnist_resnet | QDQ |" in text
assert "== run.sh: exit 0" in open(os.path.join(out, "log.txt")).read()
print(f"summary: {len(rows)} model rows, {len(sessions)} ORT sessions, files {files}")
PYTHON

echo "== run.sh with an onnxruntime that does not import"
mkdir -p "$tmp/no_ort/onnxruntime"
echo 'raise ImportError("onnxruntime stand-in: not installed")' > "$tmp/no_ort/onnxruntime/__init__.py"
status=0
OUT="$tmp/out_no_ort" PYTHON="$python" PYTHONPATH="$tmp/no_ort" bash "$root/bench/device/run.sh" "$tmp/carry" \
    "${quick[@]}" --kernels=none --variants=fp32 > "$tmp/no_ort.log" 2>&1 || status=$?
[[ $status == 1 ]] || { cat "$tmp/no_ort.log"; fail "run.sh without onnxruntime exited $status, not 1"; }
grep -q "ERROR: ONNX Runtime is missing" "$tmp/out_no_ort/summary.md" || fail "no ERROR line in the summary"
grep -q "| fmnist_resnet | FP32 | .* | 1 | [0-9.]* |" "$tmp/out_no_ort/summary.md" || fail "no qdqrt row without onnxruntime"
status=0
OUT="$tmp/out_skip" PYTHON="$python" PYTHONPATH="$tmp/no_ort" bash "$root/bench/device/run.sh" "$tmp/carry" \
    "${quick[@]}" --kernels=none --variants=fp32 --ort=skip > "$tmp/skip.log" 2>&1 || status=$?
[[ $status == 0 ]] || { cat "$tmp/skip.log"; fail "run.sh --ort=skip exited $status"; }
grep -q "ONNX Runtime: skipped" "$tmp/out_skip/summary.md" || fail "--ort=skip not in the summary"

echo "== run.sh with a budget too short for any model"
status=0
OUT="$tmp/out_budget" PYTHON="$python" PYTHONPATH="$root/bench/device/test/fake_onnxruntime" QDQRT_DEVICE_BUDGET_S=6 \
    bash "$root/bench/device/run.sh" "$tmp/carry" "${quick[@]}" --kernels=none > "$tmp/budget.log" 2>&1 || status=$?
[[ $status == 0 ]] || { cat "$tmp/budget.log"; fail "run.sh with a short budget exited $status"; }
"$python" - "$tmp/out_budget/summary.json" <<'PYTHON' || { cat "$tmp/budget.log"; fail "the short budget"; }
import json, sys
summary = json.load(open(sys.argv[1]))
assert not summary["rows"] and len(summary["not_run"]) >= 3, (summary["rows"], summary["not_run"])
assert all("time budget" in line for line in summary["not_run"]), summary["not_run"]
print(f"short budget: {len(summary['not_run'])} parts not run")
PYTHON
echo "bench/device selftest: passed"
