#!/bin/bash
# Llama 3 8B on 8 nodes of 8 H100s, hand-picked: tp 8 inside a node, no pipeline, selective
# recompute, the distributed optimizer with its communication overlapped (Megatron-LM's
# examples/llama style).
GPUS_PER_NODE=8
NUM_NODES=8
DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
)
MODEL_ARGS=(
    --num-layers 32
    --hidden-size 4096
    --ffn-hidden-size 14336
    --num-attention-heads 32
    --group-query-attention
    --num-query-groups 8
    --seq-length 8192
    --max-position-embeddings 8192
    --position-embedding-type rope
    --rotary-base 500000
    --normalization RMSNorm
    --swiglu
    --disable-bias-linear
    --untie-embeddings-and-output-weights
    --attention-dropout 0.0
    --hidden-dropout 0.0
)
TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 512
    --train-iters 250000
    --lr 3e-4
    --bf16
    --recompute-activations
    --use-distributed-optimizer
    --overlap-grad-reduce
    --overlap-param-gather
)
MODEL_PARALLEL_ARGS=(
    --tensor-model-parallel-size 8
    --pipeline-model-parallel-size 1
)
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py ${MODEL_ARGS[@]} ${TRAINING_ARGS[@]} \
    ${MODEL_PARALLEL_ARGS[@]} --data-path $DATA_PATH --tokenizer-type HuggingFaceTokenizer
