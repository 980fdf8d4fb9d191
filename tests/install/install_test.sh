#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then use what it put there as an outsider would:
# find_package(qdqrt CONFIG) and pkg-config builds of tests/install/consumer, the CLI, the Python module.
#   install_test.sh BUILD_DIR SOURCE_ROOT
set -euo pipefail
build="$1"
root="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
model="$root/models/fmnist_resnet_qdq.onnx"

# find_package(qdqrt CONFIG) -> qdqrt::engine
cmake -S "$root/tests/install/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_BUILD_TYPE=Release > "$work/configure.log"
cmake --build "$work/consumer" > "$work/build.log"
by_cmake="$("$work/consumer/consumer" "$model")"
echo "find_package: $by_cmake"
[[ "$by_cmake" == "qdqrt $("$prefix/bin/qdqrt" --version | cut -d' ' -f2): output [1, 10], top-1 "* ]]

# pkg-config qdqrt
flags="$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs qdqrt)"
# shellcheck disable=SC2086 # the flags are words
c++ -std=c++20 "$root/tests/install/consumer/consumer.cpp" -o "$work/consumer_pc" $flags -Wl,-rpath,"$prefix/lib"
by_pkg_config="$("$work/consumer_pc" "$model")"
echo "pkg-config: $by_pkg_config"
[ "$by_pkg_config" = "$by_cmake" ]

# The CLI and the Python module from the prefix.
"$prefix/bin/qdqrt" --version
python_dir="$(find "$prefix" -name 'qdqrt.cpython-*.so' -printf '%h\n')"
if [ -n "$python_dir" ]; then
  PYTHONPATH="$python_dir" /usr/bin/python3 -c "
import qdqrt, numpy as np
s = qdqrt.InferenceSession('$model')
print('python:', qdqrt.__version__, s.run(None, {'input': np.zeros((1, 1, 28, 28), np.float32)})[0].argmax())"
else
  echo "python: no module installed (QDQRT_BUILD_PYTHON=OFF)"
fi
echo "install ok"
