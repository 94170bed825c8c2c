# What the hosts' option tests share (sourced, with HOST set): a scratch
# directory removed at exit, fail, and expect_error.

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_error WHAT ARGS...: exit status 2, stderr naming WHAT, and no run.
expect_error() {
  local what=$1; shift
  local status=0
  "$host" "$@" </dev/null >"$tmp/out" 2>"$tmp/err" || status=$?
  [[ $status -eq 2 ]] || { cat "$tmp/err" >&2; fail "$* exited $status, not 2"; }
  grep -qF -- "$what" "$tmp/err" || { cat "$tmp/err" >&2; fail "$* does not name $what"; }
  ! grep -q "trajectory_hash" "$tmp/out" || fail "$* ran anyway"
}

# expect_help OPTION...: --help exits 0 and lists each.
expect_help() {
  local help
  help=$("$host" --help) || fail "--help exited $?"
  for option in "$@"; do
    grep -qF -- "$option" <<<"$help" || fail "--help does not list $option"
  done
}
