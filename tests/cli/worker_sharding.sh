#!/usr/bin/env bash
# Usage: worker_sharding.sh WORKER_BIN MPIRUN [MPIRUN_FLAG...]
#
# Optimizer, gradient and parameter sharding (dp_sharding: optimizer, gradients, full) under
# mpirun: gpt-tiny
# trained 20 steps with dp 2, dp 4, tp 2 x dp 2, pp 2 x dp 2 (the tie split) and hybrid groups
# of 2 in dp 4, under AdamW (clipping, weight decay, small buckets) and SGD with momentum, gives
# the losses of the same layout unsharded within 1e-5 relative (and, under SGD, its final
# parameters); the measured peak memory falls from unsharded to optimizer to gradient to full
# sharding; a checkpoint of a fully sharded run resumes unsharded under another dp with the same
# losses; a killed rank ends a fully sharded job.
# shellcheck source=testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/testlib.sh"
# shellcheck source=plan_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/plan_lib.sh"

worker=$1
mpirun=$2
shift 2
mpi_flags=("$@")
steps=20
adamw=(--optimizer adamw --lr 3e-3 --weight-decay 0.1 --clip-grad 0.5 --warmup-steps 2
  --decay-steps 20 --bucket-mb 0.01)
sgd=(--optimizer sgd --lr 0.1 --momentum 0.9)

# sharded NAME LEVEL [DP_SHARD]: NAME.yaml with its sharding set, as NAME-LEVEL.yaml.
sharded() {
  sed '/^dp_sharding:\|^dp_shard:/d' "$WORK/$1.yaml" >"$WORK/$1-$2.yaml"
  printf 'dp_sharding: %s\n' "$2" >>"$WORK/$1-$2.yaml"
  [[ -z ${3:-} ]] || printf 'dp_shard: %s\n' "$3" >>"$WORK/$1-$2.yaml"
}

# train PLAN NP OUT [worker flags...]
train() {
  local plan=$1 np=$2 out=$3
  shift 3
  run timeout 180 "$mpirun" -np "$np" "${mpi_flags[@]}" "$worker" "$WORK/$plan.yaml" \
    --data synthetic --steps "$steps" --out "$WORK/$out" --save "$WORK/$out/ckpt" --quiet "$@"
}

compare() {  # REFERENCE RUN MODE
  REASON=$(python3 "$(dirname "${BASH_SOURCE[0]}")/compare_runs.py" "$WORK/$1" "$WORK/$2" \
    "$steps" "$3" 2>&1)
}

# The largest peak of any rank in a run's metrics (bytes).
peak() {
  python3 -c 'import json,sys; print(max(json.loads(l)["peak_memory_bytes"] for l in open(sys.argv[1])))' \
    "$WORK/$1/metrics.jsonl"
}

# check NAME NP DESCRIPTION [DP_SHARD [FULL_SAVES]]: unsharded and every sharded level, AdamW
# and SGD. FULL_SAVES "no": full sharding is not expected to lower the peak below gradient
# sharding, as where a rank's sharded parameters are one block (the split tie's table stays
# whole): the chunks saved weigh less than a gathered layer with its all-gather buffer.
check() {
  local name=$1 np=$2 what=$3 level
  sharded "$name" none
  for level in optimizer gradients full; do sharded "$name" "$level" "${4:-}"; done
  for opt in adamw sgd; do
    local -n flags=$opt
    train "$name-none" "$np" "$name-none-$opt" "${flags[@]}"
    expect_rc 0
    verdict "$what, $opt, unsharded: trains"
    local mode=losses
    [[ $opt == sgd ]] && mode=params
    for level in optimizer gradients full; do
      train "$name-$level" "$np" "$name-$level-$opt" "${flags[@]}"
      expect_rc 0 && compare "$name-none-$opt" "$name-$level-$opt" "$mode"
      verdict "$what, $opt: $level sharding gives the unsharded $mode"
    done
  done
  local whole shard grads full
  whole=$(peak "$name-none-adamw")
  shard=$(peak "$name-optimizer-adamw")
  grads=$(peak "$name-gradients-adamw")
  full=$(peak "$name-full-adamw")
  REASON="peak $whole bytes unsharded, $shard optimizer, $grads gradients, $full full"
  if [[ ${5:-yes} == yes ]]; then
    ((full < grads && grads < shard && shard < whole))
    verdict "$what: the peak falls from unsharded to optimizer to gradient to full sharding ($REASON)"
  else
    ((grads < shard && shard < whole))
    verdict "$what: the peak falls from unsharded to optimizer to gradient sharding ($REASON)"
  fi
}

tiny_plan dp2 2 2 2 1 1 1 2 4 1f1b "$(tiny_stage 0 5 2 none)"
check dp2 2 "dp 2"
tiny_plan dp4 4 4 4 1 1 1 2 4 1f1b "$(tiny_stage 0 5 4 none)"
check dp4 4 "dp 4"
check dp4 4 "hybrid groups of 2 in dp 4" 2
tiny_plan tp2_dp2 4 4 2 1 2 1 2 4 1f1b "$(tiny_stage 0 5 2 none)"
check tp2_dp2 4 "tp 2 x dp 2"
tiny_plan pp2_dp2 4 4 2 2 1 1 2 4 1f1b "$(tiny_stage 0 2 2 none)
$(tiny_stage 2 3 2 full)"
check pp2_dp2 4 "pp 2 x dp 2 with the tie split" "" no

# A fully sharded dp 4 checkpoint at step 10 resumed unsharded under dp 2: steps 11-20 as
# straight.
train dp4-full 4 resume-src "${adamw[@]}" --save-every 10
expect_rc 0
train dp2-none 2 resumed "${adamw[@]}" --load "$WORK/resume-src/ckpt/step-10.safetensors"
expect_rc 0 && compare resume-src resumed losses
verdict "a fully sharded dp 4 checkpoint resumes unsharded under dp 2 with the same losses"

# A killed rank during fully sharded training ends the job, naming no half-written checkpoint.
"$mpirun" -np 4 "${mpi_flags[@]}" "$worker" "$WORK/dp4-full.yaml" --data synthetic \
  --steps 1000000 --out "$WORK/killed" --save "$WORK/killed/ckpt" --save-every 5 --quiet \
  >"$WORK/out" 2>"$WORK/err" &
job=$!
for _ in $(seq 150); do
  [[ -s $WORK/killed/metrics.jsonl ]] && break
  sleep 0.2
done
victim=$(pgrep -f "trident-worker $WORK/dp4-full.yaml" | tail -1)
kill -9 "$victim"
for _ in $(seq 300); do
  kill -0 "$job" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$job" 2>/dev/null; then
  kill -9 "$job"
  REASON="the job still runs 30 s after a rank was killed"
  false
else
  partial=$(find "$WORK/killed" -path '*/ckpt/*' ! -name '*.safetensors' 2>/dev/null)
  REASON="a partial file in the checkpoint folder: $partial"
  [[ -z $partial ]]
fi
verdict "a killed rank ends a fully sharded job, leaving only whole checkpoints"

summary 47
