#!/usr/bin/env bash
# Usage: profile_measured.sh TRIDENT_BIN SOURCE_DIR [MPIRUN [MPIRUN_FLAG...]]
#
# trident profile MODEL --device cpu end to end: gpt-tiny measured on this CPU at micro-batches
# 1 and 2, the file validated and planned from; bad requests fail with exit 1 (or 2 for usage)
# naming the flag and the fix, and write nothing. With MPIRUN: the tp 2 shards timed by a job
# of 2 ranks, and a tp 2 plan made from them.
# shellcheck source=testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/testlib.sh"

bin=$1
configs=$2/configs
tiny=$configs/models/gpt-tiny.yaml
cpu=$configs/clusters/local-cpu.yaml
quick=(--time-budget-s 0.2 --max-repeats 5)

# count_entries FILE TP: the entries of FILE measured at tp TP.
count_entries() {
  grep -c "^        tp: $2\$" "$1"
}

if (($# > 2)); then
  mpirun=$3
  shift 3
  profile=$WORK/tp2.yaml
  run "$mpirun" -np 2 "$@" "$bin" profile "$tiny" --device cpu --micro-batch 1 --tp 1,2 \
    "${quick[@]}" -o "$profile"
  # tp 2: each of the 4 kinds without and with sequence parallelism.
  expect_rc 0 && expect_in out "wrote $profile" && expect_in out "2 ranks" &&
    [[ $(count_entries "$profile" 2) -eq 8 && $(count_entries "$profile" 1) -eq 4 &&
      $(grep -c '^        sequence_parallel: true$' "$profile") -eq 4 ]]
  verdict "mpirun -np 2 profile --tp 1,2 times the tp 2 shards, with and without sequence parallelism"

  run "$bin" plan --model "$tiny" --cluster "$cpu" --profile "$profile" --global-batch 4 \
    --seq 64 --fix tp=2 -o "$WORK/tp2-plan.yaml"
  expect_rc 0 && expect_in out "predicted step time" && expect_in out "tp 2"
  verdict "plan --fix tp=2 reads the tp 2 entries"

  run "$bin" plan --model "$tiny" --cluster "$cpu" --profile "$profile" --global-batch 4 \
    --seq 64 --fix tp=2 --sequence-parallel on -o "$WORK/sp-plan.yaml"
  expect_rc 0 && expect_in out "tp 2 (sequence parallel)" &&
    grep -q '^sequence_parallel: true$' "$WORK/sp-plan.yaml"
  verdict "plan --fix tp=2 --sequence-parallel on reads the sequence-parallel entries"
  summary 3
  exit
fi

profile=$WORK/tiny.yaml
run "$bin" profile "$tiny" --device cpu --micro-batch 1,2 "${quick[@]}" -o "$profile"
expect_rc 0 && expect_in out "wrote $profile" && expect_match out "gpt_block +1 +1 " &&
  expect_match err "profile [0-9]+/[0-9]+ .* lm_head mb 2 tp 1 pass [123]/3: fwd [0-9.]+ ms" &&
  expect_match err "profile ([0-9]+)/\1 " && expect_match err "spread [0-9.]+%, load [0-9.]+\)" &&
  expect_match out "load factor [0-9]+\.[0-9]{3}: all repeats ran" &&
  { grep -Eq "^  load_factor: [0-9.]+$" "$profile" || { REASON="no method.load_factor" && false; }; }
verdict "profile --device cpu measures every distinct layer at each micro-batch"

run "$bin" validate "$profile"
expect_rc 0 && expect_in out "ok: profile gpt-tiny on" && expect_in out "(measured, fp32, seq 64"
verdict "the measured profile validates"

run "$bin" plan --model "$tiny" --cluster "$cpu" --profile "$profile" --global-batch 8 --seq 64 \
  -o "$WORK/plan.yaml"
expect_rc 0 && expect_in out "predicted step time"
verdict "plan --profile plans from the measured profile"

run "$bin" profile "$tiny" --micro-batch 1 --seq 8 --clock cpu "${quick[@]}" -o "$WORK/cpu.yaml"
expect_rc 0 && expect_in out "thread CPU time" && expect_in out "seq 8"
verdict "profile without --device measures on the CPU, here with --clock cpu"

# bad REASON EXIT TEXT ARGS...: the profile fails with EXIT, stderr holds TEXT, no file.
bad() {
  local reason=$1 code=$2 text=$3
  shift 3
  run "$bin" profile "$@" -o "$WORK/bad.yaml"
  expect_rc "$code" && expect_in err "$text" && [[ ! -e $WORK/bad.yaml ]]
  verdict "$reason"
}
bad "--device tpu: exit 1, names the flag and the fix" 1 "--device tpu: unknown device; use cpu" \
  "$tiny" --device tpu
# Without CUDA in the build, or without a GPU: the cause, then the fix.
bad "--device cuda here: exit 1 with the fix" 1 "or use --device cpu" "$tiny" --device cuda
bad "--tp 3 does not divide 4 heads" 1 "--tp 3: tp 3 does not divide" "$tiny" --tp 3
bad "--tp 2 without mpirun says how to run it" 1 "mpirun -np 2" "$tiny" --tp 2
bad "--seq above max_seq_len" 1 "--seq 65 exceeds gpt-tiny's max_seq_len 64" "$tiny" --seq 65
bad "--dtype fp16: no loss scaling" 1 "--dtype fp16: the runtime does not train in fp16" \
  "$tiny" --dtype fp16
bad "--clock cpu with 2 threads" 1 "use --threads 1" "$tiny" --clock cpu --threads 2
bad "--time-budget-s 0" 1 "--time-budget-s" "$tiny" --time-budget-s 0
bad "no MODEL: usage error" 2 "MODEL is required" --device cpu
bad "--comm without --cluster: usage error" 2 "--comm needs --cluster" --comm
bad "--analytic without --cluster: usage error" 2 "--analytic needs --cluster" "$tiny" --analytic
bad "--analytic with --device: usage error" 2 "drop --device" "$tiny" --analytic --device cpu \
  --cluster "$cpu"

summary 16
