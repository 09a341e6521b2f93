#!/bin/bash
# Llama 3 70B on 8 nodes of 8 H100s with Megatron FSDP, hand-picked: tp 4, parameters,
# gradients and optimizer state sharded over 8 replicas and replicated twice (hybrid), the flags
# of Megatron-LM's Megatron-FSDP user guide.
GPUS_PER_NODE=8
NUM_NODES=8
DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
)
MODEL_ARGS=(
    --num-layers 80
    --hidden-size 8192
    --ffn-hidden-size 28672
    --num-attention-heads 64
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
    --global-batch-size 256
    --train-iters 100000
    --lr 1.5e-4
    --bf16
    --recompute-granularity full
    --recompute-method uniform
    --recompute-num-layers 1
    --calculate-per-token-loss
    --grad-reduce-in-bf16
)
FSDP_ARGS=(
    --use-megatron-fsdp
    --data-parallel-sharding-strategy optim_grads_params
    --no-gradient-accumulation-fusion
    --use-distributed-optimizer
    --ckpt-format fsdp_dtensor
    --init-model-with-meta-device
    --fsdp-double-buffer
    --num-distributed-optimizer-instances 2
    --overlap-grad-reduce
    --overlap-param-gather
)
MODEL_PARALLEL_ARGS=(
    --tensor-model-parallel-size 4
    --sequence-parallel
    --pipeline-model-parallel-size 1
)
unset CUDA_DEVICE_MAX_CONNECTIONS
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py ${MODEL_ARGS[@]} ${TRAINING_ARGS[@]} \
    ${FSDP_ARGS[@]} ${MODEL_PARALLEL_ARGS[@]} --data-path $DATA_PATH \
    --tokenizer-type HuggingFaceTokenizer
