#!/usr/bin/env bash
# Usage: validate_good_files.sh TRIDENT_BIN SOURCE_DIR
#
# Every configs/**/*.yaml and tests/data/good/*.yaml must pass `trident validate FILE`:
# exit status 0, "FILE: ok: KIND ..." on stdout and nothing on stderr.
# shellcheck source=testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/testlib.sh"

bin=$1
root=$2

while IFS= read -r file; do
  name=${file#"$root"/}
  run "$bin" validate "$file"
  expect_rc 0 && expect_in out "$file: ok: " && expect_empty err
  verdict "$name"
done < <(find "$root/configs" "$root/tests/data/good" -name '*.yaml' | sort)
summary 10
