#!/usr/bin/env bash
# Usage: plan_commands.sh TRIDENT_BIN SOURCE_DIR
#
# trident plan, simulate, explain and export end to end: a plan is written, read back,
# simulated to the same prediction, explained, exported as a Megatron-LM script; impossible
# requests fail with exit 1 and write nothing.
# shellcheck source=testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/testlib.sh"

bin=$1
configs=$2/configs
a100=$configs/clusters/dgx-a100-80gb.yaml
plan=$WORK/plan.yaml

run "$bin" plan --model "$configs/models/gpt3-175b.yaml" --cluster "$a100" --devices 1024 \
  --global-batch 1536 --seq 2048 -o "$plan" --trace "$WORK/trace.json"
expect_rc 0 && expect_in out "predicted step time" && expect_in out "runners-up:" &&
  expect_match out "achieved per device +[0-9.]+ TFLOP/s \([0-9.]+% of peak\)"
verdict "plan gpt3-175b on 1024 A100s prints a summary"

run "$bin" validate "$plan"
expect_rc 0 && expect_in out "ok: plan gpt3-175b on 1024 devices"
verdict "the written plan validates"

run "$bin" simulate "$plan" --cluster "$a100" --json
expect_rc 0 && expect_json "abs(d['step_time_ms'] - float(args[0])) <= 1e-6 * d['step_time_ms']" \
  "$(sed -n 's/^  step_time_ms: //p' "$plan")"
verdict "simulate reproduces the plan's predicted step time"

python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); assert len(t["traceEvents"]) > 100' \
  "$WORK/trace.json" >"$WORK/out" 2>"$WORK/err"
RC=$?
expect_rc 0
verdict "plan --trace writes a Chrome trace"

run "$bin" explain "$plan" --cluster "$a100"
expect_rc 0 && expect_in out "bottleneck: stage" && expect_in out "recompute full" &&
  expect_in out "intra_node link: 0.77 of 300 GB/s (231 GB/s achieved), 3.4 µs a hop + 8.4 µs a collective"
verdict "explain names the bottleneck, the link assumptions and the neighbouring choices"

# export --to megatron: the plan's mesh and batch as Megatron-LM flags in a script bash parses.
run "$bin" plan --model "$configs/models/gpt3-1.3b.yaml" --cluster "$a100" --devices 32 \
  --global-batch 256 --seq 2048 --schedule 1f1b,interleaved_1f1b --dp-sharding none \
  -o "$WORK/mega.yaml"
tp=$(sed -n 's/^mesh: {dp: [0-9]*, pp: [0-9]*, cp: [0-9]*, tp: \([0-9]*\)}$/\1/p' "$WORK/mega.yaml")
run "$bin" export "$WORK/mega.yaml" --to megatron -o "$WORK/megatron.sh"
expect_rc 0 && expect_in out "wrote $WORK/megatron.sh" && [[ -x $WORK/megatron.sh ]] &&
  bash -n "$WORK/megatron.sh" && grep -qx "  --tensor-model-parallel-size $tp" "$WORK/megatron.sh" &&
  grep -qx "  --global-batch-size 256" "$WORK/megatron.sh" &&
  grep -qx "  --num-layers 24" "$WORK/megatron.sh"
verdict "export --to megatron writes the plan as a Megatron-LM launch script"

run "$bin" import megatron "$WORK/megatron.sh" -o "$WORK/back.yaml" --cluster "$a100" \
  --vocab-size 50257 --name gpt3-1.3b
expect_rc 0 && expect_in out "ignored (not part of a plan): --nodes" &&
  run "$bin" simulate "$WORK/back.yaml" --cluster "$a100" --json && expect_rc 0 &&
  expect_json "abs(d['step_time_ms'] - float(args[0])) <= 1e-6 * d['step_time_ms']" \
    "$(sed -n 's/^  step_time_ms: //p' "$WORK/mega.yaml")"
verdict "import megatron reads the script back to a plan simulate predicts as the original"

run "$bin" plan --model "$configs/models/gpt3-1.3b.yaml" --cluster "$a100" --devices 32 \
  --global-batch 256 --seq 2048 --fix tp=8,pp=2 --baseline "$WORK/back.yaml" -o "$WORK/fixed.yaml"
expect_rc 0 && expect_match out "^your configuration \($WORK/back.yaml\): .* a step" &&
  expect_match out "^Trident's plan: .* a step, .*: [0-9.]+% (faster|slower), with tp 8 instead of"
verdict "plan --baseline sets an imported configuration beside the plan, naming what differs"

run "$bin" plan --model "$configs/models/gpt3-1.3b.yaml" --cluster "$a100" --devices 32 \
  --global-batch 128 --seq 2048 --baseline "$WORK/back.yaml" -o "$WORK/other.yaml"
expect_rc 1 && expect_in err "has global batch 256, but the search is for 128" &&
  [[ ! -e $WORK/other.yaml ]]
verdict "plan --baseline of another job is refused before the search"

run "$bin" plan --model "$configs/models/gpt3-1.3b.yaml" --cluster "$a100" --devices 16 \
  --global-batch 64 --seq 2048 --fix pp=2 --schedule gpipe -o "$WORK/gpipe.yaml"
run "$bin" export "$WORK/gpipe.yaml" --to megatron -o "$WORK/gpipe.sh"
expect_rc 1 && expect_in err "cannot express 1 choice of this plan; nothing was written" &&
  expect_in err "schedule: Megatron-LM runs 1F1B and interleaved 1F1B, not gpipe" &&
  [[ ! -e $WORK/gpipe.sh ]]
verdict "export refuses a GPipe plan, naming the field and the fix, and writes nothing"

run "$bin" export "$WORK/gpipe.yaml" --to megatron --allow-approximate --cluster "$a100" \
  -o "$WORK/gpipe.sh"
expect_rc 0 && expect_in err "cannot express 1 choice of this plan; re-planning the job" &&
  expect_match err "^re-planned within Megatron-LM's choices: .* a step as planned, .* re-planned" &&
  bash -n "$WORK/gpipe.sh" && grep -q "re-planned within Megatron-LM's choices" "$WORK/gpipe.sh"
verdict "export --allow-approximate re-plans within Megatron-LM's choices and prints both steps"

# export --to deepspeed: ds_config.json's batch keys multiply out, the partition covers the model.
run "$bin" plan --model "$configs/models/gpt3-1.3b.yaml" --cluster "$a100" --devices 16 \
  --global-batch 64 --seq 2048 --fix tp=1,pp=2 --schedule 1f1b --recompute none,full \
  -o "$WORK/ds.yaml"
run "$bin" export "$WORK/ds.yaml" --to deepspeed -o "$WORK/ds"
expect_rc 0 && expect_in out "wrote $WORK/ds/ds_config.json, pipeline.json and launch.sh" &&
  bash -n "$WORK/ds/launch.sh" &&
  python3 - "$WORK/ds" <<'PY' >"$WORK/out" 2>"$WORK/err"
import json, sys
c = json.load(open(sys.argv[1] + "/ds_config.json"))
p = json.load(open(sys.argv[1] + "/pipeline.json"))
assert c["train_batch_size"] == 64 == c["train_micro_batch_size_per_gpu"] * c["gradient_accumulation_steps"] * 8, c
assert p["num_stages"] == 2 and p["parts"][0] == 0 and p["parts"][-1] == 27, p
PY
verdict "export --to deepspeed writes ds_config.json, pipeline.json and launch.sh that agree"

run "$bin" export "$WORK/gpipe.yaml" --to deepspeed -o "$WORK/gpipe-ds" --allow-approximate \
  --cluster "$a100"
expect_rc 0 && expect_in err "DeepSpeed cannot express 1 choice of this plan; re-planning" &&
  expect_match err "^re-planned within DeepSpeed's choices: .* re-planned \(tp [0-9]+ × pp [0-9]+" &&
  [[ -s $WORK/gpipe-ds/ds_config.json ]]
verdict "export --to deepspeed --allow-approximate re-plans within DeepSpeed's choices"

run "$bin" import deepspeed "$WORK/ds/ds_config.json" -o "$WORK/ds-back.yaml" --cluster "$a100" \
  --devices 16 --model "$configs/models/gpt3-1.3b.yaml" --seq 2048 --num-stages 2 \
  --parts "$(python3 -c 'import json,sys; print(",".join(map(str, json.load(open(sys.argv[1]))["parts"])))' "$WORK/ds/pipeline.json")"
expect_rc 0 && run "$bin" simulate "$WORK/ds-back.yaml" --cluster "$a100" --json && expect_rc 0 &&
  expect_json "abs(d['step_time_ms'] - float(args[0])) <= 1e-6 * d['step_time_ms']" \
    "$(sed -n 's/^  step_time_ms: //p' "$WORK/ds.yaml")"
verdict "import deepspeed reads the export back to a plan simulate predicts as the original"

# torchtitan: Llama 3 8B in fp32 on pp × tp (its data parallelism beside them is FSDP).
h100="$configs/clusters/dgx-h100.yaml"
run "$bin" plan --model "$configs/models/llama3-8b.yaml" --cluster "$h100" --devices 16 \
  --global-batch 32 --seq 2048 --dtype fp32 --fix dp=1 --schedule 1f1b -o "$WORK/tt.yaml"
run "$bin" export "$WORK/tt.yaml" --to torchtitan -o "$WORK/tt.toml"
expect_rc 0 && expect_in out "wrote $WORK/tt.toml: the torchtitan job" &&
  python3 -c 'import tomllib,sys; t=tomllib.load(open(sys.argv[1],"rb")); assert t["model"]["flavor"]=="8B", t' \
    "$WORK/tt.toml" &&
  run "$bin" import torchtitan "$WORK/tt.toml" -o "$WORK/tt-back.yaml" --cluster "$h100" \
    --devices 16 && expect_rc 0 && run "$bin" simulate "$WORK/tt-back.yaml" --cluster "$h100" --json &&
  expect_json "abs(d['step_time_ms'] - float(args[0])) <= 1e-6 * d['step_time_ms']" \
    "$(sed -n 's/^  step_time_ms: //p' "$WORK/tt.yaml")"
verdict "export --to torchtitan writes a job TOML that import torchtitan reads back to the same step"

run "$bin" plan --model "$configs/models/llama3-8b.yaml" --cluster "$h100" --devices 16 \
  --global-batch 32 --seq 2048 --fix dp=2,pp=2 --dp-sharding none -o "$WORK/tt-dp.yaml"
run "$bin" export "$WORK/tt-dp.yaml" --to torchtitan -o "$WORK/tt-dp.toml"
expect_rc 1 && expect_in err "mesh.dp: torchtitan's data parallelism beside tensor or pipeline" &&
  [[ ! -e $WORK/tt-dp.toml ]]
verdict "export --to torchtitan refuses unsharded data parallelism beside a pipeline and writes nothing"

printf '[model]\nflavor = "8B"\n[parallelism\n' >"$WORK/bad.toml"
run "$bin" import torchtitan "$WORK/bad.toml" -o "$WORK/bad.yaml" --cluster "$h100" --devices 8
expect_rc 1 && expect_in err "$WORK/bad.toml:3:" && [[ ! -e $WORK/bad.yaml ]]
verdict "import torchtitan of a file that is not TOML names the line and writes nothing"

# Sharding levels: a plan edited to a level exports and imports back to the same simulated step
# (simulate both: the edit keeps the file's prediction of the unsharded plan). Sequence
# parallelism is fixed on: torchtitan's tensor parallelism always runs it.
run "$bin" plan --model "$configs/models/llama3-8b.yaml" --cluster "$h100" --devices 32 \
  --global-batch 32 --seq 2048 --fix tp=4,pp=2,cp=1 --schedule 1f1b --recompute none,full \
  --sequence-parallel on -o "$WORK/shard.yaml"
run "$bin" plan --model "$configs/models/llama3-8b.yaml" --cluster "$h100" --devices 32 \
  --global-batch 32 --seq 2048 --fix tp=4,pp=1,cp=1 --recompute none,full \
  --sequence-parallel off -o "$WORK/shard-flat.yaml"
# `sharded BASE LEVEL DP_SHARD OUT`: the plan BASE at that level and hybrid group size.
sharded() {
  sed -e "s/^dp_sharding: .*/dp_sharding: $2/" -e "s/^dp_shard: .*/dp_shard: $3/" "$1" >"$4"
}
# `same_step A B`: simulate predicts the same step time for both plans.
same_step() {
  run "$bin" simulate "$1" --cluster "$h100" --json && expect_rc 0 || return 1
  local want
  want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_time_ms"])' \
    "$WORK/out")
  run "$bin" simulate "$2" --cluster "$h100" --json && expect_rc 0 &&
    expect_json "abs(d['step_time_ms'] - float(args[0])) <= 1e-6 * d['step_time_ms']" "$want"
}

sharded "$WORK/shard.yaml" full 2 "$WORK/m-full.yaml"
run "$bin" export "$WORK/m-full.yaml" --to megatron -o "$WORK/m-full.sh"
expect_rc 0 && grep -qx "  --use-megatron-fsdp" "$WORK/m-full.sh" &&
  grep -qx "  --data-parallel-sharding-strategy optim_grads_params" "$WORK/m-full.sh" &&
  grep -qx "  --num-distributed-optimizer-instances 2" "$WORK/m-full.sh" &&
  grep -qx "  --overlap-grad-reduce" "$WORK/m-full.sh" &&
  grep -qx "  --overlap-param-gather" "$WORK/m-full.sh" &&
  run "$bin" import megatron "$WORK/m-full.sh" -o "$WORK/m-full-back.yaml" --cluster "$h100" \
    --vocab-size 128256 --name llama3-8b && expect_rc 0 &&
  grep -qx "dp_sharding: full" "$WORK/m-full-back.yaml" &&
  grep -qx "dp_shard: 2" "$WORK/m-full-back.yaml" &&
  same_step "$WORK/m-full.yaml" "$WORK/m-full-back.yaml"
verdict "export --to megatron writes hybrid full sharding as Megatron FSDP and import reads it back"

# Overlap: the distributed optimizer's plan exports none (Trident costs the reduction after the
# backward); the line with --overlap-grad-reduce imports to the same plan with a note saying so.
sharded "$WORK/shard.yaml" optimizer 4 "$WORK/m-opt.yaml"
run "$bin" export "$WORK/m-opt.yaml" --to megatron -o "$WORK/m-opt.sh"
expect_rc 0 && grep -qx "  --use-distributed-optimizer" "$WORK/m-opt.sh" &&
  ! grep -q -- "^  --overlap" "$WORK/m-opt.sh" &&
  grep -q "^# Overlap as Trident predicts:" "$WORK/m-opt.sh" &&
  sed 's/^  --use-distributed-optimizer$/&\n  --overlap-grad-reduce/' "$WORK/m-opt.sh" >"$WORK/m-ovl.sh" &&
  run "$bin" import megatron "$WORK/m-ovl.sh" -o "$WORK/m-ovl.yaml" --cluster "$h100" \
    --vocab-size 128256 --name llama3-8b && expect_rc 0 &&
  expect_match out "^note: --overlap-grad-reduce: Megatron-LM reduces the first pipeline stage's" &&
  ! grep -q "^ignored.*--overlap" "$WORK/out" &&
  same_step "$WORK/m-opt.yaml" "$WORK/m-ovl.yaml"
verdict "export --to megatron writes the overlap Trident assumes; import notes the overlap it does not"

sharded "$WORK/shard.yaml" full 2 "$WORK/tt-full.yaml"
run "$bin" export "$WORK/tt-full.yaml" --to torchtitan -o "$WORK/tt-full.toml"
expect_rc 0 && python3 -c 'import tomllib,sys; p=tomllib.load(open(sys.argv[1],"rb"))["parallelism"]
assert (p["data_parallel_shard_degree"], p["data_parallel_replicate_degree"]) == (2, 2), p' \
  "$WORK/tt-full.toml" &&
  run "$bin" import torchtitan "$WORK/tt-full.toml" -o "$WORK/tt-full-back.yaml" \
    --cluster "$h100" --devices 32 && expect_rc 0 &&
  grep -qx "dp_sharding: full" "$WORK/tt-full-back.yaml" &&
  grep -qx "dp_shard: 2" "$WORK/tt-full-back.yaml" &&
  same_step "$WORK/tt-full.yaml" "$WORK/tt-full-back.yaml"
verdict "export --to torchtitan writes full sharding beside tp and pp as HSDP and import reads it back"

sharded "$WORK/shard.yaml" gradients 4 "$WORK/tt-grads.yaml"
run "$bin" export "$WORK/tt-grads.yaml" --to torchtitan -o "$WORK/tt-grads.toml"
expect_rc 1 && expect_in err "dp_sharding: torchtitan shards with FSDP" &&
  [[ ! -e $WORK/tt-grads.toml ]]
verdict "export --to torchtitan refuses sharding the gradients alone and writes nothing"

sharded "$WORK/shard-flat.yaml" full 0 "$WORK/ds-full.yaml"
run "$bin" export "$WORK/ds-full.yaml" --to deepspeed -o "$WORK/ds-full"
expect_rc 0 &&
  python3 -c 'import json,sys; z=json.load(open(sys.argv[1]))["zero_optimization"]; assert z == {"stage": 3}, z' \
    "$WORK/ds-full/ds_config.json" && grep -q "not a PipelineModule" "$WORK/ds-full/launch.sh" &&
  run "$bin" import deepspeed "$WORK/ds-full/ds_config.json" -o "$WORK/ds-full-back.yaml" \
    --cluster "$h100" --devices 32 --model "$configs/models/llama3-8b.yaml" --seq 2048 \
    --num-stages 1 && expect_rc 0 && grep -qx "dp_sharding: full" "$WORK/ds-full-back.yaml" &&
  same_step "$WORK/ds-full.yaml" "$WORK/ds-full-back.yaml"
verdict "export --to deepspeed writes full sharding as ZeRO stage 3 and import reads it back"

sharded "$WORK/shard.yaml" gradients 4 "$WORK/ds-grads.yaml"
run "$bin" export "$WORK/ds-grads.yaml" --to deepspeed -o "$WORK/ds-grads"
expect_rc 1 && expect_in err "dp_sharding: DeepSpeed's pipeline engine refuses ZeRO stage 2" &&
  [[ ! -e $WORK/ds-grads ]]
verdict "export --to deepspeed refuses ZeRO stage 2 with a pipeline, naming the field"

# Sharded data parallelism: every level is searched with --dp-sharding all, one level and a
# fixed shard group are honoured, and simulate and explain show the sharding's step terms.
run "$bin" plan --model "$configs/models/llama3-8b.yaml" --cluster "$h100" --devices 16 \
  --global-batch 32 --seq 2048 -o "$WORK/default.yaml"
run "$bin" plan --model "$configs/models/llama3-8b.yaml" --cluster "$h100" --devices 16 \
  --global-batch 32 --seq 2048 --dp-sharding all --runners-up 20 -o "$WORK/all.yaml" --json
expect_rc 0 &&
  expect_json "d['best']['step_time_ms'] <= float(args[0]) and all(r['dp_sharding'] == 'none' or r['mesh']['dp'] > 1 for r in [d['best']] + d['runners_up'])" \
    "$(sed -n 's/^  step_time_ms: //p' "$WORK/default.yaml")"
verdict "plan --dp-sharding all finds a step no slower than the default levels', sharding only with dp > 1"

run "$bin" plan --model "$configs/models/llama3-8b.yaml" --cluster "$h100" --devices 16 \
  --global-batch 32 --seq 2048 --dp-sharding full --fix dp=4,dp_shard=2 -o "$WORK/hsdp.yaml" --json
expect_rc 0 && expect_json "d['best']['dp_sharding'] == 'full' and d['best']['dp_shard'] == 2 and d['best']['layer_comm_ms'] > 0 and d['best']['param_gather_ms'] == 0" &&
  grep -qx "dp_sharding: full" "$WORK/hsdp.yaml" && grep -qx "dp_shard: 2" "$WORK/hsdp.yaml"
verdict "plan --dp-sharding full --fix dp_shard=2 writes a hybrid fully sharded plan"

run "$bin" simulate "$WORK/hsdp.yaml" --cluster "$h100"
expect_rc 0 && expect_in out "dp_sharding full in groups of 2" &&
  expect_in out "per-micro-batch layer gathers and scatters"
verdict "simulate names the sharding and its per-micro-batch term in the step breakdown"

run "$bin" explain "$WORK/hsdp.yaml" --cluster "$h100"
expect_rc 0 && expect_in out "dp_sharding none" && expect_in out "dp_sharding optimizer" &&
  expect_in out "dp_sharding gradients"
verdict "explain sets every other sharding level beside the plan's"

run "$bin" plan --model "$configs/models/llama3-8b.yaml" --cluster "$h100" --devices 16 \
  --global-batch 32 --seq 2048 --fix dp_shard=1 -o "$WORK/bad-shard.yaml"
expect_rc 1 && expect_in err "a shard group holds at least 2 replicas" && [[ ! -e $WORK/bad-shard.yaml ]]
verdict "plan --fix dp_shard=1 is refused, saying why"

run "$bin" plan --model "$configs/models/gpt-tiny.yaml" --cluster "$configs/clusters/local-cpu.yaml" \
  --global-batch 8 --dp-sharding zero3 -o "$WORK/bad-level.yaml"
expect_rc 2 && [[ ! -e $WORK/bad-level.yaml ]]
verdict "plan --dp-sharding with an unknown level: usage error"

run "$bin" plan --model "$configs/models/gpt3-175b.yaml" --cluster "$a100" --devices 8 \
  --global-batch 64 --seq 2048 -o "$WORK/none.yaml"
expect_rc 1 && expect_in err "fits nowhere on 8 devices" && expect_in err "try --devices" &&
  [[ ! -e $WORK/none.yaml ]]
verdict "a model that fits nowhere: exit 1, shortfall and suggestion, no file"

run "$bin" plan --model "$configs/models/gpt-tiny.yaml" --cluster "$configs/clusters/local-cpu.yaml" \
  --global-batch 16 --seq 64 --dtype fp32 --fix tp=1,pp=2 --schedule gpipe -o "$WORK/tiny.yaml" --json
expect_rc 0 && expect_json "d['best']['mesh'] == {'dp': 1, 'pp': 2, 'cp': 1, 'tp': 1} and d['best']['schedule'] == 'gpipe'"
verdict "plan --fix and --schedule constrain the result (JSON)"

run "$bin" plan --model "$configs/models/gpt-tiny.yaml" --cluster "$configs/clusters/local-cpu.yaml" \
  --global-batch 16 --fix tq=2 -o "$WORK/bad.yaml"
expect_rc 1 && expect_in err "unknown key 'tq'"
verdict "plan --fix with an unknown key names it"

pushd "$WORK" >/dev/null || exit 1  # no configs/ folder here to find the cluster in
run "$bin" simulate "$plan"
popd >/dev/null || exit 1
expect_rc 1 && expect_in err "pass --cluster FILE"
verdict "simulate without a resolvable cluster says how to give one"

tiny=$configs/models/gpt-tiny.yaml
cpu=$configs/clusters/local-cpu.yaml
for cuts in 0,30 3,4 0,-5 0,3,2; do
  run "$bin" plan --model "$tiny" --cluster "$cpu" --global-batch 8 --seq 64 --cuts "$cuts" \
    -o "$WORK/cuts.yaml"
  expect_rc 1 && expect_in err "--cuts: cut" && [[ ! -e $WORK/cuts.yaml ]]
  verdict "plan --cuts $cuts: exit 1 naming the bad cut"
done

run "$bin" plan --model "$tiny" --cluster "$cpu" --global-batch 8 --runners-up -5 -o "$WORK/r.yaml"
expect_rc 2
verdict "plan --runners-up -5: usage error"

run "$bin" plan --model "$tiny" --cluster "$cpu" --global-batch 8 --max-memory 1e-12 -o "$WORK/m.yaml"
expect_rc 1 && expect_in err "give between 1 MiB"
verdict "plan --max-memory 1e-12: exit 1 with the accepted range"

run "$bin" plan --model "$configs/models/gpt3-175b.yaml" --cluster "$a100" --devices 64 \
  --global-batch 64 --seq 2048 --max-memory 0.5 -o "$WORK/m.yaml"
expect_rc 1 && expect_in err "raise --max-memory"
verdict "plan --max-memory below the reserved memory says so"

run "$bin" profile "$tiny" --analytic --cluster "$cpu" --seq 64 --dtype fp32 -o "$WORK/tiny.profile.yaml"
expect_rc 0 && expect_in out "gpt_block" && expect_in out "wrote"
verdict "profile --analytic writes a profile"

run "$bin" plan --model "$tiny" --cluster "$cpu" --profile "$WORK/tiny.profile.yaml" \
  --global-batch 8 --seq 64 -o "$WORK/from-profile.yaml"
expect_rc 0 && expect_in out "predicted step time"
verdict "plan --profile reads the written profile"

# The same profile without its sequence-parallel entries, as older profiles are.
python3 - "$WORK/tiny.profile.yaml" "$WORK/no-sp.profile.yaml" <<'EOF'
import sys
lines, out, i = open(sys.argv[1]).read().split("\n"), [], 0
while i < len(lines):
    block = [lines[i]]
    i += 1
    if block[0].startswith("      - micro_batch:"):
        while i < len(lines) and lines[i].startswith("        "):
            block.append(lines[i])
            i += 1
        if any("sequence_parallel: true" in line for line in block):
            continue
    out += block
open(sys.argv[2], "w").write("\n".join(out))
EOF
run "$bin" plan --model "$tiny" --cluster "$cpu" --profile "$WORK/no-sp.profile.yaml" \
  --global-batch 8 --seq 64 --sequence-parallel on -o "$WORK/no-sp.yaml"
expect_rc 1 && expect_in err "no entry is measured with sequence parallelism" &&
  [[ ! -e $WORK/no-sp.yaml ]]
verdict "plan --sequence-parallel on with a profile that has no such entries says so"

run "$bin" plan --model "$configs/models/mlp-tiny.yaml" --cluster "$cpu" \
  --profile "$WORK/tiny.profile.yaml" --global-batch 8 --seq 32 -o "$WORK/wrong.yaml"
expect_rc 1 && expect_in err "profiles gpt-tiny" && [[ ! -e $WORK/wrong.yaml ]]
verdict "plan --profile of another model names both"

run "$bin" profile "$tiny" --cluster "$cpu"
expect_rc 2 && expect_in err "pass --analytic"
verdict "profile without --analytic says what is available"

# Sequence parallelism: planned for tp > 1, simulated from the plan's field, refused without tp.
llama8b=$configs/models/llama3-8b.yaml
h100=$configs/clusters/dgx-h100.yaml
run "$bin" plan --model "$llama8b" --cluster "$h100" --devices 64 --global-batch 512 \
  --seq 8192 --fix tp=8 --sequence-parallel on -o "$WORK/sp.yaml" --json
expect_rc 0 && expect_json "d['best']['sequence_parallel'] and d['best']['mesh']['tp'] == 8" &&
  grep -q '^sequence_parallel: true$' "$WORK/sp.yaml"
verdict "plan --sequence-parallel on writes sequence_parallel: true"

# simulate_reproduces PLAN WHAT: simulate gives the plan's own predicted step time.
simulate_reproduces() {
  run "$bin" simulate "$1" --cluster "$h100" --json
  expect_rc 0 && expect_json "abs(d['step_time_ms'] - float(args[0])) <= 1e-6 * d['step_time_ms']" \
    "$(sed -n 's/^  step_time_ms: //p' "$1")"
  verdict "simulate reproduces a $2 plan's prediction"
}
simulate_reproduces "$WORK/sp.yaml" sequence-parallel

run "$bin" plan --model "$llama8b" --cluster "$h100" --devices 64 --global-batch 512 \
  --seq 8192 --fix tp=1 --sequence-parallel on -o "$WORK/sp1.yaml"
expect_rc 1 && expect_in err "--sequence-parallel on contradicts --fix tp=1" &&
  [[ ! -e $WORK/sp1.yaml ]]
verdict "plan --fix tp=1 --sequence-parallel on: exit 1 naming both"

run "$bin" model "$llama8b" --sp
expect_rc 1 && expect_in err "--sp needs --tp 2 or more"
verdict "model --sp without --tp says what it needs"

run "$bin" model "$llama8b" --tp 8 --sp --seq 8192 --json
expect_rc 0 && expect_json "d['sequence_parallel'] and d['layers'][1]['tp_fwd']['all_gather']['count'] == 2"
verdict "model --tp 8 --sp lists the blocks' all-gathers"

run "$bin" plan --model "$tiny" --cluster "$cpu" --profile "$WORK/tiny.profile.yaml" \
  --global-batch 8 --seq 64 --fix cp=2 -o "$WORK/no-cp.yaml"
expect_rc 1 && expect_in err "no entry has cp 2 (key cp of layers[].entries[])" &&
  [[ ! -e $WORK/no-cp.yaml ]]
verdict "plan --fix cp=2 with a profile that has no cp entries says so"

run "$bin" plan --model "$llama8b" --cluster "$h100" --devices 64 --global-batch 512 \
  --seq 8192 --fix cp=3 -o "$WORK/cp3.yaml"
expect_rc 1 && expect_in err "--fix cp=3: 2·cp = 6 does not divide --seq 8192" &&
  [[ ! -e $WORK/cp3.yaml ]]
verdict "plan --fix cp=3: exit 1, 2·cp must divide the sequence"

run "$bin" plan --model "$llama8b" --cluster "$h100" --devices 64 --global-batch 512 \
  --seq 4104 --fix tp=8,cp=4 --sequence-parallel on -o "$WORK/cpsp.yaml"
expect_rc 1 && expect_in err "tp 8 (--fix) does not divide --seq / cp = 1026" &&
  [[ ! -e $WORK/cpsp.yaml ]]
verdict "plan --fix tp=8,cp=4 --sequence-parallel on: tp must divide each cp rank's tokens"

run "$bin" plan --model "$llama8b" --cluster "$h100" --devices 64 --global-batch 64 \
  --seq 8192 --fix tp=8,cp=2 -o "$WORK/cp.yaml" --json
expect_rc 0 && expect_json "d['best']['mesh']['cp'] == 2 and 'cp 2' in d['best']['config']" &&
  grep -q '^mesh: {dp: [0-9]*, pp: [0-9]*, cp: 2, tp: 8}$' "$WORK/cp.yaml"
verdict "plan --fix cp=2 writes mesh.cp and reports it"

simulate_reproduces "$WORK/cp.yaml" context-parallel

run "$bin" explain "$WORK/cp.yaml" --cluster "$h100"
expect_rc 0 && expect_in out "cp 4" && expect_in out "cp 1"
verdict "explain re-plans the cp neighbours"

run "$bin" export "$WORK/cp.yaml" --to megatron -o "$WORK/cp.sh"
expect_rc 0 && grep -qx "  --context-parallel-size 2" "$WORK/cp.sh" &&
  grep -qx "  --cp-comm-type allgather" "$WORK/cp.sh"
verdict "export --to megatron writes --context-parallel-size"

run "$bin" import megatron "$WORK/cp.sh" -o "$WORK/cp-back.yaml" --cluster "$h100" \
  --vocab-size 128256 --name llama3-8b
expect_rc 0 && grep -q '^mesh: {dp: [0-9]*, pp: [0-9]*, cp: 2, tp: 8}$' "$WORK/cp-back.yaml"
verdict "import megatron reads --context-parallel-size back"

run "$bin" export "$WORK/cp.yaml" --to deepspeed -o "$WORK/cp-ds"
expect_rc 1 && expect_in err "Ulysses" && expect_in err "--fix cp=1"
verdict "export --to deepspeed refuses context parallelism, naming the fix"

run "$bin" model "$llama8b" --cp 2 --seq 8192 --json
expect_rc 0 && expect_json "d['cp'] == 2 and d['layers'][1]['cp_fwd']['all_gather'] == {'count': 2, 'bytes': 33554432}"
verdict "model --cp 2 lists the blocks' K/V all-gathers"

run "$bin" model "$llama8b" --cp 3 --seq 8192
expect_rc 1 && expect_in err "--cp 3: 2·cp does not divide --seq 8192"
verdict "model --cp that cannot split the sequence says so"

# PipelineModule's "parameters" partition builds each layer alone: gpt2-small's tied head
# weighs its own [V, h], so the last of 4 stages holds the final norm and the head only.
echo '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 1}' >"$WORK/ds.json"
run "$bin" import deepspeed "$WORK/ds.json" -o "$WORK/ds.yaml" --cluster "$a100" --devices 8 \
  --model "$configs/models/gpt2-small.yaml" --num-stages 4
expect_rc 0 && [[ $(grep -c '^  - {first_layer: ' "$WORK/ds.yaml") -eq 4 ]] &&
  grep -q '^  - {first_layer: 13, num_layers: 2,' "$WORK/ds.yaml"
verdict "import deepspeed counts a tied head's weight as PipelineModule does"

summary 39
