# shellcheck shell=bash
# Shared helpers for the CLI test scripts (source it; bash only).
#
#   run CMD...                run CMD: stdout to $WORK/out, stderr to $WORK/err, status in $RC
#   expect_rc N               the last run exited with status N
#   expect_in out|err TEXT    that stream of the last run contains the literal TEXT
#   expect_match out|err RE   ... contains a match of the extended regex RE
#   expect_empty out|err      ... is empty
#   expect_json EXPR [ARG...] stdout is JSON and the Python expression EXPR holds for it
#                             (EXPR sees the document as `d` and the ARGs as `args`)
#   verdict NAME              print "PASS NAME" if the checks just run succeeded ($? is 0),
#                             else "FAIL NAME: why", and count it
#   summary MIN               print "N passed, M failed"; non-zero unless none failed and
#                             at least MIN cases ran
#
# A failed expect_* returns 1 and leaves the reason in $REASON, so checks chain with &&:
#   run "$bin" model
#   expect_rc 2 && expect_in err "file is required"
#   verdict "model without a file"
# The scripts write nothing outside $WORK, a mktemp folder removed on exit.
set -u

WORK=$(mktemp -d "${TMPDIR:-/tmp}/trident-cli-test.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
PASSED=0
FAILED=0
REASON=""
RC=0

run() {
  "$@" >"$WORK/out" 2>"$WORK/err"
  RC=$?
}

expect_rc() {
  [[ $RC -eq $1 ]] && return 0
  REASON="exit status $RC, expected $1"
  return 1
}

expect_in() {
  grep -qaF -- "$2" "$WORK/$1" && return 0
  REASON="std$1 lacks '$2'"
  return 1
}

expect_match() {
  grep -qaE -- "$2" "$WORK/$1" && return 0
  REASON="std$1 has no match for /$2/"
  return 1
}

expect_empty() {
  [[ ! -s $WORK/$1 ]] && return 0
  REASON="std$1 is not empty"
  return 1
}

JSON_CHECK='
import json, sys
try:
    with open(sys.argv[1], encoding="utf-8") as f:
        d = json.load(f)
except (ValueError, UnicodeDecodeError) as e:
    sys.exit(f"stdout is not valid JSON: {e}")
args = sys.argv[3:]
if not eval(sys.argv[2]):
    sys.exit(f"JSON check failed: {sys.argv[2]}")
'

expect_json() {
  REASON=$(python3 -c "$JSON_CHECK" "$WORK/out" "$@" 2>&1)
}

# A literal string as an extended regex (for file paths in expect_match).
regex_escape() {
  printf '%s' "$1" | sed 's/[][\\.*^$+?(){}|]/\\&/g'
}

verdict() {
  if (($? == 0)); then pass "$1"; else fail "$1"; fi
}

pass() {
  echo "PASS $1"
  PASSED=$((PASSED + 1))
}

fail() {
  echo "FAIL $1: $REASON"
  head -c 600 "$WORK/err" | tr -d '\000' | sed 's/^/    stderr: /'
  FAILED=$((FAILED + 1))
}

summary() {
  local ran=$((PASSED + FAILED)) status=0
  ((FAILED == 0)) || status=1
  if ((ran < $1)); then
    echo "error: only $ran cases ran, expected at least $1"
    status=1
  fi
  echo "$PASSED passed, $FAILED failed"
  return $status
}
