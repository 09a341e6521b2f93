#!/usr/bin/env bash
# Usage: worker_cuda.sh WORKER_BIN MPIRUN [MPIRUN_FLAG...]
#
# trident-worker --device cuda against --device cpu on the same plan, seed and data: gpt-tiny,
# 10 steps of SGD with momentum, losses and final parameters within 1e-3 relative (fp32; 1e-2 in bf16;
# cuBLAS and Eigen sum in different orders, and the GPU kernels fuse multiply-adds, so the two
# runs drift apart by rounding, far less than any wrong formula would). One GPU: the
# single-rank plan. Two or more: pp 2 (activations and gradients through NCCL), dp 2 (the
# gradient all-reduce through NCCL; with optimizer sharding its reduce-scatter and the
# parameter all-gather; with gradient sharding a reduce-scatter per layer; with full sharding
# an all-gather per layer too), tp 2 with sequence parallelism (NCCL all-gathers and reduce-scatters
# inside the layers), cp 2 and interleaved 1F1B (pp 2, v 2: six pipeline links) against the
# one-process CPU run; four or more
# add cp 2 x tp 2 with sequence parallelism. Without a GPU, or in a
# build without CUDA, it prints why and exits 77 (ctest: skipped).
# shellcheck source=testlib.sh
source "$(dirname "${BASH_SOURCE[0]}")/testlib.sh"
# shellcheck source=plan_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/plan_lib.sh"

worker=$1
mpirun=$2
shift 2
mpi_flags=("$@")
steps=10
tol=1e-3

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if ((gpus == 0)); then
  echo "SKIP: no NVIDIA GPU here (nvidia-smi -L lists none); the CUDA runs need one"
  exit 77
fi

plan() { tiny_plan "$1" "$2" "$2" "$3" "$4" 1 1 "$5" "$6" 1f1b "$7"; }

train() {  # NAME NP DEVICE
  run timeout 300 "$mpirun" -np "$2" "${mpi_flags[@]}" "$worker" "$WORK/$1.yaml" \
    --device "$3" --data synthetic --steps "$steps" --out "$WORK/$1-$3" \
    --save "$WORK/$1-$3/ckpt" --quiet --optimizer sgd --lr 0.1 --momentum 0.9
}

same_as() {  # REFERENCE RUN
  REASON=$(python3 "$(dirname "${BASH_SOURCE[0]}")/compare_runs.py" "$WORK/$1" "$WORK/$2" \
    "$steps" params --all-steps "--tol=$tol" 2>&1)
}

plan single 1 1 1 2 4 "$(tiny_stage 0 5 1 none)"
train single 1 cpu
expect_rc 0
verdict "the CPU reference trains"
train single 1 cuda
if [[ $RC -ne 0 ]] && grep -q "this build has no CUDA backend" "$WORK/err"; then
  echo "SKIP: trident-worker was built without CUDA (-DTRIDENT_CUDA=ON)"
  exit 77
fi
expect_rc 0 && same_as single-cpu single-cuda
verdict "one GPU: same losses and parameters as the CPU"

# bf16 mixed precision: the same plan in bf16 on the GPU (bf16 kernels, cuBLAS bf16 GEMMs) and on
# the CPU (each op widened and rounded once): losses and master weights within 1e-2, the bf16
# roundings of the two backends falling at different sums.
sed 's/^dtype: fp32$/dtype: bf16/' "$WORK/single.yaml" >"$WORK/bf16.yaml"
train bf16 1 cpu
train bf16 1 cuda
expect_rc 0 && tol=1e-2 same_as bf16-cpu bf16-cuda
verdict "bf16 on one GPU: losses and master weights within 1e-2 of the CPU's bf16 run"

if ((gpus >= 2)); then
  plan pp2 2 1 2 2 4 "$(tiny_stage 0 2 1 none)
$(tiny_stage 2 3 1 none)"
  train pp2 2 cuda
  expect_rc 0 && same_as single-cpu pp2-cuda
  verdict "pp 2 on two GPUs (NCCL transfers): same as the CPU"
  plan dp2 2 2 1 2 4 "$(tiny_stage 0 5 2 none)"
  train dp2 2 cuda
  expect_rc 0 && same_as single-cpu dp2-cuda
  verdict "dp 2 on two GPUs (NCCL all-reduce): same as the CPU"
  cp "$WORK/dp2.yaml" "$WORK/dp2_zero1.yaml"
  printf 'dp_sharding: optimizer\n' >>"$WORK/dp2_zero1.yaml"
  train dp2_zero1 2 cuda
  expect_rc 0 && same_as single-cpu dp2_zero1-cuda
  verdict "dp 2 with optimizer sharding on two GPUs (NCCL reduce-scatter, all-gather): same as the CPU"
  cp "$WORK/dp2.yaml" "$WORK/dp2_zero2.yaml"
  printf 'dp_sharding: gradients\n' >>"$WORK/dp2_zero2.yaml"
  train dp2_zero2 2 cuda
  expect_rc 0 && same_as single-cpu dp2_zero2-cuda
  verdict "dp 2 with gradient sharding on two GPUs (a reduce-scatter per layer): same as the CPU"
  cp "$WORK/dp2.yaml" "$WORK/dp2_zero3.yaml"
  printf 'dp_sharding: full\n' >>"$WORK/dp2_zero3.yaml"
  train dp2_zero3 2 cuda
  expect_rc 0 && same_as single-cpu dp2_zero3-cuda
  verdict "dp 2 with full sharding on two GPUs (an all-gather per layer): same as the CPU"
  sp=true tiny_plan tp2_sp 2 2 1 1 2 1 2 4 1f1b "$(tiny_stage 0 5 1 none)"
  train tp2_sp 2 cuda
  expect_rc 0 && same_as single-cpu tp2_sp-cuda
  verdict "tp 2 with sequence parallelism on two GPUs: same as the CPU"
  cp=2 tiny_plan cp2 2 2 1 1 1 1 2 4 1f1b "$(tiny_stage 0 5 1 selective)"
  train cp2 2 cuda
  expect_rc 0 && same_as single-cpu cp2-cuda
  verdict "cp 2 on two GPUs (NCCL all-gathers and reduce-scatters of K and V): same as the CPU"
  tiny_plan interleaved 2 2 1 2 1 2 2 4 interleaved_1f1b "$(tiny_stage 0 2 1 none)
$(tiny_stage 2 1 1 none)
$(tiny_stage 3 1 1 none)
$(tiny_stage 4 1 1 none)"
  train interleaved 2 cuda
  expect_rc 0 && same_as single-cpu interleaved-cuda
  verdict "interleaved 1F1B (pp 2, v 2) on two GPUs (a link per channel): same as the CPU"
fi
if ((gpus >= 4)); then
  cp=2 sp=true tiny_plan cp2_tp2_sp 4 4 1 1 2 1 2 4 1f1b "$(tiny_stage 0 5 1 none)"
  train cp2_tp2_sp 4 cuda
  expect_rc 0 && same_as single-cpu cp2_tp2_sp-cuda
  verdict "cp 2 x tp 2 with sequence parallelism on four GPUs: same as the CPU"
fi
summary 2
