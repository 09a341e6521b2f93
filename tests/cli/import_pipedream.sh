#!/usr/bin/env bash
# Usage: import_pipedream.sh TRIDENT_BIN SOURCE_DIR
#
# trident import pipedream on the 14 PipeDream profiles of tests/data/pipedream: each imports
# to the expected number of generic layers, validates, and is planned (default schedules and
# PipeDream's) on 4 A100s, simulated and explained. Bad input fails with file and line and
# writes nothing; what cannot run a generic model (analytic costs, launch, run) refuses it.
# shellcheck source=testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/testlib.sh"

bin=$1
data=$2/tests/data/pipedream
a100=$2/configs/clusters/dgx-a100-80gb.yaml

# model, PipeDream's minibatch (tests/data/pipedream/README.md), layers after the import
# (nodes less the Input nodes and the __getitem__ sinks).
models=(
  "alexnet 256 22" "densenet121 64 428" "gnmt 64 37" "gnmt_large 64 77"
  "inception_v3 128 325" "nasnetalarge 16 1250" "nasnetamobile 128 920" "resnet101 64 346"
  "resnet18 256 70" "resnet50 128 176" "resnext101 64 346" "resnext50 128 176"
  "squeezenet1_0 256 67" "vgg16 128 40"
)

# --replicas fixes per-stage replication (the cuts searched for it); explain sets the best
# uniform replication beside it; bad counts are refused naming the flag, and nothing is written.
vgg=$WORK/vgg16-replicas
run "$bin" import pipedream "$data/vgg16/graph.txt" -o "$vgg" --micro-batch 128
vgg_costs=(--profile "$vgg/profile.yaml" --cluster "$a100")
run "$bin" plan --model "$vgg/model.yaml" "${vgg_costs[@]}" --devices 4 --global-batch 768 \
  --schedule pipedream --replicas 3,1 -o "$vgg/plan.yaml"
expect_rc 0 && expect_match out "^ +0 +0-[0-9]+ +3 " && expect_match out "^ +1 +[0-9]+-39 +1 "
verdict "plan --replicas 3,1: stage 0 on 3 replicas, stage 1 on 1"
run "$bin" explain "$vgg/plan.yaml" "${vgg_costs[@]}"
expect_rc 0 && expect_match out "^uniform replication: tp 1 × pp [0-9]+ × dp [0-9]+, pipedream"
verdict "explain sets the best uniform replication beside per-stage replication"
for bad in "3,2|sums to 5 replicas, more than the 4 devices" "3,0|stage 1 has 0 replicas" \
  "1,1,1|does not divide the 4 devices"; do
  run "$bin" plan --model "$vgg/model.yaml" "${vgg_costs[@]}" --devices 4 --global-batch 768 \
    --replicas "${bad%%|*}" -o "$vgg/bad.yaml"
  expect_rc 1 && expect_in err "--replicas" && expect_in err "${bad#*|}" && [[ ! -e $vgg/bad.yaml ]]
  verdict "plan --replicas ${bad%%|*} is refused: ${bad#*|}; nothing written"
done
run "$bin" plan --model "$vgg/model.yaml" "${vgg_costs[@]}" --devices 4 --global-batch 256 \
  --schedule pipedream --replicas 3,1 -o "$vgg/bad.yaml"
expect_rc 1 && expect_in err "under pipedream every --replicas count dividing the micro-batches" &&
  [[ ! -e $vgg/bad.yaml ]]
verdict "plan --replicas 3,1 under pipedream with 2 micro-batches says the counts must divide them"

# --exact on AlexNet, 8 A100s in nodes of 4 joined by 10 Gb/s Ethernet (0.3125 GB/s a GPU):
# every cut and replica vector whose bound beats the DP's plan is simulated, and one is faster.
slow=$WORK/slow-ethernet.yaml
sed -e 's/^name: dgx-a100-80gb/name: slow-ethernet/' -e 's/^devices_per_node: 8 /devices_per_node: 4 /' \
  -e '/^  inter_node:/,/bw_gb_per_s/s/bw_gb_per_s: 25$/bw_gb_per_s: 0.3125/' "$a100" >"$slow"
alex=$WORK/alexnet-exact
run "$bin" import pipedream "$data/alexnet/graph.txt" -o "$alex" --micro-batch 256
step_ms() { sed -n 's/^  step_time_ms: //p' "$1"; }
for mode in default exact; do
  flags=()
  [[ $mode == exact ]] && flags=(--exact)
  run "$bin" plan --model "$alex/model.yaml" --profile "$alex/profile.yaml" --cluster "$slow" \
    --devices 8 --global-batch 4096 --schedule pipedream "${flags[@]}" -o "$alex/$mode.yaml"
  expect_rc 0 && [[ -s $alex/$mode.yaml ]]
  verdict "alexnet on 8 GPUs over slow Ethernet, pipedream, $mode search"
done
# The step times are read first: a command substitution in verdict's argument would set the
# status verdict reads.
exact_ms=$(step_ms "$alex/exact.yaml")
default_ms=$(step_ms "$alex/default.yaml")
expect_in out "--exact enumerated" &&
  python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if b < 0.95 * a else 1)' \
    "$default_ms" "$exact_ms"
RC=$?
expect_rc 0
verdict "--exact finds a plan at least 5% faster than the DP's ($exact_ms vs $default_ms ms)"

for entry in "${models[@]}"; do
  read -r name batch layers <<<"$entry"
  out=$WORK/$name
  run "$bin" import pipedream "$data/$name/graph.txt" -o "$out" --micro-batch "$batch"
  expect_rc 0 && expect_in out "as $name: $layers generic layers" &&
    [[ -s $out/model.yaml && -s $out/profile.yaml ]] &&
    [[ $(wc -l <"$out/layers.tsv") -eq $layers ]]
  verdict "import $name: $layers generic layers, model, profile and layer table"

  run "$bin" validate "$out/model.yaml" "$out/profile.yaml"
  expect_rc 0 && expect_in out "ok: model" && expect_in out "ok: profile"
  verdict "$name: the written model and profile validate"

  costs=(--profile "$out/profile.yaml" --cluster "$a100")
  global=$((8 * batch))
  for schedule in default pipedream; do
    flags=()
    [[ $schedule == pipedream ]] && flags=(--schedule pipedream --fix pp=4)
    plan=$out/plan-$schedule.yaml
    run "$bin" plan --model "$out/model.yaml" "${costs[@]}" --devices 4 --global-batch "$global" \
      "${flags[@]}" -o "$plan"
    expect_rc 0 && expect_in out "predicted step time" && expect_in out "samples/s" &&
      ! grep -q "% of peak" "$WORK/out" && [[ -s $plan ]]
    verdict "$name: plan on 4 A100s ($schedule), in samples/s, no fraction of peak (no FLOPs)"

    run "$bin" simulate "$plan" "${costs[@]}" --json
    expect_rc 0 &&
      expect_json "abs(d['step_time_ms'] - float(args[0])) <= 1e-6 * d['step_time_ms']" \
        "$(sed -n 's/^  step_time_ms: //p' "$plan")"
    verdict "$name: simulate reproduces the plan's step time ($schedule)"

    run "$bin" explain "$plan" "${costs[@]}"
    expect_rc 0 && expect_in out "bottleneck: stage"
    verdict "$name: explain ($schedule)"
  done
done

# PipeDream's Cluster-A, where data parallelism pays 10 Gb/s Ethernet: PipeDream replicates
# AlexNet's convolutions and not its fully connected layers (SOSP 2019, Figure 2); so does the
# search, well ahead of the best uniform plan (432 ms, pp 4 x dp 4).
out=$WORK/alexnet
cluster_a=$2/tests/data/good/clusters/pipedream-cluster-a.yaml
run "$bin" plan --model "$out/model.yaml" --profile "$out/profile.yaml" --cluster "$cluster_a" \
  --devices 16 --global-batch 4096 --schedule pipedream --json -o "$WORK/alexnet-a.yaml"
expect_rc 0 &&
  expect_json "'per-stage replication' in d['best']['config'] and d['best']['step_time_ms'] < 300" &&
  expect_json "d['best']['stages'][0]['replicas'] > 1 and d['best']['stages'][-1]['replicas'] == 1"
verdict "alexnet on PipeDream's Cluster-A: convolutions replicated, classifier not, under 300 ms"

out=$WORK/vgg16
run "$bin" model "$out/model.yaml"
expect_rc 0 && expect_in out "vgg16: 40 generic layers" && expect_in out "no analytic costs"
verdict "model on a generic model says where its costs are"

run "$bin" simulate "$out/plan-default.yaml" --cluster "$a100"
expect_rc 1 && expect_in err "has generic layers" && expect_in err "--profile"
verdict "simulate without the profile: no analytic costs for generic layers"

run "$bin" profile "$out/model.yaml" --analytic --cluster "$a100" -o "$WORK/p.yaml"
expect_rc 1 && expect_in err "it has no analytic costs" && [[ ! -e $WORK/p.yaml ]]
verdict "profile --analytic refuses a generic model"

run "$bin" profile "$out/model.yaml" --device cpu -o "$WORK/p.yaml"
expect_rc 1 && expect_in err "cannot run it to measure it" && [[ ! -e $WORK/p.yaml ]]
verdict "profile --device cpu refuses a generic model"

# trident-worker --check refuses it (launch runs the check before mpirun or sbatch), and so
# does every rank before it makes any communicator (so no mpirun is needed here). The worker
# is built only with MPI; without it, launch can only say that the ranks will check the plan.
worker=$(dirname "$bin")/trident-worker
if [[ -x $worker ]]; then
  run "$bin" launch "$out/plan-pipedream.yaml" --dry-run
  expect_rc 1 && expect_in err "plan-pipedream.yaml: the cpu runtime cannot run this plan" &&
    expect_in err "model.layers[].kind: model vgg16 has generic layers" &&
    expect_in err "runtime cannot execute it" && expect_in err "nothing was started"
  verdict "launch refuses a plan of generic layers before any rank starts"

  run "$bin" launch "$out/plan-pipedream.yaml" --slurm -o "$WORK/job.sbatch"
  expect_rc 1 && expect_in err "runtime cannot execute it" && [[ ! -e $WORK/job.sbatch ]]
  verdict "launch --slurm refuses it and writes no script"

  run "$worker" "$out/plan-pipedream.yaml" --steps 1
  expect_rc 1 && expect_in err "runtime cannot execute it"
  verdict "trident-worker refuses a plan of generic layers before connecting"
else
  run "$bin" launch "$out/plan-pipedream.yaml" --dry-run
  expect_rc 0 && expect_in err "its ranks check the plan when they start"
  verdict "launch without a worker says that the ranks check the plan"
fi

run "$bin" run "$out/model.yaml" --cluster "$a100" --out "$WORK/run"
expect_rc 1 && expect_in err "trident run cannot measure or train it"
verdict "run refuses a generic model"

# Bad input: exit 1, the file (and line) named, nothing written.
bad=$WORK/bad
mkdir -p "$bad"
run "$bin" import pipedream "$bad/missing.txt" -o "$bad/out" --micro-batch 8
expect_rc 1 && expect_in err "missing.txt" && [[ ! -e $bad/out ]]
verdict "import of a missing file: exit 1 naming it, nothing written"

head -3 "$data/vgg16/graph.txt" >"$bad/short.txt"
echo "node99 -- ReLU -- forward_compute_time=1.0" >>"$bad/short.txt"
run "$bin" import pipedream "$bad/short.txt" -o "$bad/out" --micro-batch 8
expect_rc 1 && expect_in err "short.txt:4: expected forward_compute_time=" && [[ ! -e $bad/out ]]
verdict "import of a malformed line: exit 1 naming file and line, nothing written"

cp "$data/alexnet/graph.txt" "$bad/cycle.txt"
last=$(grep -P '^\t' "$bad/cycle.txt" | tail -1 | sed 's/^\t//')
printf '\n\t%s -- %s\n' "${last#* -- }" "${last%% -- *}" >>"$bad/cycle.txt"
run "$bin" import pipedream "$bad/cycle.txt" -o "$bad/out" --micro-batch 8
expect_rc 1 && expect_match err "cycle.txt:[0-9]+: node node[0-9]+ lies on a cycle" &&
  [[ ! -e $bad/out ]]
verdict "import of a graph with a cycle: exit 1 naming a node on it, nothing written"

grep -v -- '-- Input' "$data/resnet18/graph.txt" | grep -v -P '^\tnode1 -- ' >"$bad/noinput.txt"
run "$bin" import pipedream "$bad/noinput.txt" -o "$bad/out" --micro-batch 8
expect_rc 1 && expect_in err "noinput.txt: no Input node" && [[ ! -e $bad/out ]]
verdict "import of a graph with no Input node: exit 1, nothing written"

run "$bin" import pipedream "$data/vgg16/graph.txt" -o "$bad/out"
expect_rc 2 && [[ ! -e $bad/out ]]
verdict "import without --micro-batch: usage error"

summary 100
