#!/usr/bin/env bash
# Measures qdqrt on the device machine in one run, from the repository root, with the folder
# bench/device/pack.sh made (docs/bench.md, "On the device machine"):
#
#   bash bench/device/run.sh device_carry [device_bench.py options, e.g. --threads=1,16 --duration=2]
#
# Unpacks the binaries into a scratch folder, records the machine into $OUT/cpu.txt, regenerates
# the models' weights (bench/device/regen_weights.py), then runs bench/device/device_bench.py: the
# kernel bench, the whole models beside ONNX Runtime, the summary. Everything it prints also goes
# to $OUT/log.txt; $OUT (default: device_out/ in the repository root) gets log.txt, cpu.txt,
# summary.md, summary.json, kernels.json and layers.json, rewritten as the run goes.
#
# QDQRT_DEVICE_BUDGET_S: seconds from the start of this script to the end of the last
# measurement (default 450); what does not fit is left out and listed. PYTHON: the Python with
# numpy, onnx and onnxruntime (default python3). Exit status: device_bench.py's (1 when a run
# failed or onnxruntime is missing), or 1 when the binaries or the models cannot be set up.
set -uo pipefail
started=$(date +%s.%N)
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if (($# < 1)) || [[ "$1" == -* ]]; then
  sed -n '2,/^set /p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'
  exit 2
fi
carry="$1"
shift
[[ "$carry" == /* ]] || carry="$PWD/$carry"
out="${OUT:-$root/device_out}"
budget="${QDQRT_DEVICE_BUDGET_S:-450}"
python="${PYTHON:-python3}"
mkdir -p "$out"

main() {
  echo "== bench/device/run.sh $(date -u '+%Y-%m-%d %H:%M:%S UTC'), budget ${budget} s, carry $carry"
  [[ -f "$carry/bin.tar.gz" && -d "$carry/models" ]] || { echo "ERROR: $carry is not a bench/device/pack.sh folder"; return 1; }
  work="$(mktemp -d "${TMPDIR:-/tmp}/qdqrt_device.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  tar -xzf "$carry/bin.tar.gz" -C "$work" 2>/dev/null ||
    "$python" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$carry/bin.tar.gz" "$work" ||
    { echo "ERROR: cannot unpack $carry/bin.tar.gz"; return 1; }
  # The packed libraries are for the packed binaries only: exported, they would replace the ones
  # Python's onnxruntime and numpy load (libstdc++, protobuf, zlib, ...). device_bench.py passes
  # them to qdqrt and the kernel bench alone.
  lib="$work/lib"
  export PYTHONUNBUFFERED=1
  # qdqrt's own choice of ISA is what is measured (device_bench.py sets the cap where it wants one).
  unset QDQRT_MAX_ISA QDQRT_AMX_EMULATION
  if ! LD_LIBRARY_PATH="$lib" "$work/qdqrt" --version; then
    echo "ERROR: the packed qdqrt does not start here:"
    LD_LIBRARY_PATH="$lib" ldd "$work/qdqrt" | grep -v '=> /' || true
    ldd --version 2>&1 | head -1
    return 1
  fi

  {
    echo "== date"; date -u
    echo "== uname -a"; uname -a
    echo "== nproc"; nproc
    echo "== lscpu"; lscpu 2>&1
    echo "== /proc/cpuinfo (first processor)"; sed -n '1,/^$/p' /proc/cpuinfo
    echo "== memory"; free -g 2>&1 || head -3 /proc/meminfo
    echo "== cgroup cpu.max"; cat /sys/fs/cgroup/cpu.max 2>&1
    echo "== glibc"; ldd --version 2>&1 | head -1
    echo "== python"; "$python" -c 'import sys, numpy, onnx; print(sys.executable, sys.version.split()[0], "numpy", numpy.__version__, "onnx", onnx.__version__)' 2>&1
    "$python" -c 'import onnxruntime; print("onnxruntime", onnxruntime.__version__)' 2>&1 | tail -1
    echo "== pack.json"; cat "$carry/pack.json" 2>&1
  } > "$out/cpu.txt"
  grep -m1 'model name' /proc/cpuinfo || true
  echo "nproc: $(nproc); AMX flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep '^amx' | tr '\n' ' ')"

  "$python" "$root/bench/device/regen_weights.py" --carry "$carry/models" --out "$work/models" || {
    echo "ERROR: regenerating the weights failed"; return 1; }

  deadline=$(awk -v s="$started" -v b="$budget" 'BEGIN {printf "%.3f", s + b}')
  "$python" "$root/bench/device/device_bench.py" --qdqrt "$work/qdqrt" --kernel-bench "$work/qdqrt_bench_kernels" \
      --manifests "$carry/models" --models-dir "$work/models" --lib-dir "$lib" --work "$work/run" --out "$out" \
      --pack-info "$carry/pack.json" --python "$python" --started "$started" --deadline "$deadline" "$@"
  status=$?
  echo "== run.sh: exit $status after $(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN {printf "%.0f", e - s}') s"
  return $status
}

main "$@" 2>&1 | tee -a "$out/log.txt"
exit "${PIPESTATUS[0]}"
