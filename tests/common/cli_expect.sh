# Checks shared by the scripts that run the qdqrt binary. Source it after setting `qdqrt` (the
# binary), `work` (a scratch directory) and `failures=0`; end with a non-zero exit when
# $failures > 0.

# fail MESSAGE...: reports a failed check and counts it.
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect CODE STREAM(stdout|stderr) REGEX ARGS...: `qdqrt ARGS` exits with CODE and STREAM matches REGEX.
expect() {
  local code="$1" stream="$2" pattern="$3"
  shift 3
  "$qdqrt" "$@" >"$work/stdout" 2>"$work/stderr"
  local actual=$?
  if [[ $actual -ne $code ]] || ! grep -Eq -- "$pattern" "$work/$stream"; then
    fail "qdqrt $* -> exit $actual (want $code); wanted $stream matching: $pattern"
    sed 's/^/    /' "$work/stderr" | head -20
    if [[ $stream == stdout ]]; then sed 's/^/    stdout: /' "$work/stdout" | head -20; fi
  else
    echo "ok: qdqrt $*"
  fi
}
