#!/bin/bash
# Llama 3 70B on 8 nodes of 8 H100s, hand-picked, with every kind of model parallelism
# Megatron-LM has for a dense model: tp 4 with sequence parallelism inside a node, context
# parallelism 2 over the 8192-token sequence, a 4-rank pipeline of 2 virtual stages a rank
# (interleaved 1F1B) whose first and last ranks hold 18 layers each beside the embedding and the
# output layer (the 44 others split over the 2 middle ranks), data parallelism 2 with the
# distributed optimizer, full recompute (Megatron-LM's examples/llama style).
GPUS_PER_NODE=8
NUM_NODES=8
CHECKPOINT_PATH=/checkpoints/llama3-70b
TOKENIZER_MODEL=meta-llama/Meta-Llama-3-70B
DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
    --master_addr localhost
    --master_port 6000
)
MODEL_ARGS=(
    --num-layers 80
    --hidden-size 8192
    --ffn-hidden-size 28672
    --num-attention-heads 64
    --group-query-attention
    --num-query-groups 8
    --kv-channels 128
    --seq-length 8192
    --max-position-embeddings 8192
    --position-embedding-type rope
    --rotary-base 500000
    --normalization RMSNorm
    --norm-epsilon 1e-5
    --swiglu
    --disable-bias-linear
    --untie-embeddings-and-output-weights
    --attention-dropout 0.0
    --hidden-dropout 0.0
)
TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 128
    --train-iters 100000
    --lr 1.5e-4
    --min-lr 1.5e-5
    --lr-decay-style cosine
    --weight-decay 0.1
    --clip-grad 1.0
    --bf16
    --recompute-granularity full
    --recompute-method uniform
    --recompute-num-layers 1
    --use-distributed-optimizer
)
MODEL_PARALLEL_ARGS=(
    --tensor-model-parallel-size 4
    --sequence-parallel
    --context-parallel-size 2
    --cp-comm-type p2p
    --pipeline-model-parallel-size 4
    --num-virtual-stages-per-pipeline-rank 2
    --decoder-first-pipeline-num-layers 18
    --decoder-last-pipeline-num-layers 18
)
DATA_ARGS=(
    --tokenizer-type HuggingFaceTokenizer
    --tokenizer-model $TOKENIZER_MODEL
    --data-path $DATA_PATH
    --split 99,1,0
)
EVAL_AND_LOGGING_ARGS=(
    --log-interval 10
    --save-interval 1000
    --eval-interval 1000
    --eval-iters 10
    --save $CHECKPOINT_PATH
    --load $CHECKPOINT_PATH
)
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${MODEL_PARALLEL_ARGS[@]} \
    ${DATA_ARGS[@]} \
    ${EVAL_AND_LOGGING_ARGS[@]}
