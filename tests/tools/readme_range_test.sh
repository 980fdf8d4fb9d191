#!/usr/bin/env bash
# Runs the README's "One engine for a range of shapes" snippet as a new user pastes it (in a
# temporary directory, models/ and build/qdqrt pointing at this build): every command must succeed,
# and the load must run at the asked shape.
# Usage: readme_range_test.sh path/to/qdqrt SOURCE_ROOT
set -euo pipefail
qdqrt="$(realpath "$1")"
root="$(realpath "$2")"
/usr/bin/python3 -c "import onnx" 2>/dev/null || { echo "SKIP: no onnx for /usr/bin/python3"; exit 0; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
snippet="$(/usr/bin/python3 - "$root/README.md" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
section = text[text.index("## One engine for a range of shapes"):]
print(re.search(r"```sh\n(.*?)```", section, re.S).group(1))
PY
)"
snippet="${snippet//build\/qdqrt /$qdqrt }"
snippet="${snippet//\'models\//\'$root/models/}"
grep -q -- "--saveEngine=" <<<"$snippet" || { echo "FAIL: the snippet saves no engine"; exit 1; }
cd "$work"
timeout 300 bash -e -o pipefail -c "$snippet" >"$work/out.txt" 2>"$work/err.txt" || {
  echo "FAIL: the README range snippet failed"; cat "$work/out.txt" "$work/err.txt"; exit 1; }
grep -q 'Run shape: input:1x1x84x60 (profile 0)' "$work/out.txt" || { echo "FAIL: not run at 84x60"; cat "$work/out.txt"; exit 1; }
grep -q '&&&& PASSED' "$work/out.txt" || { echo "FAIL: no PASSED line"; cat "$work/out.txt"; exit 1; }
echo "README range snippet ok"
