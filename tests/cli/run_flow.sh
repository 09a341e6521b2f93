#!/usr/bin/env bash
# Usage: run_flow.sh TRIDENT_BIN SOURCE_ROOT
#
# trident run end to end on this machine: gpt-tiny profiled, planned, launched on 2 ranks and
# trained for a few steps, ending with the measured-against-predicted summary and its files;
# a second run reuses both cached profiles; tp 2 with sequence parallelism and cp 2 run with
# their peak memory within 10% of the plan's, and so do dp 2 unsharded and with optimizer
# sharding; bf16 trains as fp32 does (loss within 2%) under dp, tp with sequence parallelism,
# cp, pp and sharding, with its peak memory within 10% of its plan's; bad requests fail before
# anything starts, and --device cuda without a GPU stops at its first step with CUDA's reason.
# shellcheck source=testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/testlib.sh"

trident=$1
root=$2
cd "$root" || exit 1
job=(run configs/models/gpt-tiny.yaml --devices 2 --global-batch 8 --steps 3 --seq 32
  --cache "$WORK/cache" --data synthetic)
flow=("${job[@]}" --micro-batch 1,2)

run timeout 300 "$trident" "${flow[@]}" --out "$WORK/first" -- --quiet
expect_rc 0 && expect_in out "[1/4] layer profile: measuring" &&
  expect_in out "[2/4] link profile: point-to-point" && expect_in out "[3/4] plan" &&
  expect_in out "[4/4] train" && expect_in out "measured against predicted, per pipeline" &&
  [[ -s $WORK/first/plan.yaml && -s $WORK/first/summary.json && -s $WORK/first/trace.json ]] &&
  [[ $(grep -c '"step":3' "$WORK/first/metrics.jsonl") -eq 2 ]] &&
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["steps"] == [2, 3], d["steps"]
assert d["step_time_ms"]["measured"] > 0 and d["step_time_ms"]["predicted"] > 0
assert all(p["compute_ms"]["predicted"] > 0 for p in d["positions"])
' "$WORK/first/summary.json"
verdict "profiles, plans, launches and trains gpt-tiny on 2 ranks, with its summary"

run timeout 300 "$trident" "${flow[@]}" --out "$WORK/second" -- --quiet
expect_rc 0 && expect_in out "[1/4] layer profile: reusing $WORK/cache/profile-gpt-tiny-" &&
  expect_in out "[2/4] link profile: reusing $WORK/cache/cluster-" &&
  [[ $(find "$WORK/cache" -name '*.yaml' | wc -l) -eq 2 ]]
verdict "a second run reuses both cached profiles"

# peak_as_planned NAME: the run in $WORK/NAME measured a peak memory within 10% of its plan's.
peak_as_planned() {
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["peak_memory_bytes"]
assert abs(d["measured"] / d["predicted"] - 1) <= 0.10, d
' "$WORK/$1/summary.json"
}

# tp 2 with sequence parallelism through the whole flow: the profile measures the layers with it,
# the plan says so, and the measured peak memory is the plan's within 10%.
run timeout 300 "$trident" "${flow[@]}" --fix tp=2 --sequence-parallel on --out "$WORK/sp" \
  -- --quiet
expect_rc 0 && grep -q '^sequence_parallel: true$' "$WORK/sp/plan.yaml" && peak_as_planned sp
verdict "tp 2 with sequence parallelism: planned, trained, peak memory within 10% of the plan"

# cp 2 through the whole flow: --fix cp=2 has the profile measure the layers at cp 2 too, the plan
# splits each sequence over both ranks, and the measured peak memory is the plan's within 10%.
run timeout 300 "$trident" "${flow[@]}" --fix cp=2 --out "$WORK/cp" -- --quiet
expect_rc 0 && grep -q '^mesh: {dp: 1, pp: 1, cp: 2, tp: 1}$' "$WORK/cp/plan.yaml" &&
  peak_as_planned cp
verdict "cp 2: profiled, planned, trained, peak memory within 10% of the plan"

# dp 2 unsharded and at each sharding level: each trains with its peak memory the plan's within
# 10%, and each level lowers the measured peak; each but full lowers the plan's too (gpt-tiny's
# layers are so large against its parameters that the plan rates full's gathered layer above
# the half of the parameters it saves: 2.10 MB against gradients' 2.05, measured 2.12 and 2.16).
# The micro-batch is fixed, so that only the level differs (the planner picks it by measured
# time, and a smaller micro-batch holds less).
for level in none optimizer gradients full; do
  run timeout 300 "$trident" "${job[@]}" --micro-batch 2 --fix dp=2 --dp-sharding "$level" \
    --out "$WORK/dp2-$level" -- --quiet
  expect_rc 0 && grep -q "^dp_sharding: $level$" "$WORK/dp2-$level/plan.yaml" &&
    peak_as_planned "dp2-$level"
  verdict "dp 2, dp_sharding $level: planned, trained, peak memory within 10% of the plan"
done
python3 -c '
import json, sys
peak = lambda level: json.load(open(sys.argv[1] + "/dp2-" + level + "/summary.json"))["peak_memory_bytes"]
levels = [peak(level) for level in ("none", "optimizer", "gradients", "full")]
for more, less in zip(levels, levels[1:]):
  assert less["measured"] < more["measured"], (more, less)
for more, less in zip(levels[:3], levels[1:3]):
  assert less["predicted"] < more["predicted"], (more, less)
' "$WORK" 2>"$WORK/err" || { REASON=$(cat "$WORK/err") && false; }
verdict "optimizer, gradient and full sharding in turn lower the measured peak (the planned one up to full)"

# bf16 mixed precision against fp32, dp 2 for 200 steps from one seed: the bf16 flow profiles
# the layers in bf16 (the planner takes a profile of the plan's dtype only) and plans one
# unsharded stage (what the runtime runs in bf16), its final
# loss is fp32's within 2%, and its measured peak memory the bf16 plan's within 10%.
for dtype in fp32 bf16; do
  run timeout 300 "$trident" run configs/models/gpt-tiny.yaml --devices 2 --global-batch 8 \
    --steps 200 --seq 32 --cache "$WORK/cache" --data synthetic --micro-batch 2 --fix dp=2 \
    --dtype "$dtype" --out "$WORK/dp2-$dtype" -- --quiet
  expect_rc 0 && grep -q "^dtype: $dtype$" "$WORK/dp2-$dtype/plan.yaml" &&
    peak_as_planned "dp2-$dtype"
  verdict "dp 2 in $dtype: profiled, planned, trained 200 steps, peak memory within 10% of the plan"
done
# bf16 across ranks: activations through tp (with sequence parallelism), cp and the pipeline,
# values gathered by optimizer and full sharding; 30 steps each, peak memory the plan's within 10%.
bf16_layouts=("tp2sp|--fix tp=2 --sequence-parallel on" "cp2|--fix cp=2" "pp2|--fix pp=2"
  "optimizer|--fix dp=2 --dp-sharding optimizer" "full|--fix dp=2 --dp-sharding full")
for layout in "${bf16_layouts[@]}"; do
  name=bf16-${layout%%|*}
  # shellcheck disable=SC2086  # the fix flags split into words
  run timeout 300 "$trident" run configs/models/gpt-tiny.yaml --devices 2 --global-batch 8 \
    --steps 30 --seq 32 --cache "$WORK/cache" --data synthetic --micro-batch 2 --dtype bf16 \
    ${layout#*|} --out "$WORK/$name" -- --quiet
  expect_rc 0 && grep -q "^dtype: bf16$" "$WORK/$name/plan.yaml" && peak_as_planned "$name"
  verdict "bf16 with ${layout#*|}: profiled, planned, trained, peak memory within 10% of the plan"
done
python3 -c '
import json, sys
def loss(run, step):
  rows = [json.loads(l) for l in open(sys.argv[1] + "/" + run + "/metrics.jsonl")]
  return [r["loss"] for r in rows if r["step"] == step and r["rank"] == 0][0]
fp32, bf16 = loss("dp2-fp32", 200), loss("dp2-bf16", 200)
assert abs(bf16 / fp32 - 1) <= 0.02, (fp32, bf16)
print("  final loss: fp32 %.4f, bf16 %.4f" % (fp32, bf16))
for name in sys.argv[2:]:
  got = loss(name, 30)
  assert abs(got / loss("dp2-fp32", 30) - 1) <= 0.02, (name, got)
  print("  step 30: %s %.4f (fp32 %.4f)" % (name, got, loss("dp2-fp32", 30)))
' "$WORK" bf16-tp2sp bf16-cp2 bf16-pp2 bf16-optimizer bf16-full 2>"$WORK/err" ||
  { REASON=$(cat "$WORK/err") && false; }
verdict "bf16's loss is fp32's within 2%: after 200 steps on dp 2, and after 30 under each layout"

run "$trident" run configs/models/gpt-tiny.yaml --cluster "$WORK/nowhere.yaml" --out "$WORK/bad"
expect_rc 1 && expect_in err "--cluster $WORK/nowhere.yaml: no such file" && [[ ! -e $WORK/bad ]]
verdict "a missing cluster file is named before anything starts"

run "$trident" run configs/models/gpt-tiny.yaml --dp-sharding none,zero3 --out "$WORK/bad"
expect_rc 2 &&
  expect_in err "--dp-sharding: 'zero3' is not a sharding level (none, optimizer, gradients, full)" &&
  [[ ! -e $WORK/bad ]]
verdict "an unknown sharding level is named before anything starts"

run "$trident" run configs/models/gpt-tiny.yaml --devices 3 --out "$WORK/bad"
expect_rc 1 && expect_in err "--devices 3: cluster local-cpu" && expect_in err "has 2 devices" &&
  [[ ! -e $WORK/bad ]]
verdict "more ranks than the cluster has devices are refused"

run "$trident" run configs/models/gpt-tiny.yaml --device cuda --out "$WORK/bad"
expect_rc 1 && expect_in err "--device cuda needs --cluster FILE describing this machine's GPUs" &&
  [[ ! -e $WORK/bad ]]
verdict "--device cuda without --cluster is refused before anything starts"

if ! nvidia-smi -L >/dev/null 2>&1; then  # with GPUs, scripts/gpu-check runs the GPU path
  run "$trident" run configs/models/gpt-tiny.yaml --device cuda --cluster configs/clusters/dgx-h100.yaml \
    --out "$WORK/bad"
  expect_rc 1 && expect_in err "--device cuda: the NVIDIA driver lists no GPU on this machine" &&
    [[ ! -e $WORK/bad ]]
  verdict "--device cuda on a machine without a GPU and no --devices is refused before anything starts"

  run "$trident" run configs/models/gpt-tiny.yaml --device cuda --devices 1 --global-batch 8 \
    --steps 3 --seq 32 --cluster configs/clusters/dgx-h100.yaml --cache "$WORK/cache" \
    --out "$WORK/nogpu"
  expect_rc 1 && expect_in out "trident run: gpt-tiny on 1 cuda rank of dgx-h100" &&
    expect_in out "profile configs/models/gpt-tiny.yaml --device cuda" &&
    expect_in err "--device cuda: " && expect_in err "[1/4] layer profile: measuring on this machine failed" &&
    [[ ! -e $WORK/nogpu/plan.yaml ]]
  verdict "--device cuda on a machine without a GPU stops at the layer profile, naming CUDA's reason"
fi

summary 21
