#!/usr/bin/env bash
# Usage: usage_errors.sh TRIDENT_BIN SOURCE_DIR
#
# Exit statuses and key output of the command line: 0 ok, 1 failure, 2 usage error.
# shellcheck source=testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/testlib.sh"

bin=$1
gpt2=$2/configs/models/gpt2-small.yaml
llama=$2/configs/models/llama3-8b.yaml

run "$bin"
expect_rc 2
verdict "no subcommand: exit 2"

run "$bin" nosuch
expect_rc 2
verdict "unknown subcommand: exit 2"

run "$bin" model
expect_rc 2
verdict "model without a file: exit 2"

run "$bin" model --help
expect_rc 0 && expect_in out --micro-batch
verdict "model --help lists --micro-batch"

run "$bin" model "$gpt2"
expect_rc 0 && expect_in out 124,439,808
verdict "model gpt2-small: 124,439,808 parameters"

run "$bin" model "$llama"
expect_rc 0 && expect_in out 8,030,261,248
verdict "model llama3-8b: 8,030,261,248 parameters"

run "$bin" model "$gpt2" --tp 5
expect_rc 1 && expect_in err heads
verdict "model --tp 5: exit 1 naming heads"

run "$bin" model "$gpt2" --json
expect_rc 0 && expect_json 'd["total"]["total_params"] == 124439808'
verdict "model --json: total.total_params"

run "$bin" validate --json "$gpt2"
expect_rc 0 && expect_json 'd[0]["ok"] is True and d[0]["kind"] == "model"'
verdict "validate --json: valid JSON"

summary 9
