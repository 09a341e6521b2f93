#!/usr/bin/env bash
# Megatron-LM launch of llama.plan.yaml (trident export --to megatron; flags of Megatron-LM main of 2025, as copied at OpenEuroLLM/NVIDIA-Megatron-LM 24126a9)
# llama3-8b on 64 devices: dp 2 × pp 4 × tp 8, 1f1b, micro-batch 1 × 32, seq 2048
# Trident predicts 1.234 s a step, 60.00 GiB peak memory per rank.
# Vocabulary: 128256 (the tokenizer's; Megatron-LM pads it to a multiple of 128 x tp).
# Data, tokenizer, optimizer and checkpoint arguments: give them to this script ("$@"),
# e.g. --data-path ... --tokenizer-type ... --train-iters ... --lr ...
# Overlap as Trident predicts: each stage's gradient reduction after its last backward
# (no --overlap-grad-reduce; adding it hides more communication than Trident credits).
set -euo pipefail
MODEL_ARGS=(
  --num-layers 32
  --hidden-size 4096
  --num-attention-heads 32
  --group-query-attention
  --num-query-groups 8
  --ffn-hidden-size 14336
  --seq-length 2048
  --max-position-embeddings 8192
  --normalization RMSNorm
  --norm-epsilon 1e-05
  --position-embedding-type rope
  --rotary-base 500000
  --swiglu
  --disable-bias-linear
  --untie-embeddings-and-output-weights
  --attention-backend flash
  --hidden-dropout 0
  --attention-dropout 0
)
PARALLEL_ARGS=(
  --tensor-model-parallel-size 8
  --pipeline-model-parallel-size 4
  --micro-batch-size 1
  --global-batch-size 32
  --decoder-first-pipeline-num-layers 9
  --decoder-last-pipeline-num-layers 7
  --recompute-activations
  --bf16
)
MEGATRON=${MEGATRON:-.}  # a Megatron-LM checkout
if [[ -n ${SLURM_JOB_ID:-} ]]; then
  # Slurm: one torchrun per node; the first node of the allocation is the rendezvous.
  head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
  exec srun --nodes 8 --ntasks-per-node 1 torchrun --nnodes 8 --nproc-per-node 8 \
    --rdzv-backend c10d --rdzv-endpoint "$head:29500" \
    "$MEGATRON/pretrain_gpt.py" "${MODEL_ARGS[@]}" "${PARALLEL_ARGS[@]}" "$@"
fi
# torchrun on each of the 8 nodes (NODE_RANK 0..7, MASTER_ADDR the first node's):
exec torchrun --nnodes 8 --nproc-per-node 8 --node-rank "${NODE_RANK:-0}" \
  --master-addr "${MASTER_ADDR:-localhost}" --master-port "${MASTER_PORT:-29500}" \
  "$MEGATRON/pretrain_gpt.py" "${MODEL_ARGS[@]}" "${PARALLEL_ARGS[@]}" "$@"
