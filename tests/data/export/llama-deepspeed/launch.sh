#!/usr/bin/env bash
# DeepSpeed launch of plan.yaml (trident export --to deepspeed)
# llama3-8b on 8 devices: dp 2 × pp 4 × tp 1, 1f1b, micro-batch 1 × 32, seq 2048
# Trident predicts 1.234 s a step.
# TRAIN_SCRIPT builds deepspeed.pipe.PipelineModule(layers, num_stages=4, ...) whose layers are the
# model's in Trident's order and whose stages start at pipeline.json's parts.
set -euo pipefail
exec deepspeed --num_nodes 1 --num_gpus 8 "${TRAIN_SCRIPT:-train.py}" --deepspeed \
  --deepspeed_config "$(dirname "$0")/ds_config.json" "$@"
