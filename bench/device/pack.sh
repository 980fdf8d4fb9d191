#!/usr/bin/env bash
# Packs what bench/device/run.sh needs on the device machine into one folder to carry there
# (docs/bench.md, "On the device machine"):
#
#   DIR/bin.tar.gz   qdqrt and qdqrt_bench_kernels (stripped copies) and, in lib/, every shared
#                    library ldd lists for them but the glibc core (the device has no -dev packages
#                    and may lack these); gzip, as the carry and the repository together must stay
#                    under the device tool's 64 MiB
#   DIR/models/      per model and file (FP32, QDQ): the ONNX graph with its initializers of more than
#                    1 KiB as external data whose file is left out, and a JSON manifest from which
#                    bench/device/regen_weights.py writes that file there (bench/device/skeleton.py)
#   DIR/pack.json    commit, date, binaries' checksums, models
#
#   bench/device/pack.sh [DIR] [--models=resnet50,mobilenet_v2,efficientnet_b0] [--models-dir=D]
#                        [--qdqrt=PATH] [--kernel-bench=PATH] [--limit-mib=60]
#
# DIR defaults to device_carry/ in the repository root (ignored by git). The models come from
# BUILD/bench_models/<model>_{fp32,qdq}.onnx (bench/models exports them there; missing torchvision
# ones are exported with models/export_torchvision.py); QDQRT_BUILD_DIR picks BUILD (default build/).
# Fails when DIR ends up over --limit-mib MiB.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${QDQRT_BUILD_DIR:-$root/build}"
python="${PYTHON:-/usr/bin/python3}"  # Debian's: onnx (and torch for an export)
dir="$root/device_carry"
models="resnet50,mobilenet_v2,efficientnet_b0"
models_dir="$build/bench_models"
qdqrt="$build/qdqrt"
kernel_bench="$build/bench/kernels/qdqrt_bench_kernels"
limit_mib=60
for arg in "$@"; do
  case "$arg" in
    --models=*) models="${arg#*=}" ;;
    --models-dir=*) models_dir="${arg#*=}" ;;
    --qdqrt=*) qdqrt="${arg#*=}" ;;
    --kernel-bench=*) kernel_bench="${arg#*=}" ;;
    --limit-mib=*) limit_mib="${arg#*=}" ;;
    -h|--help) sed -n '2,/^set /p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "pack.sh: unknown option $arg" >&2; exit 2 ;;
    *) dir="$arg" ;;
  esac
done
for binary in "$qdqrt" "$kernel_bench"; do
  [[ -x "$binary" ]] || { echo "pack.sh: $binary is not built (cmake --build build --target qdqrt qdqrt_bench_kernels)" >&2; exit 1; }
done

staging="$(mktemp -d)"
trap 'rm -rf "$staging"' EXIT
rm -rf "$dir"
mkdir -p "$dir/models" "$staging/lib"

# Binaries and their libraries. ldd's left-hand name is the soname the loader looks for.
cp "$qdqrt" "$staging/qdqrt"
cp "$kernel_bench" "$staging/qdqrt_bench_kernels"
strip --strip-unneeded "$staging/qdqrt" "$staging/qdqrt_bench_kernels"
glibc_core='^(linux-vdso|linux-gate|ld-linux|libc|libm|libpthread|libdl|librt)\.so'
missing="$(ldd "$qdqrt" "$kernel_bench" | grep 'not found' || true)"
[[ -z "$missing" ]] || { echo "pack.sh: unresolved libraries:"$'\n'"$missing" >&2; exit 1; }
ldd "$qdqrt" "$kernel_bench" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
  while read -r soname path; do
    [[ "$soname" =~ $glibc_core ]] && continue
    cp -L "$path" "$staging/lib/$soname"
  done
libraries=$(find "$staging/lib" -type f | wc -l)
tar -C "$staging" -czf "$dir/bin.tar.gz" qdqrt qdqrt_bench_kernels lib
echo "pack.sh: bin.tar.gz: qdqrt, qdqrt_bench_kernels and $libraries libraries," \
     "$(du -sb "$staging" | cut -f1 | awk '{printf "%.1f", $1 / 1048576}') MiB unpacked," \
     "$(stat -c %s "$dir/bin.tar.gz" | awk '{printf "%.1f", $1 / 1048576}') MiB packed"

# Model skeletons.
sources=()
IFS=',' read -r -a names <<< "$models"
for name in "${names[@]}"; do
  for variant in fp32 qdq; do
    source="$models_dir/${name}_${variant}.onnx"
    if [[ ! -f "$source" ]]; then
      case "$name" in
        resnet18|resnet50|mobilenet_v2|efficientnet_b0)
          echo "pack.sh: exporting $name into $models_dir ..."
          "$python" "$root/models/export_torchvision.py" --model "$name" --variant fp32 qdq --out "$models_dir" > /dev/null ;;
        *) echo "pack.sh: $source is missing" >&2; exit 1 ;;
      esac
    fi
    sources+=("$source")
  done
done
"$python" "$root/bench/device/skeleton.py" --model "${sources[@]}" --out "$dir/models"

commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [[ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]]; then commit="$commit+changes"; fi
"$python" - "$dir/pack.json" "$commit" "$qdqrt" "$kernel_bench" "$models" <<'PYTHON'
import hashlib, json, os, sys, time
path, commit, qdqrt, kernel_bench, models = sys.argv[1:]
def digest(name):
    with open(name, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()
json.dump({"commit": commit, "packed": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
           "qdqrt": {"path": qdqrt, "sha256": digest(qdqrt), "built": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(os.path.getmtime(qdqrt)))},
           "qdqrt_bench_kernels": {"path": kernel_bench, "sha256": digest(kernel_bench)},
           "models": models.split(",")}, open(path, "w"), indent=1)
PYTHON

carry_bytes=$(du -sb "$dir" | cut -f1)
tree_bytes=$(cd "$root" && git ls-files -z -co --exclude-standard 2>/dev/null | xargs -0 -r stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
echo "pack.sh: $dir: $(awk -v b="$carry_bytes" 'BEGIN {printf "%.1f", b / 1048576}') MiB" \
     "(the working tree that travels beside it: $(awk -v b="$tree_bytes" 'BEGIN {printf "%.1f", b / 1048576}') MiB; the device tool takes 64 MiB in all)"
if (( carry_bytes > limit_mib * 1048576 )); then
  echo "pack.sh: $dir is over $limit_mib MiB" >&2
  exit 1
fi
