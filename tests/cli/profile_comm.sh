#!/usr/bin/env bash
# Usage: profile_comm.sh TRIDENT_BIN SOURCE_DIR MPIRUN [MPIRUN_FLAG...]
#
# trident profile --comm under mpirun, end to end, on small sizes: 2 ranks write a cluster
# file whose measured: list holds p2p, all-reduce, all-gather and reduce-scatter fits; it
# validates, trident plan accepts it and the predictions change with it. 4 ranks on a cluster
# of 2 nodes x 2 also measure inter_node links. Without mpirun, with more ranks than the
# cluster has devices, with a single message size, with --device tpu, or with --device cuda on a
# machine without a GPU: exit 1, a clear message, no file.
# shellcheck source=testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/testlib.sh"

bin=$1
configs=$2/configs
mpirun=$3
shift 3
mpi_flags=("$@")
cpu=$configs/clusters/local-cpu.yaml
tiny=$configs/models/gpt-tiny.yaml
out=$WORK/measured.yaml
small=(--min-bytes 4 --max-bytes 64M --step-factor 4 --warmup 1 --iters 10)

# step_time_ms of `trident simulate PLAN --cluster C --json`.
step_ms() {
  "$bin" simulate "$1" --cluster "$2" --json |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["step_time_ms"])'
}

run "$mpirun" "${mpi_flags[@]}" -np 2 "$bin" profile --comm --cluster "$cpu" -o "$out" \
  "${small[@]}"
expect_rc 0 && expect_match out "^collective +link +ranks +bytes +time \(us\) +algbw \(GB/s\) +busbw \(GB/s\)" &&
  expect_match out "^all_reduce +intra_node +2 +262144 " && expect_in out "every result checked exactly: ok" &&
  expect_match out "^reduce_scatter +intra_node +2 +[0-9.]+ +[0-9.]+ +12 " &&
  expect_in out "wrote $out: 4 measured links" && expect_in err "[4/4] reduce_scatter over 2 ranks" &&
  expect_in err "comm: 2 ranks, buffers on cpu (1 thread) (rank 0), over MPI"
verdict "mpirun -np 2 profile --comm prints the table and the fits"

for collective in p2p all_reduce all_gather reduce_scatter; do
  grep -A4 "collective: $collective" "$out" | grep -q "link: intra_node" || {
    REASON="$out has no intra_node $collective"
    false
  }
  verdict "the written file has a measured $collective link"
done

run "$bin" validate "$out"
expect_rc 0 && expect_in out "ok: cluster local-cpu"
verdict "the written cluster file validates"

run "$bin" plan --model "$tiny" --cluster "$out" --global-batch 16 --seq 64 --dtype fp32 \
  --fix tp=1,pp=2 --schedule gpipe -o "$WORK/plan.yaml"
expect_rc 0 && expect_in out "predicted step time"
verdict "trident plan accepts the measured cluster"

measured_ms=$(step_ms "$WORK/plan.yaml" "$out")
spec_ms=$(step_ms "$WORK/plan.yaml" "$cpu")
[[ -n $measured_ms && -n $spec_ms && $measured_ms != "$spec_ms" ]] ||
  { REASON="step time $measured_ms ms with the measured links, $spec_ms ms without" && false; }
verdict "the measured links change the predicted step time (pp 2 sends activations)"

run "$bin" profile --comm --cluster "$cpu" -o "$WORK/alone.yaml" "${small[@]}"
expect_rc 1 && expect_in err "run under mpirun with >= 2 ranks, e.g. mpirun -np 2" &&
  [[ ! -e $WORK/alone.yaml ]]
verdict "without mpirun: exit 1 with how to run it, no file"

run "$mpirun" "${mpi_flags[@]}" -np 3 "$bin" profile --comm --cluster "$cpu" -o "$WORK/three.yaml" \
  "${small[@]}"
expect_rc 1 && expect_in err "this job has 3 ranks but $cpu describes 2 devices" &&
  [[ ! -e $WORK/three.yaml ]]
verdict "more ranks than the cluster has devices: exit 1, no file"

run "$mpirun" "${mpi_flags[@]}" -np 2 "$bin" profile --comm --cluster "$cpu" -o "$WORK/one.yaml" \
  --min-bytes 64 --max-bytes 64
expect_rc 1 && expect_in err "needs at least two: raise --max-bytes" && [[ ! -e $WORK/one.yaml ]]
verdict "a single message size: exit 1 naming the flags"

run "$mpirun" "${mpi_flags[@]}" -np 2 "$bin" profile --comm --device tpu --cluster "$cpu" \
  -o "$WORK/tpu.yaml" "${small[@]}"
expect_rc 1 && expect_in err "--device tpu: trident profile --comm measures cpu (MPI) or cuda (NCCL)" &&
  [[ ! -e $WORK/tpu.yaml ]]
verdict "--device tpu: exit 1 naming the devices it measures, no file"

if ! nvidia-smi -L >/dev/null 2>&1; then  # with GPUs, scripts/gpu-check measures NCCL links
  run "$mpirun" "${mpi_flags[@]}" -np 2 "$bin" profile --comm --device cuda --cluster "$cpu" \
    -o "$WORK/cuda.yaml" "${small[@]}"
  expect_rc 1 && expect_in err "--device cuda: " && [[ ! -e $WORK/cuda.yaml ]]
  verdict "--device cuda without a GPU: exit 1 with CUDA's reason, no file"
fi

run "$bin" profile --comm --cluster "$cpu" -o "$WORK/bad.yaml" --step-factor 1
expect_rc 2
verdict "--step-factor 1: usage error"

# 4 ranks as 2 nodes of 2: pairs and groups inside node 0 and across the nodes.
sed -e 's/^nodes: 1/nodes: 2/' -e 's/^name: local-cpu/name: two-nodes/' "$cpu" >"$WORK/two-nodes.yaml"
run "$mpirun" "${mpi_flags[@]}" -np 4 "$bin" profile --comm --cluster "$WORK/two-nodes.yaml" \
  -o "$WORK/two.yaml" --max-bytes 64M --step-factor 4 --warmup 1 --iters 10
expect_rc 0 && expect_match out "^p2p +inter_node +2 " && expect_match out "^all_gather +inter_node +4 " &&
  expect_in out "all_reduce inter_node over 4 ranks: not written" &&
  expect_in out "wrote $WORK/two.yaml: 8 measured links" &&
  expect_in err "share a host, but with 2 devices per node" &&
  [[ $(grep -c "link: inter_node" "$WORK/two.yaml") -eq 4 ]]
verdict "4 ranks on 2 nodes of 2: intra_node and inter_node links, the 4-rank group left out"

summary 13
