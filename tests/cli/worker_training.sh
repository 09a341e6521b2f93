#!/usr/bin/env bash
# Usage: worker_training.sh WORKER_BIN MPIRUN [MPIRUN_FLAG...]
#
# trident-worker under mpirun, end to end: gpt-tiny trained for 10 steps under many plans — every
# synchronous schedule, pp 2 and 4 with uneven cuts and mixed recompute, tp 2, dp 2, a stage
# replicated beside one that is not, replicas {3, 1}, {2, 1, 1} and {1, 3, 1} that do not divide
# the micro-batches (round robin), interleaved with v 2, (dp 2, pp 2, tp 2) on 8 ranks, tp 2
# with sequence parallelism (alone, under pp 2 with zb_h1, and in the 8-rank mesh), cp 2 (alone,
# with tp 2 and sequence parallelism, under pp 2), tied
# embeddings split across the first and last stage — gives the losses and the final parameters of
# the single-process run within 1e-5 relative. Then: a checkpoint resumed under another plan
# continues the same loss curve; PipeDream with replicas trains and resumes; a killed rank ends
# the job within 30 s; a non-finite loss, a wrong world size and a missing checkpoint each end
# with exit 1 and a clear message.
# shellcheck source=testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/testlib.sh"
# shellcheck source=plan_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/plan_lib.sh"

worker=$1
mpirun=$2
shift 2
mpi_flags=("$@")
steps=10
# SGD with momentum for the comparisons of parameters: Adam divides each step by sqrt(v), and
# the key bias's gradient is zero up to rounding (softmax ignores a shift shared by all keys),
# so Adam turns rounding noise into lr-sized steps there; its losses are compared below.
optimizer=(--optimizer sgd --lr 0.1 --momentum 0.9)

# plan NAME DEVICES DP PP TP V MICRO_BATCH MICRO_BATCHES SCHEDULE STAGE_LINES
plan() { tiny_plan "$1" "$2" "$2" "$3" "$4" "$5" "$6" "$7" "$8" "$9" "${10}"; }

stage() { tiny_stage "$@"; }

# train NAME NP [worker flags...]: runs the plan NAME; output in $WORK/NAME.
train() {
  local name=$1 np=$2
  shift 2
  run timeout 120 "$mpirun" -np "$np" "${mpi_flags[@]}" "$worker" "$WORK/$name.yaml" \
    --data synthetic --steps "$steps" --out "$WORK/$name" --save "$WORK/$name/ckpt" --quiet \
    "${optimizer[@]}" "$@"
}

# Losses (metrics.jsonl, rank 0) and the final checkpoint of NAME against those of REFERENCE.
same_as_single() {  # NAME [REFERENCE [losses]]
  REASON=$(python3 "$(dirname "${BASH_SOURCE[0]}")/compare_runs.py" "$WORK/${2:-single}" \
    "$WORK/$1" "$steps" "${3:-params}" 2>&1)
}

two="$(stage 0 2 1 none)
$(stage 2 3 1 none)"
plan single 1 1 1 1 1 2 4 1f1b "$(stage 0 5 1 none)"
train single 1 --save-every 3
expect_rc 0 && [[ -s $WORK/single/ckpt/step-$steps.safetensors ]]
verdict "the single-process reference trains"

check_plan() {  # NAME NP DESCRIPTION
  train "$1" "$2"
  expect_rc 0 && same_as_single "$1"
  verdict "$3: same losses and parameters as one process"
}

for kind in gpipe 1f1b zb_h1; do
  plan "pp2_$kind" 2 1 2 1 1 2 4 "$kind" "$two"
  check_plan "pp2_$kind" 2 "$kind, pp 2"
done
plan pp4 4 1 4 1 1 2 4 1f1b "$(stage 0 1 1 none)
$(stage 1 1 1 full)
$(stage 2 1 1 selective)
$(stage 3 2 1 none)"
check_plan pp4 4 "1f1b, pp 4, uneven cuts, recompute full and selective"
plan pp4_zb 4 1 4 1 1 1 8 zb_h1 "$(stage 0 2 1 none)
$(stage 2 1 1 full)
$(stage 3 1 1 none)
$(stage 4 1 1 none)"
check_plan pp4_zb 4 "zb_h1, pp 4, micro-batch 1 x 8"
plan interleaved 2 1 2 1 2 2 4 interleaved_1f1b "$(stage 0 1 1 none)
$(stage 1 1 1 none)
$(stage 2 1 1 none)
$(stage 3 2 1 selective)"
check_plan interleaved 2 "interleaved 1f1b, pp 2, v 2"
plan tp2 2 1 1 2 1 2 4 1f1b "$(stage 0 5 1 none)"
check_plan tp2 2 "tp 2"
plan dp2 2 2 1 1 1 2 4 1f1b "$(stage 0 5 2 full)"
check_plan dp2 2 "dp 2 with full recompute"
plan replicated 3 2 2 1 1 2 4 1f1b "$(stage 0 2 2 none)
$(stage 2 3 1 none)"
check_plan replicated 3 "stage 0 replicated twice beside stage 1 alone"
plan mesh8 8 2 2 2 1 2 4 1f1b "$(stage 0 3 2 none)
$(stage 3 2 2 full)"
check_plan mesh8 8 "dp 2 x pp 2 x tp 2 on 8 ranks"

# Sequence parallelism: tp 2 alone, under a pipeline whose zb_h1 defers the weight gradients
# (which gather the sharded norm outputs again), and in the 8-rank mesh with the tie split.
sp=true plan tp2_sp 2 1 1 2 1 2 4 1f1b "$(stage 0 5 1 selective)"
check_plan tp2_sp 2 "tp 2 with sequence parallelism"
sp=true plan pp2_tp2_sp 4 1 2 2 1 2 4 zb_h1 "$two"
check_plan pp2_tp2_sp 4 "zb_h1, pp 2 x tp 2 with sequence parallelism"
sp=true plan mesh8_sp 8 2 2 2 1 2 4 1f1b "$(stage 0 3 2 none)
$(stage 3 2 2 full)"
check_plan mesh8_sp 8 "dp 2 x pp 2 x tp 2 with sequence parallelism on 8 ranks"

# Context parallelism: cp 2 alone, with tp 2 and sequence parallelism, and under pp 2 with the
# tie split (the tied table's gradient summed over both positions' cp ranks).
cp=2 plan cp2 2 1 1 1 1 2 4 1f1b "$(stage 0 5 1 none)"
check_plan cp2 2 "cp 2"
cp=2 sp=true plan cp2_tp2_sp 4 1 1 2 1 2 4 1f1b "$(stage 0 5 1 selective)"
check_plan cp2_tp2_sp 4 "cp 2 x tp 2 with sequence parallelism"
cp=2 plan cp2_pp2 4 1 2 1 1 2 4 1f1b "$(stage 0 2 1 none)
$(stage 2 3 1 full)"
check_plan cp2_pp2 4 "cp 2 x pp 2 with the tie split"

# Replicas that do not divide the micro-batches take them round robin (j on replica j mod r):
# {3, 1} with 4 micro-batches gives position 0 lanes of 2, 1 and 1; {2, 1, 1} with 5 gives
# lanes of 3 and 2 (against a one-process run of the same 10 sequences).
plan single5 1 1 1 1 1 2 5 1f1b "$(stage 0 5 1 none)"
train single5 1
expect_rc 0
verdict "the single-process reference of 5 micro-batches trains"
for kind in gpipe 1f1b zb_h1; do
  plan "r31_$kind" 4 3 2 1 1 2 4 "$kind" "$(stage 0 2 3 none)
$(stage 2 3 1 none)"
  check_plan "r31_$kind" 4 "$kind, replicas {3, 1} over 4 micro-batches"
  plan "r211_$kind" 4 2 3 1 1 2 5 "$kind" "$(stage 0 2 2 none)
$(stage 2 2 1 none)
$(stage 4 1 1 none)"
  train "r211_$kind" 4
  expect_rc 0 && same_as_single "r211_$kind" single5
  verdict "$kind, replicas {2, 1, 1} over 5 micro-batches: same losses and parameters as one process"
done
# Position 1 has more replicas than position 0 can feed: its lanes run with less warm-up
# (core/replica_lanes.h) rather than deadlock.
plan r131 5 3 3 1 1 2 4 1f1b "$(stage 0 2 1 none)
$(stage 2 2 3 none)
$(stage 4 1 1 none)"
check_plan r131 5 "1f1b, replicas {1, 3, 1} over 4 micro-batches"

# naive model parallelism needs one micro-batch: the same 8 sequences as one micro-batch.
plan naive 2 1 2 1 1 8 1 naive "$two"
check_plan naive 2 "naive, pp 2, one micro-batch of 8"

# Resume, with AdamW (whose moments the checkpoint carries): 6 steps under pp 2 saving at
# step 3, against steps 4-6 from that checkpoint under tp 2.
optimizer=(--optimizer adamw --lr 1e-3 --warmup-steps 2 --decay-steps 6 --clip-grad 1.0)
steps=6
train pp2_1f1b 2 --save-every 3
expect_rc 0 && mv "$WORK/pp2_1f1b" "$WORK/adam"
cp "$WORK/tp2.yaml" "$WORK/resumed.yaml"
train resumed 2 --load "$WORK/adam/ckpt/step-3.safetensors"
expect_rc 0 && same_as_single resumed adam losses &&
  [[ $(wc -l <"$WORK/resumed/metrics.jsonl") -eq 6 ]]
verdict "an AdamW checkpoint of a pp 2 run resumed under tp 2 continues the same losses"

# bf16 (mixed precision) resumes exactly: the checkpoint holds the fp32 master weights and the
# moments, and the bf16 values are the masters rounded, so steps 4-6 from the step-3 checkpoint
# repeat the uninterrupted run's losses; on one rank, and on pp 2 with the tie split (bf16
# activations through the pipeline, the head's copy of the table and its masters).
plan pp2_bf16 2 1 2 1 1 2 4 1f1b "$two"
for name in single pp2_bf16; do
  sed 's/^dtype: fp32$/dtype: bf16/' "$WORK/$name.yaml" >"$WORK/bf16_$name.yaml"
  cp "$WORK/bf16_$name.yaml" "$WORK/bf16_${name}_resumed.yaml"
  np=$(grep -q '^mesh: {dp: 1, pp: 2' "$WORK/$name.yaml" && echo 2 || echo 1)
  train "bf16_$name" "$np" --save-every 3
  expect_rc 0 && grep -q '^dtype: bf16$' "$WORK/bf16_$name.yaml"
  train "bf16_${name}_resumed" "$np" --load "$WORK/bf16_$name/ckpt/step-3.safetensors"
  expect_rc 0 && same_as_single "bf16_${name}_resumed" "bf16_$name" losses
  verdict "a bf16 run ($name) resumed from its checkpoint continues the same losses"
done

# PipeDream (asynchronous, weight stashing; untied embeddings): the update rule is checked
# against a one-process re-implementation in tests/runtime/train/pipedream_test.cc. Here it
# runs under mpirun with replicated stages (a gradient sum per update) and resumes from a
# checkpoint with the same losses.
# shellcheck disable=SC2034  # read by plan_lib.sh's tiny_plan
tied=false
optimizer=(--optimizer adamw --lr 1e-3 --warmup-steps 2)
plan pipedream 4 2 2 1 1 1 4 pipedream "$(stage 0 2 2 none)
$(stage 2 3 2 none)"
train pipedream 4 --save-every 3
expect_rc 0 && mv "$WORK/pipedream" "$WORK/async"
train pipedream 4 --load "$WORK/async/ckpt/step-3.safetensors"
expect_rc 0 && same_as_single pipedream async losses &&
  [[ $(wc -l <"$WORK/async/metrics.jsonl") -eq $((4 * steps)) ]]
verdict "pipedream, dp 2 x pp 2: trains under mpirun and resumes with the same losses"
# Without replicas, under tp 2: sequence parallelism changes nothing but where the norms run.
plan pipedream_tp2 4 1 2 2 1 1 4 pipedream "$two"
train pipedream_tp2 4
sp=true plan pipedream_tp2_sp 4 1 2 2 1 1 4 pipedream "$two"
train pipedream_tp2_sp 4
expect_rc 0 && same_as_single pipedream_tp2_sp pipedream_tp2 losses
verdict "pipedream, pp 2 x tp 2: the same losses with sequence parallelism as without"
# shellcheck disable=SC2034
tied=true

run timeout 60 "$mpirun" -np 1 "${mpi_flags[@]}" "$worker" "$WORK/tp2.yaml" --data synthetic \
  --out "$WORK/wrong"
expect_rc 1 && expect_in err "the plan needs 2 ranks" && expect_in err "mpirun -np 2"
verdict "a plan for another world size is refused"

run timeout 60 "$mpirun" -np 2 "${mpi_flags[@]}" "$worker" "$WORK/tp2.yaml" --data synthetic \
  --out "$WORK/missing" --load "$WORK/nowhere.safetensors"
expect_rc 1 && expect_in err "nowhere.safetensors"
verdict "a missing checkpoint is named"

run timeout 60 "$mpirun" -np 2 "${mpi_flags[@]}" "$worker" "$WORK/pp2_1f1b.yaml" --data synthetic \
  --out "$WORK/nan" --lr 1e30 --optimizer sgd
expect_rc 1 && expect_in err "the loss is not finite" && expect_match err "step [0-9]+" &&
  expect_match err "rank [01] \(dp 0, pp [01], tp 0\)\] error: .*not finite"
verdict "a non-finite loss stops training with the step, the stage and the rank's coordinates"

# A killed rank: the job must end within 30 s, with mpirun naming the dead process.
"$mpirun" -np 2 "${mpi_flags[@]}" "$worker" "$WORK/pp2_1f1b.yaml" --data synthetic \
  --steps 1000000 --out "$WORK/killed" --quiet >"$WORK/out" 2>"$WORK/err" &
job=$!
for _ in $(seq 100); do
  [[ -s $WORK/killed/metrics.jsonl ]] && break
  sleep 0.2
done
victim=$(pgrep -f "trident-worker $WORK/pp2_1f1b.yaml" | tail -1)
start=$(date +%s)
kill -9 "$victim"
for _ in $(seq 300); do
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
elapsed=$(($(date +%s) - start))
if kill -0 "$job" 2>/dev/null; then
  kill -9 "$job"
  REASON="the job still runs $elapsed s after a rank was killed"
  false
else
  wait "$job"
  RC=$?
  expect_rc_nonzero() { ((RC != 0)) || { REASON="exit status 0"; return 1; }; }
  expect_rc_nonzero && expect_match err "(signal 9|Killed|exited)"
fi
verdict "a killed rank ends the job within 30 s ($elapsed s)"

summary 31
