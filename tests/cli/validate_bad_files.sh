#!/usr/bin/env bash
# Usage: validate_bad_files.sh TRIDENT_BIN DATA_DIR [--json]
#
# Runs `trident validate FILE` on every DATA_DIR/bad/*.yaml. Each of those files has exactly
# one defect and starts with a line `# expect: TEXT`. A file passes when
#   - the exit status is exactly 1,
#   - stderr locates the error as FILE:LINE (FILE as passed on the command line), and
#   - stderr contains TEXT.
# Exception to the line rule: when TEXT says "expected a YAML mapping at the top level"
# (empty file, a list or a plain text paragraph at the top level), no node in the file is to
# blame, so "FILE: message" without a line number is accepted.
#
# With --json, runs `trident validate --json FILE` instead and requires exit status 1 and a
# valid JSON array holding one result with ok false and an error that starts with FILE: and
# contains TEXT.
#
# Prints PASS/FAIL per file and "N passed, M failed"; fails if any failed or fewer than 20 ran.
# shellcheck source=testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/testlib.sh"
shopt -s nullglob

bin=$1
data=$2
json=${3:-}
top_level="expected a YAML mapping at the top level"

check_text() {  # FILE EXPECT
  local file=$1 expect=$2 location
  location="^error: $(regex_escape "$file"):[0-9]+:[0-9]+: "
  [[ $expect == *"$top_level"* ]] && location="^error: $(regex_escape "$file"):( |[0-9]+:[0-9]+: )"
  run "$bin" validate "$file"
  expect_rc 1 && expect_match err "$location" && expect_in err "$expect"
}

check_json() {  # FILE EXPECT
  run "$bin" validate --json "$1"
  local ok='len(d) == 1 and d[0]["ok"] is False' error='d[0]["error"]'
  expect_rc 1 && expect_json "$ok and $error.startswith(args[0] + ':') and args[1] in $error" "$1" "$2"
}

for file in "$data"/bad/*.yaml; do
  name=$(basename "$file")
  expect=$(head -n 1 "$file" | sed -n 's/^# expect: //p')
  if [[ -z $expect ]]; then
    REASON="first line is not '# expect: TEXT'"
    : >"$WORK/err"
    fail "$name"
  elif [[ $json == --json ]]; then
    check_json "$file" "$expect"
    verdict "$name"
  else
    check_text "$file" "$expect"
    verdict "$name"
  fi
done
summary 20
