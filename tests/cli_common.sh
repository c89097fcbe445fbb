# cli_common.sh -- the start of every tests/test_cli_*.sh family script.
#
#   . "$(dirname "$0")/cli_common.sh"
#   cli_setup NAME "PYTHON-IMPORTS" "$@"
#
# Takes the script's arguments (path/to/ndforge SCRATCH_DIR), makes cli an
# absolute path, finds a python3 that can run "import PYTHON-IMPORTS" (py;
# exits 77, skipped, without one), starts in a fresh SCRATCH_DIR with the
# kernel cache off, and defines the counters npass/nfail, fail() and
# cli_summary (the last line of the script: prints the counts, fails on any
# failure).
cli_setup() {
  local name=$1 imports=$2
  shift 2
  cli=${1:?usage: test_cli_$name.sh path/to/ndforge SCRATCH_DIR}
  scratch=${2:?usage: test_cli_$name.sh path/to/ndforge SCRATCH_DIR}
  case $cli in /*) ;; *) cli=$PWD/$cli ;; esac
  py=
  for cand in /usr/bin/python3 python3; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c "import $imports" 2>/dev/null; then
      py=$cand
      break
    fi
  done
  [ -n "$py" ] || { echo "SKIP: no python3 that can import $imports"; exit 77; }
  rm -rf "$scratch"
  mkdir -p "$scratch" && cd "$scratch" || exit 1
  export NDF_CACHE_DISABLE=1
  npass=0
  nfail=0
  cli_name=$name
}
fail() { nfail=$((nfail + 1)); echo "FAIL: $*"; }
cli_summary() {
  echo "$cli_name CLI: $npass passed, $nfail failed"
  [ "$nfail" -eq 0 ]
}
